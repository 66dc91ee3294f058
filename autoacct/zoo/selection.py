"""Private selection: permute-and-flip (report-noisy-max with exponential noise).

Report-noisy-max with Gumbel noise is the exponential mechanism, accounted by
:class:`autoacct.zoo.ExponentialMechanism` (eps-bounded range).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from autoacct import _validation as check
from autoacct.exactness import MACHINE_EPSILON
from autoacct.mechanism import LossPart
from autoacct.zoo.mechanisms import PureDP, RandomizedResponse


@dataclass(frozen=True, eq=False, repr=False)
class PermuteAndFlip(PureDP):
    """Permute-and-flip selection (McKenna and Sheldon 2020), i.e. report-noisy-max with
    exponential noise of scale 2 Delta / eps (Ding, Kifer, Saravanan and others 2021).

    Candidates r with utilities u(D, r) of sensitivity Delta are visited in a random
    order and r is released with probability exp(eps (u(D, r) - max u) / (2 Delta)). The
    mechanism is eps-DP (McKenna and Sheldon 2020, Theorem 1): a :class:`PureDP` mechanism, dominated by
    randomized response with log-odds eps (the pure-DP pair, the only published
    dominating pair for it). That pair is not attained, so the PLD's lower bound is not
    reported; instead the lower end is that of an instance the mechanism does run: two
    candidates whose utilities (Delta, 0) swap between D and D' (a change of Delta each,
    allowed when Delta bounds every utility's change, e.g. under replace-one). The first
    is released with probability 1 - e^{-eps/2}/2 on D and e^{-eps/2}/2 on D', which is
    randomized response with log-odds log(2 e^{eps/2} - 1).

    Parameters
    ----------
    eps:
        The privacy parameter eps > 0 of the selection probabilities above.
    """

    attained = False

    def __post_init__(self) -> None:
        super().__post_init__()
        # PureDP's own check admits eps = 0; the selection probabilities need eps > 0.
        check.real("eps", self.eps, low=0.0, high=700.0, low_open=True)

    def attained_log_odds(self) -> float:
        """log(2 e^{eps/2} - 1), the log-odds of the two-candidate instance, rounded down."""
        # As log1p(2 expm1(eps / 2)), within a few roundings relatively: 2 e^{eps/2} - 1 kept
        # only an absolute ulp of 1, and the log came out above the truth by a relative
        # 2.2e-16 / eps (1.7e-4 at eps = 1e-12; above it for every eps below 0.019).
        value = math.log1p(2.0 * math.expm1(self.eps / 2.0))
        return max(0.0, value * (1.0 - 1e-14))

    def instance(self) -> RandomizedResponse | None:
        """The two-candidate instance's pair (class docstring), or None where its log-odds
        rounds to 0. One fixed pair of datasets attains it at every run."""
        return self.cached(("instance",), lambda: _rr_below(self.attained_log_odds()))

    def attained_parts(self) -> list[LossPart] | None:
        """The instance's pair, whose compositions' lower ends are those of this mechanism's
        (it was the one run's alone: 30 runs of PermuteAndFlip(0.2), eps(1e-5) >= 0.19)."""
        pair = self.instance()
        return None if pair is None else pair.loss_parts()

    def epsilon_lower(self, delta: float) -> float:
        """The certified lower end of the two-candidate instance's eps(delta)."""
        pair = self.instance()
        return 0.0 if pair is None else float(pair.epsilon_bounds(delta)[0])


#: Most steps down from the rounded truthful probability in :func:`_rr_below`.
_RR_STEPS = 64


def _rr_below(log_odds: float) -> RandomizedResponse | None:
    """Randomized response whose log-odds are at most ``log_odds`` (a lower bound on the
    instance's), or None where none above 0 is found.

    The truthful probability p = 1 / (1 + e^{-log_odds}) is a float: near 1, 1 - p keeps only an
    absolute 2^-53, so the pair's own log-odds log(p / (1 - p)) could exceed log_odds by a
    relative 2^-53 / (1 - p) (0.37 above the instance's 35.67 at eps = 69.96). p is moved down
    until :attr:`RandomizedResponse.eps0`, within 2 roundings of the pair's log-odds, plus 4
    roundings, is at most log_odds."""
    p = min(1.0 / (1.0 + math.exp(-log_odds)), math.nextafter(1.0, 0.0))
    for _ in range(_RR_STEPS):
        if p <= 0.5:
            return None
        pair = RandomizedResponse(p)
        if pair.eps0 * (1.0 + 4.0 * MACHINE_EPSILON) <= log_odds:
            return pair
        p = math.nextafter(p, 0.0)
    return None
