"""The first steps of a balls-in-bins epoch: a run that stops part-way through its last epoch.

A run of K steps of DP-SGD with balls-in-bins batches (t steps an epoch) is K // t
whole epochs and, when t does not divide K, the first r = K mod t steps of one more.
Those r steps' outputs are some of a whole epoch's, so the whole epoch dominates them
(dropping outputs is post-processing): its upper bounds hold. Its lower bounds do not:
one step of an epoch of t = 100 at sigma = 1 has eps(1e-5) = 0.19945 (the record is in
it with probability 1/t, independently of the others: a Poisson-subsampled Gaussian),
while the whole epoch's lower end is 0.62.

For the lower ends, take D' = D plus a record x whose clipped gradient is C along one
direction, every other gradient 0 (the pair a whole epoch attains). The sum of the r
outputs is N(C, r (sigma C)^2) when x was allocated to one of the r steps (probability
r/t), else N(0, r (sigma C)^2): the pair of ``PoissonSubsample(r/t)(Gaussian(sigma
sqrt(r)))``, a post-processing of the r steps, which one fixed pair of datasets attains
at every epoch (with the whole epochs' own attained pairs). The first output alone is
another such post-processing, ``PoissonSubsample(1/t)(Gaussian(sigma))``, of the same
datasets, and its lower end can be the larger: at t = 10, sigma = 0.8, eps(1e-5) of two
steps' sum is at least 1.959, of the first step 2.727. A run's own lower end takes the
larger; its compositions compose the sum.

For the upper ends (r >= 2): conditioned on the other records' allocation (joint convexity of the
hockey-stick divergence removes the mixture over it), x is in the r steps with probability
g = r/t and then uniform among them, so with (P_r, Q_r) the attained pair of an epoch of r steps
(Feldman and Shenfeld 2025) the r steps are dominated by

    removal: (A, Q_r), A = (1 - g) Q_r + g P_r;    addition: (Q_r, A),

Poisson(g) subsampling of that epoch. (It is also the whole epoch's attained pair with the
outputs of its last t - r steps dropped, the pair of the r steps on the datasets above: so it is
attained, and never looser than the whole epoch; mixing P_r with Q_r only lowers both
divergences, so ``RandomAllocation(r)`` dominates too, but is looser than the whole epoch:
t = 10, r = 2, sigma = 1, eps(1e-5) 3.697 against 2.189.) With R = dP_r/dQ_r
and e = e^eps > 0, both profiles are expectations of convex functions of R under Q_r:

    H_e(A || Q_r) = E_Q[(1 - g + g R - e)_+] = g H_e'(P_r || Q_r),   e' = (e - 1 + g) / g,

for e >= 1 - g (and 1 - e below, the largest value a pair of laws can have there), and

    H_e(Q_r || A) = E_Q[(1 - e (1 - g) - e g R)_+] = c H_b(Q_r || P_r),   c = 1 - e (1 - g),
                                                                          b = e g / c,

for c > 0 (and 0 for c <= 0: the integrand vanishes). Each is increasing in the r-step epoch's
profile of the same direction at one point e', b >= 0, so any pair whose profile in that
direction is at least the epoch's at every point >= 0 gives, subsampled the same way, a pair
whose profile is at least the subsampled one's at every e: the spread lattice laws of
:mod:`~autoacct.subsampling.allocation_pld` are such pairs, the forward law for the removal and
the backward law for the addition. Both are held as atoms (loss, mass under the first law, mass
under the second), so the subsampled pairs are atoms too
(:func:`~autoacct.subsampling.atoms.poisson_atom_losses`, which forms them from the joint masses
alone, for any base pair). A law whose profile is at least a pair's at every e > 0 dominates
it, also composed (Zhu, Dong and Wang 2022). The masses at +-inf are carried as follows.

* Removal, from the forward law (P'-masses p_i at log u_i, Q'-masses q_i = p_i / u_i, P'-mass
  p_inf at +inf). Subsampled, its atoms are ((1 - g) q_i + g p_i, q_i) at log(1 - g + g u_i)
  and g p_inf at +inf; at e >= 1 - g their profile is g times the forward law's at e', by the
  identity. Below, at e < 1 - g, the subsampled pair's profile is 1 - e, which the law reaches
  only if its laws have total mass at least 1: the Q'-mass the atoms leave out, q_0 = 1 - sum_i q_i
  (rounded up; the overflow, the lattice's dropped windows, the roundings), is put at
  L = -inf, which is the atom ((1 - g) q_0, q_0) at log(1 - g) once subsampled. It adds nothing
  at e >= 1 - g, and below the law's profile is then at least
  sum_i ((1 - g - e) q_i + g p_i) + g p_inf + (1 - g - e) q_0 >= (1 - g - e) + g = 1 - e.
* Addition, from the backward law (Q'-masses m_j at -log u_j, P'-masses m_j / u_j, Q'-mass
  b_inf at +inf: R' = 0, the overflow, the roundings). The pair (Q', (1 - g) Q' + g P') is
  :func:`~autoacct.subsampling.atoms.poisson_atom_losses`'s addition pair of the reversed base
  (P', Q') with b_inf as that base's Q-mass at L = -inf: atoms (m_j, (1 - g) m_j + g m_j / u_j)
  at -log(1 - g + g u_j), and (b_inf, (1 - g) b_inf) at -log(1 - g) (the outcomes of b_inf,
  their P'-mass taken 0). At c > 0 its profile is
  sum_j (c m_j - e g m_j / u_j)_+ + c b_inf = c (backward law's profile at b) >= c H_b(Q_r || P_r),
  the addition pair's; at c <= 0 both are 0.

The first law of each has total mass at least 1 (rounded up; mass beyond only raises
profiles), and neither is ``tight``: the lower ends are not read off them.

Lower ends (r >= 2; :func:`subsampled_lower_laws`). The r steps' pair is attained, and so is its
post-processing by N, the sum of the cells of the r-step epoch's summands
(:mod:`~autoacct.subsampling.allocation_pld`): ((1 - g) Q_N + g P_N, Q_N), Poisson(g) subsampling
of (P_N, Q_N), and a smaller rate g' <= g is dominated (the rate is rounded down). The lattice's
lower laws bound each cell n by masses p_n <= P_N(n), q_n <= Q_N(n) and a ratio
v_lo <= log(P_N(n) / Q_N(n)) <= v_hi; their sub-pairs (``EpochLaws.sub_pairs``) are atoms with both
masses at most the cell's and the ratio e^v_lo (removal) or e^v_hi (addition). For such an atom
(p', q') of a cell (P, Q), p' / q' <= P / Q, the removal's subsampled term is below the cell's at
every e >= 0: ((1 - g - e) q' + g p')_+ <= ((1 - g - e) Q + g P)_+ for e <= 1 - g (both
coefficients non-negative), and g (p' - e' q')_+ <= g (P - e' Q)_+ above (q' (r' - e') with
r' <= r, q' <= Q). For the addition, with p' / q' >= P / Q, (c q' - e g p')_+ = p' (c q' / p' - e g)_+
<= P (c Q / P - e g)_+ at c = 1 - e (1 - g) > 0, and both vanish at c <= 0. Summed over the cells,
each law's profile is at most the dominated pair's at every e >= 0, and the laws are ``tight``:
their compositions' lower ends are the run's. At t = 10, r = 2, sigma = 1,
eps(1e-5) is 1.8387 (2.1889 the whole epoch's, 1.8387 the truth); at t = 100, 0.2446 (0.6209).
The rate g is rounded up (a larger rate dominates:
:meth:`~autoacct.subsampling.poisson.PoissonSubsampledMechanism.snap`). These laws replace the
whole epoch's rather than meet them in a minimum (the least of two profiles is in general no
pair's): exactly, they are never the looser, and computed they were below at every r of
t = 3..10 at sigma = 1 and of t = 3, 5, 10 at 0.8. Where the r-step epoch has no lattice laws
(a small sigma), the whole epoch's serve; the Renyi DP, (eps, delta)-DP and Gaussian answers
still take the least.

Renyi DP (r >= 2; :meth:`PartialEpochMechanism.rdp_curve`), the least at each order of the whole
epoch's and the subsampled pair's: the removal's log E_Q[(1 - g + g R)^n] is a binomial expansion
over the r-step epoch's exact moments E_Q[R^l]; the addition's log E_Q[(1 - g + g R)^(1-n)], of a
convex decreasing function of R, is bounded through the backward law as above (the Q'-mass its
atoms leave out at R = 0, the largest value), and by Zhu and Wang (2019) and joint convexity.

r = 1: the one step is exactly ``PoissonSubsample(1/t)(Gaussian(sigma))`` (above), its upper
and lower ends both.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import partial

import numpy as np

from autoacct import _validation as check
from autoacct.exactness import round_up
from autoacct.losses.atoms import AtomLoss
from autoacct.mechanism import LossPart, Mechanism, Neighboring, PairRdp
from autoacct.subsampling.allocation import RandomAllocation
from autoacct.subsampling.allocation_pld import EpochLaws, epoch_laws
from autoacct.subsampling.atoms import poisson_atom_losses
from autoacct.subsampling.base import SubsampledRdp, base_curve, convexity_rdp
from autoacct.subsampling.numerics import UNIT_ROUNDOFF
from autoacct.subsampling.poisson import (
    PAIR_RDP_MAX_ORDER,
    PoissonSubsample,
    poisson_add_log_moments,
    poisson_rdp_bound,
)
from autoacct.zoo.mechanisms import Gaussian
from autoacct.zoo.transformers import not_attained


def rate_up(used: int, steps: int) -> float:
    """The least float at least r/t (``used`` / ``steps``)."""
    g = used / steps
    return g if Fraction(g) >= Fraction(used, steps) else math.nextafter(g, 1.0)


def rate_down(used: int, steps: int) -> float:
    """The largest float at most r/t (``used`` / ``steps``): a smaller rate's pair is dominated,
    so its lower ends are the steps' too."""
    g = used / steps
    return g if Fraction(g) <= Fraction(used, steps) else math.nextafter(g, 0.0)


