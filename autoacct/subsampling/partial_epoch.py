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

Not used (yet) for the upper ends: conditioned on the other records' allocation (joint convexity
of the hockey-stick divergence removes the mixture over it), x is in the r steps with probability
r/t and then uniform among them, so the r steps are dominated by the pair
((1 - r/t) Q_r + (r/t) P_r, Q_r) and its reverse, (P_r, Q_r) the attained pair of an epoch of r
steps (Feldman and Shenfeld 2025): Poisson(r/t) subsampling of that epoch. Mixing P_r with Q_r
only lowers both divergences, so ``RandomAllocation(r)`` dominates too, but it is looser than the
whole epoch (t = 10, r = 2, sigma = 1: eps(1e-5) 3.697 against 2.189). The subsampled pair is far
tighter (about 1.84 there by quadrature, 0.245 at t = 100 against 0.621), but ``PoissonSubsample``
takes a base of one symmetric pair, and the epoch's laws differ in their two directions; both
subsampled profiles are convex in the epoch's likelihood ratio, so its spread lattice laws
(:mod:`~autoacct.subsampling.allocation_pld`) would bound them, once their masses at +inf are
carried through the subsampling.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np

from autoacct import _validation as check
from autoacct.mechanism import LossPart, Mechanism, Neighboring, PairRdp
from autoacct.subsampling.allocation import RandomAllocation
from autoacct.subsampling.numerics import UNIT_ROUNDOFF
from autoacct.subsampling.poisson import PoissonSubsample
from autoacct.zoo.mechanisms import Gaussian


@dataclass(frozen=True, eq=False, repr=False)
class PartialEpochMechanism(Mechanism):
    """The first ``used`` of the ``steps`` steps of one balls-in-bins epoch of a Gaussian with
    noise multiplier ``sigma`` (module docstring). Add/remove relation.

    Upper bounds are the whole epoch's (``RandomAllocation(steps)(Gaussian(sigma))``); lower
    bounds are those of the sum of the ``used`` outputs, ``PoissonSubsample(used / steps)``
    of ``Gaussian(sigma sqrt(used))`` (the noise multiplier rounded up: a larger one is
    dominated).

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
            return PoissonSubsample(self.used / self.steps)(Gaussian(sigma))
        return self.cached(("summed",), make)

    def first_step(self) -> Mechanism:
        """The pair of the first step's output alone, which these steps dominate (module docstring)."""
        return self.cached(("first",), lambda: PoissonSubsample(1.0 / self.steps)(Gaussian(self.sigma)))

    def loss_parts(self) -> list[LossPart] | None:
        # The epoch's upper laws (t >= 2), never ``tight``: no lower bound is read off them.
        parts = self.epoch().loss_parts()
        assert parts is None or not any(f.tight or b.tight for f, b, _ in parts)
        return parts

    def attained_parts(self) -> list[LossPart] | None:
        return self.summed().loss_parts()

    def rdp_curve(self) -> PairRdp | None:
        return self.epoch().rdp_curve()

    def dp_guarantee(self) -> tuple[float, float] | None:
        return self.epoch().dp_guarantee()

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
