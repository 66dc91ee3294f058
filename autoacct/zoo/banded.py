"""Banded matrix factorization (DP-BandMF) with cyclic Poisson sampling, reduced to DP-SGD.

Choquette-Choo, Ganesh, McKenna, McMahan, Rush, Thakurta and Xu (2023), "(Amplified) Banded
Matrix Factorization: A unified approach to private training" (NeurIPS 2023): a b-banded
strategy matrix run with b-min-sep (cyclic Poisson) sampling has the privacy of DP-SGD run for
ceil(n / b) steps (their Section 4, Theorem 4), and without sampling it is a Gaussian mechanism
whose sensitivity is the root of a sum of squared column norms (their sensitivity of b-banded
matrices under b-min-sep participation). The mechanism is accounted as that DP-SGD run, built
from the library's own Gaussian, Poisson subsampling and composition.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from autoacct import _validation as check
from autoacct.mechanism import LossPart, Mechanism, Neighboring, PairRdp
from autoacct.subsampling import PoissonSubsample
from autoacct.zoo.mechanisms import Gaussian
from autoacct.zoo.transformers import Composition

__all__ = ["BandedMatrixFactorization"]


@dataclass(frozen=True, eq=False, repr=False)
class BandedMatrixFactorization(Mechanism):
    """DP-BandMF: correlated-noise DP-FTRL/SGD with a b-banded strategy matrix and cyclic sampling.

    The mechanism (Choquette-Choo et al. 2023, Algorithm 1 with their b-min-sep sampling)
    releases, over n = ``steps`` steps, C X + Z: X stacks the n per-step sums of clipped
    per-record contributions (one record moves one row by a vector of norm at most zeta),
    C is an n x n lower-triangular b-banded strategy matrix (C_ij = 0 unless
    0 <= i - j < b, b = ``bands``) whose columns have norm at most kappa =
    ``max_column_norm``, and Z has independent N(0, sigma^2 zeta^2) entries, sigma =
    ``noise_multiplier``. The records are split into b fixed partitions D_0, ..., D_{b-1}
    (how the others are split does not depend on the record added or removed); step i
    uses only D_{i mod b}, keeping each of its records independently with probability
    q = ``sampling_rate``. A record thus takes part only in the steps of one residue
    class mod b, at most k = ceil(n / b) of them, at least b steps apart.

    Reduction (Choquette-Choo et al. 2023, Section 4, Theorem 4, for columns of norm at
    most 1): the release satisfies every privacy guarantee that DP-SGD satisfies with
    Poisson sampling at rate q and noise multiplier sigma, run for ceil(n / b) steps;
    here C / kappa has columns of norm at most 1 and C X + Z = kappa ((C / kappa) X + Z / kappa),
    so the noise multiplier is sigma / kappa. The mechanism is therefore accounted as
    exactly ``Composition()([PoissonSubsample(q)(Gaussian(sigma / kappa))], [ceil(n / b)])``
    (``reduction``), under add/remove of one record, and every route (exact, PLD, phi, RDP)
    answers through it. The idea of their proof: C being b-banded, the rows that see a step
    j of the record's residue class are rows j, ..., j + b - 1, which see no other step of
    it, so each of its ceil(n / b) chances to be sampled is one subsampled Gaussian release
    of C's column j (norm at most kappa), composed adaptively.

    q = 1 is the mechanism without amplification (every record of a partition in each of
    its steps; more generally any participation with at least b steps between a record's
    uses): C X + Z is then a Gaussian mechanism whose L2 sensitivity for a b-banded C is
    the largest sqrt(sum_{i in pi} ||C e_i||^2) over participation patterns pi (the columns
    a pattern selects have disjoint supports; Choquette-Choo et al. 2023, sensitivity of
    b-banded matrices), at most kappa sqrt(k); so it is mu-GDP (exactly for C = kappa I) with
    mu = kappa sqrt(ceil(n / b)) / sigma, under whichever relation zeta refers to (as for
    ``TreeAggregation``: no relation is declared).

    The bounds are those of the class: C = kappa I (1-banded, hence b-banded) attains the
    reduction, so ``lower`` ends are lower bounds on the worst strategy matrix of the class,
    not on a particular C whose columns are shorter.

    Parameters
    ----------
    noise_multiplier:
        sigma: the std of each entry of Z over zeta, the largest norm of one record's
        contribution to one step's sum (the clip norm under add/remove), > 0.
    steps:
        n, the number of steps (rows and columns of C), >= 1.
    bands:
        b, the number of partitions (cycle length) and the number of bands C may have
        (a matrix with fewer bands is also b-banded), >= 1. ``bands = 1`` is DP-SGD.
    sampling_rate:
        q, the probability with which each record of the partition in use joins a step's
        batch, relative to that partition (expected batch size q |D| / b), in [0, 1];
        1 (default): no sampling.
    max_column_norm:
        kappa, an upper bound on the L2 norms of C's columns, > 0 (1 for a strategy
        matrix normalised to sensitivity 1 in one participation).
    """

    noise_multiplier: float
    steps: int
    bands: int
    sampling_rate: float = 1.0
    max_column_norm: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        sigma = check.real("noise_multiplier", self.noise_multiplier, low=0.0, low_open=True)
        n = check.bounded_int("steps", self.steps)
        b = check.bounded_int("bands", self.bands)
        q = check.real("sampling_rate", self.sampling_rate, low=0.0, high=1.0)
        kappa = check.real("max_column_norm", self.max_column_norm, low=0.0, low_open=True)
        # The reduction's Gaussian needs a noise multiplier whose mu = 1 / (sigma / kappa) is a
        # finite float, and the composed mu = sqrt(k) kappa / sigma must be one too.
        ratio = sigma / kappa
        if not ratio >= 1e-300 or not math.isfinite(math.sqrt(-(-n // b)) / ratio):
            raise ValueError(f"noise_multiplier / max_column_norm = {sigma!r} / {kappa!r} is too small "
                             "(the mechanism's mu is not a finite float); increase noise_multiplier")
        if not math.isfinite(ratio):
            raise ValueError(f"noise_multiplier / max_column_norm = {sigma!r} / {kappa!r} is not a finite "
                             "float; increase max_column_norm")
        relation = self.neighboring
        if q < 1.0:
            # Poisson subsampling's pairs are those of add/remove (the record joins or leaves
            # its partition); replace-one would need another analysis.
            if relation is Neighboring.REPLACE_ONE:
                raise ValueError(f"neighboring must be add/remove when sampling_rate < 1 (Poisson "
                                 f"sampling), got {relation.value!r} at sampling_rate={q!r}")
            relation = Neighboring.ADD_REMOVE
        self._set(noise_multiplier=sigma, steps=n, bands=b, sampling_rate=q, max_column_norm=kappa,
                  neighboring=relation)
        # Built now, so that whatever it could refuse is refused at construction.
        self.cached(("reduction",), self._reduce)

    @property
    def participations(self) -> int:
        """k = ceil(steps / bands): the most steps one record can take part in (exact integers)."""
        return -(-self.steps // self.bands)

    @property
    def reduction(self) -> Mechanism:
        """The DP-SGD run of the reduction: ``participations`` runs of the Gaussian with noise
        multiplier sigma / kappa, Poisson-subsampled at rate q when q < 1."""
        return self.cached(("reduction",), self._reduce)

    def _reduce(self) -> Mechanism:
        step: Mechanism = Gaussian(self.noise_multiplier / self.max_column_norm)
        if self.sampling_rate < 1.0:
            step = PoissonSubsample(self.sampling_rate)(step)
        return Composition()([step], [self.participations])

    # Every hook is the reduction's, so every route answers for the DP-SGD run of the theorem.
    def exact_gdp_mu(self) -> float | None:
        return self.reduction.exact_gdp_mu()

    def loss_parts(self) -> list[LossPart] | None:
        return self.reduction.loss_parts()

    def attained_parts(self) -> list[LossPart] | None:
        return self.reduction.attained_parts()

    def rdp_curve(self) -> PairRdp | None:
        return self.reduction.rdp_curve()

    def dp_guarantee(self) -> tuple[float, float] | None:
        return self.reduction.dp_guarantee()

    def epsilon_lower(self, delta: float) -> float | None:
        return self.reduction.epsilon_lower(delta)