def subsampled_laws(laws: EpochLaws, rate: float) -> tuple[AtomLoss, AtomLoss]:
    """The removal and addition laws of Poisson subsampling at ``rate`` g of an epoch's upper
    laws ``laws`` (module docstring): the removal's from the forward law with the Q-mass its
    atoms leave out at L = -inf, the addition's from the backward law reversed
    (:func:`reversed_backward`)."""
    f = laws.forward_upper
    # (fsum rounds the atoms' sum once, 1 - it once more: with the margin, the law's Q-masses
    # total at least 1, which its profile below log(1 - g) needs once subsampled)
    q_0 = max(1.0 - math.fsum(f.q_mass), 0.0) + 4.0 * (len(f.q_mass) + 1) * UNIT_ROUNDOFF
    forward = AtomLoss(f.key + ("Q-mass left out at -inf",), f.values, f.p_mass, f.q_mass,
                       p_inf=f.p_inf, q_ninf=q_0, tight=False)
    return poisson_atom_losses(forward, rate)[0], poisson_atom_losses(reversed_backward(laws), rate)[1]


def subsampled_lower_laws(laws: EpochLaws, rate: float) -> tuple[AtomLoss, AtomLoss]:
    """The removal and addition laws of Poisson subsampling at ``rate`` g (rounded down) of the
    sub-pairs of an epoch's lower laws (module docstring, "Lower ends"): ``tight``."""
    removal, addition = laws.sub_pairs
    return poisson_atom_losses(removal, rate)[0], poisson_atom_losses(addition, rate)[1]


def reversed_backward(laws: EpochLaws) -> AtomLoss:
    """The epoch's backward upper law as the law of log(dP'/dQ') under P' (the pair (P', Q') of
    its atoms: Q'-masses m_j at -log u_j, P'-masses m_j / u_j), with its Q'-mass at +inf as
    Q'-mass at L = -inf (the P'-mass it leaves out is left out: module docstring)."""
    b = laws.backward_upper
    return AtomLoss(b.key + ("reversed",), -b.values[::-1], b.q_mass[::-1], b.p_mass[::-1],
                    q_ninf=b.p_inf, tight=False)


@dataclass(frozen=True, eq=False, repr=False)
class PartialEpochMechanism(Mechanism):
    """The first ``used`` of the ``steps`` steps of one balls-in-bins epoch of a Gaussian with
    noise multiplier ``sigma`` (module docstring). Add/remove relation.

    Upper bounds: for r >= 2, the laws of Poisson(r/t) subsampling of the epoch of r steps
    (:func:`subsampled_laws`), or where that epoch has none the whole epoch's
    (``RandomAllocation(steps)(Gaussian(sigma))``), whose Renyi DP and (eps, delta)-DP also
    serve; lower bounds are those of the sum of the ``used`` outputs,
    ``PoissonSubsample(used / steps)`` of ``Gaussian(sigma sqrt(used))`` (the noise multiplier
    rounded up: a larger one is dominated), and of the first output. For r = 1 everything is
    the first output's, ``PoissonSubsample(1 / steps)(Gaussian(sigma))``, which is exact.

    Parameters
    ----------
    sigma:
        Noise multiplier s > 0 of each step.
    steps:
        t >= 2, the steps of the epoch.
    used:
        r, the steps run, 1 <= r < t.
    """

    sigma: float
    steps: int
    used: int

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set(sigma=check.real("sigma", self.sigma, low=0.0, low_open=True),
                  steps=check.positive_int("steps", self.steps),
                  used=check.positive_int("used", self.used))
        if not 1 <= self.used < self.steps:
            raise ValueError(f"used must lie in [1, steps - 1] = [1, {self.steps - 1}], got {self.used!r}")
        if self.neighboring is None:
            self._set(neighboring=Neighboring.ADD_REMOVE)

    def epoch(self) -> Mechanism:
        """The whole epoch, which dominates these steps."""
        return self.cached(("epoch",), lambda: RandomAllocation(self.steps)(Gaussian(self.sigma)))

    def summed(self) -> Mechanism:
        """The pair of the steps' outputs summed, which these steps dominate and one fixed pair
        of datasets attains."""
        def make() -> Mechanism:
            # (the largest float where the product overflows: a larger noise is dominated too)
            sigma = min(self.sigma * math.sqrt(self.used) * (1.0 + 4.0 * UNIT_ROUNDOFF), sys.float_info.max)
            return PoissonSubsample(rate_down(self.used, self.steps))(Gaussian(sigma))
        return self.cached(("summed",), make)

    def first_step(self) -> Mechanism:
        """The pair of the first step's output alone, which these steps dominate (module
        docstring), at the rate 1/t rounded down: its lower ends are theirs."""
        return self.cached(("first",), lambda: PoissonSubsample(rate_down(1, self.steps))(Gaussian(self.sigma)))

    def first_step_up(self) -> Mechanism:
        """The first step's pair at the rate 1/t rounded up, which dominates it: the upper ends
        of one step (r = 1)."""
        return self.cached(("first up",), lambda: PoissonSubsample(rate_up(1, self.steps))(Gaussian(self.sigma)))

    def used_laws(self) -> EpochLaws | None:
        """The upper lattice laws of an epoch of r >= 2 steps, kept with the mechanism (its laws
        and its Renyi DP read them; epoch_laws' own cache holds two epochs only), or None."""
        return self.cached(("used laws",), lambda: epoch_laws(self.used, self.sigma) if self.used >= 2 else None)

    def subsampled_parts(self) -> list[LossPart] | None:
        """The upper laws of Poisson(r/t) subsampling of the epoch of r >= 2 steps (module
        docstring), or None where that epoch has no lattice laws."""
        def make() -> list[LossPart] | None:
            laws = self.used_laws()
            if laws is None:
                return None
            return [LossPart(*subsampled_laws(laws, rate_up(self.used, self.steps)), 1)]
        return self.cached(("subsampled parts",), make)

    def loss_parts(self) -> list[LossPart] | None:
        if self.used == 1:
            # (not tight: the rate is rounded up, so the lower ends are read off first_step's)
            parts = self.first_step_up().loss_parts()
            return None if parts is None else [LossPart(not_attained(f), not_attained(b), k) for f, b, k in parts]
        # The subsampled laws, else the epoch's upper laws (t >= 2); never ``tight``: no lower
        # bound is read off them.
        parts = self.subsampled_parts() or self.epoch().loss_parts()
        assert parts is None or not any(f.tight or b.tight for f, b, _ in parts)
        return parts

    def attained_parts(self) -> list[LossPart] | None:
        """Poisson(r/t) subsampling (rate rounded down) of the sub-pairs of the r-step epoch's
        lower laws (module docstring), where that epoch has lattice laws; else the summed
        outputs' pair; for r = 1 the first step's."""
        if self.used == 1:
            return self.first_step().loss_parts()
        laws = self.used_laws()
        if laws is None:
            return self.summed().loss_parts()
        return self.cached(("subsampled lower parts",), lambda: [
            LossPart(*subsampled_lower_laws(laws, rate_down(self.used, self.steps)), 1)])

    def rdp_curve(self) -> PairRdp | None:
        """For r >= 2, at each order and in each direction the least of the whole epoch's Renyi
        DP and Poisson(r/t) subsampling's of the r-step epoch's (module docstring): for the
        removal, the exact binomial expansion over the r-step epoch's removal direction
        (:func:`~autoacct.subsampling.poisson.poisson_rdp_bound`, ``removal_only``; its joint
        convexity bound above the table); for the addition, the least of Zhu and Wang (2019,
        Theorem 6) from the larger of the r-step epoch's two directions, the integral over its
        backward law (:meth:`_subsampled_rdp`), and joint convexity,
        log(1 - g + g e^{(n-1) D_n(Q_r || P_r)}) / (n - 1)."""
        if self.used == 1:
            return self.first_step_up().rdp_curve()
        whole = self.epoch().rdp_curve()
        if whole is None:
            return None
        addition, removal, pair, g = self.cached(("subsampled rdp",), self._subsampled_rdp)

        def curve(alpha: np.ndarray) -> np.ndarray:
            a = np.asarray(alpha, dtype=float)

            def make() -> np.ndarray:
                add = np.minimum(addition(a), round_up(convexity_rdp(np.maximum(pair(a)[1], 0.0), g, a)))
                return np.minimum(whole(a), np.stack([removal(a), add]))
            return self.cached(("rdp", a.shape, a.tobytes()), make)
        return curve

    def _subsampled_rdp(self) -> tuple[SubsampledRdp, SubsampledRdp, PairRdp, float]:
        """The addition's bound and the removal's expansion over the r-step epoch's Renyi DP (each
        tabulated once), its pair curve, and the rate, for :meth:`rdp_curve`."""
        epoch = RandomAllocation(self.used)(Gaussian(self.sigma))
        pair = epoch.rdp_curve()
        assert pair is not None
        g = rate_up(self.used, self.steps)
        laws = self.used_laws()
        base = None if laws is None else reversed_backward(laws)

        def addition(curve: Callable[[np.ndarray], np.ndarray], q: float, orders: np.ndarray) -> np.ndarray:
            # Zhu and Wang's bound; up to PAIR_RDP_MAX_ORDER also log E_Q[(1 - g + g R)^(1-n)]
            # integrated over the backward law's atoms (poisson_add_log_moments): the integrand
            # is convex in R, so the lattice's spread R' bounds it, and the Q-mass its atoms leave
            # out is counted at R = 0, the integrand's largest value.
            out = np.asarray(poisson_rdp_bound(curve, q, orders), dtype=float)
            inside = orders <= PAIR_RDP_MAX_ORDER
            if base is not None and np.any(inside):
                own = poisson_add_log_moments(base, q, orders[inside]) / (orders[inside] - 1.0)
                out[inside] = np.minimum(out[inside], own)
            return out

        removal = SubsampledRdp(lambda a: np.maximum(pair(a)[0], 0.0), g, partial(poisson_rdp_bound, removal_only=True))
        return SubsampledRdp(base_curve(epoch), g, addition), removal, pair, g

    def dp_guarantee(self) -> tuple[float, float] | None:
        return (self.first_step_up() if self.used == 1 else self.epoch()).dp_guarantee()

    def epsilon_lower(self, delta: float) -> float:
        return max(float(self.summed().epsilon_bounds(delta)[0]), float(self.first_step().epsilon_bounds(delta)[0]))

    def delta_lower(self, eps: np.ndarray) -> np.ndarray:
        return np.asarray(self.summed().delta_bounds(eps)[0], dtype=float)

    def dominated(self) -> Mechanism:
        return self.summed()

    def dominating(self) -> Mechanism:
        """The Gaussian of one step, which dominates the whole epoch
        (:meth:`~autoacct.subsampling.allocation.RandomAllocatedMechanism.dominating`) and so
        these steps, a post-processing of it."""
        return self.cached(("gaussian",), lambda: Gaussian(self.sigma))
