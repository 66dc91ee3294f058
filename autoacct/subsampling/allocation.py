"""Random allocation (balls-in-bins, add/remove): each record is used in exactly one of the t steps
of an epoch, chosen uniformly at random and independently of the other records.

Chua et al. (2025, "Balls-and-bins sampling for DP-SGD") and Feldman and Shenfeld (2025,
"Privacy amplification by random allocation", arXiv 2502.08202) study this scheme. For a
Gaussian base (noise multiplier sigma = s, sensitivity 1) one epoch of t adaptive steps is
dominated by the t-dimensional pair

    P = (1/t) sum_j N(e_j, s^2 I_t),   Q = N(0, s^2 I_t)

(P: the record is present, used at the uniform step J; Q: it is absent), in both directions;
the pair is attained (a record whose clipped gradient is a fixed unit vector, the others' 0).
Its likelihood ratio is R(y) = (1/t) sum_j l_j, l_j = exp((2 y_j - 1) / (2 s^2)), a monotone
function of S = sum_j X_j, X_j = exp(y_j / s^2): under Q the X_j are iid log-normal with
E[X^a] = exp(a^2 / (2 s^2)).

What is certified here (:class:`RandomAllocatedMechanism`):

* The PLD route (:mod:`autoacct.subsampling.allocation_pld`): upper laws of both directions from
  a mean-preserving spread of each l_j onto a lattice (convex order), lower laws from the
  post-processing N = sum of the l_j's cells (:class:`~autoacct.subsampling.allocation_pld.AllocationLowerPair`,
  the epoch's ``attained_parts`` and ``dominated`` pair), both by convolutions with error bounds.
  At t = 100, 10 epochs, delta = 1e-5: [1.4197, 1.4203] at s = 1.1, [1.7011, 1.7018] at s = 1.
  Unavailable where the lattice would be too long (small s, very large t).

Renyi DP (upper bounds; the fallback, and ``via="rdp"``):

* Removal direction, integer orders n: E_Q[R^n] = t^-n e^{-n / (2 s^2)} E[S^n] exactly, E[S^n]
  from the multinomial expansion over the t summands (Feldman and Shenfeld 2025, a sum over
  the partitions of n; their Corollary 6.2 in the numbering the authors' code cites),
  evaluated in log space by binary powering of the moment sequence with a running
  rounding-error bound. Orders in (1, 2]: a Taylor bound of their own
  (:mod:`~autoacct.subsampling.allocation_fractional`); other fractional orders: convexity of
  the log-moment. Every order: at most
  the Gaussian's alpha / (2 s^2) (joint convexity).
* Addition direction, E_P[(dQ/dP)^n] = E_Q[R^{1-n}], bounded by the least of
  (a) three bounds derived here (:mod:`~autoacct.subsampling.allocation_moments`:
  ``add_log_moments_taylor``, ``add_log_moments_excess``, ``add_log_moments_split``):
  R^{1-n} is at most a polynomial in R - 1, whose expectation the exact central moments of R
  give, above a split point, and below it the lower tail of R (at most that of G, the geometric
  mean of the l_j, a log-normal variable, and a Chernoff bound from the l_j's Laplace
  transform, ``lower_tail_log_bound``) is integrated against the derivative of R^{1-n};
  (b) Feldman and Shenfeld's bound e^{(n-1)/s^2} E_Q[R^{n-1}] (1/R <= mean_j 1/l_j, the
  harmonic mean being at most the arithmetic one, and (1/l_j)_j has under Q the law of
  (e^{1/s^2} l_j)_j, y -> -y being a symmetry of Q); (c) the geometric-mean bound
  exp((n-1) (1 + (n-1)/t) / (2 s^2)) (R >= G, and log G ~ N(-1/(2 s^2), 1/(t s^2)) under Q),
  valid at every real order. (b) and (c) stay above (n-1) / (2 s^2) for every t; (a) follows
  the truth at low orders (at t = 100, s = 1, order 2: 0.0172, the removal direction 0.0170;
  within 1.5 times Monte Carlo estimates of the truth up to order 12 for t >= 50), and is loose
  at high orders and for small t, where (c) takes over; (d) at every real order, the Taylor bound
  of :mod:`~autoacct.subsampling.allocation_fractional` (its remainder's factor at a split
  point, and the geometric mean's tail below it), which follows the truth for long epochs
  at a large noise multiplier up to orders near 1 / sqrt(Var R).

Lower end where there is no PLD: the sum of the epoch's t outputs is N(1, t s^2) under P and
N(0, t s^2) under Q, a post-processing of the attained pair, so the Gaussian with noise multiplier
s sqrt(t) gives certified lower bounds (:meth:`RandomAllocatedMechanism.summed_step`; far below
the upper end). Compositions of epochs also take it, composed in closed form
(``dominated_gaussian``), where it beats the cell sums composed on a capped grid.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np

from autoacct import _validation as check
from autoacct.exactness import round_up
from autoacct.mechanism import LossPart, Mechanism, Neighboring, PairRdp
from autoacct.subsampling.allocation_fractional import (
    TAYLOR_ORDERS,
    add_log_moments_fractional,
    remove_log_moments_fractional,
    tail_points,
)
from autoacct.subsampling.allocation_moments import (
    SPLIT_MAX_ORDER,
    TAYLOR_MAX_ORDER,
    add_log_moment_gm,
    add_log_moments_excess,
    add_log_moments_split,
    add_log_moments_taylor,
    central_moments,
    lower_tail_log_bound,
    remove_log_moments,
)
from autoacct.subsampling.allocation_pld import AllocationLowerPair, EpochLaws, epoch_laws
from autoacct.subsampling.base import RDP_TABLE_MAX, Sampler, SubsampledMechanism
from autoacct.subsampling.numerics import UNIT_ROUNDOFF, interpolate_log_moments
from autoacct.zoo.mechanisms import Gaussian, gaussian_rdp

#: Smallest moment table computed (the table doubles in length up to RDP_TABLE_MAX as orders ask).
_MIN_TABLE = 64
#: Noise multiplier above which an epoch's Renyi DP is its base Gaussian's, alpha / (2 sigma^2),
#: which dominates it (:meth:`RandomAllocatedMechanism.dominating`): below 1e-200 at every
#: order up to 1e8, so that even 2^52 composed epochs stay far below what a conversion to
#: (eps, delta) resolves (log(1/delta) / alpha at the largest order), while the moment bounds
#: divide by 1/(t sigma^2), which underflows to 0 near sigma = 1e154.
HUGE_SIGMA = 1e100


def _check_steps(steps: object) -> int:
    # At most 2^52 (the project's bound on integer parameters, check.INT_MAX): an epoch of
    # t steps composes its laws about log2 t times, 1.8 s at 2^52, and at 10^40 ran on past
    # 30 s; dpsgd's balls-in-bins runs reach 2^52 steps an epoch at most (q >= 2^-52).
    return check.bounded_int("steps", steps)


@dataclass(frozen=True, eq=False, repr=False)
class RandomAllocatedMechanism(SubsampledMechanism):
    """One epoch of ``steps`` runs of a Gaussian ``base``, each record used in exactly one of them.

    Add/remove relation: D' is D plus a record x. Every record of D' is allocated to one of the
    t = ``steps`` steps, uniformly and independently (balls-in-bins; Chua et al. 2025, Feldman
    and Shenfeld 2025); step j runs the base (noise multiplier sigma = 1/mu, sensitivity 1 per
    record) on the records allocated to it. The epoch is dominated by the attained pair
    (P, Q) = ((1/t) sum_j N(e_j, sigma^2 I_t), N(0, sigma^2 I_t)) (see the module's docstring,
    also for the bounds). Epochs compose: ``Composition()([m], [epochs])``.

    Routes: the PLD (certified upper laws of the epoch, :mod:`~autoacct.subsampling.allocation_pld`),
    Renyi DP (the removal direction exact at integer orders, the addition direction a proven
    upper bound) and its conversion to (epsilon, delta). Lower end: the PLD of the epoch's cell
    sums (:class:`~autoacct.subsampling.allocation_pld.AllocationLowerPair`), or where there is
    no PLD the Gaussian with noise multiplier sigma sqrt(t) (the pair restricted to the sum of
    the outputs). t = 1 is the base itself.

    Parameters
    ----------
    base:
        A Gaussian mechanism (exactly mu-GDP, mu > 0).
    steps:
        t, the number of steps of the epoch, a positive integer.
    """

    _SAMPLER = "RandomAllocation"
    _RELATION = Neighboring.ADD_REMOVE

    steps: int

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set(steps=_check_steps(self.steps))
        mu = self.base.exact_gdp_mu()
        if mu is None or not mu > 0.0 or not math.isfinite(1.0 / mu):
            raise ValueError(f"base must be a Gaussian mechanism (exactly mu-GDP with 0 < mu < inf), "
                             f"got {self.base.name!r}: RandomAllocation's pair is that of a Gaussian "
                             "on the batch sum")

    @property
    def sigma(self) -> float:
        """The base's noise multiplier 1/mu."""
        mu = self.base.exact_gdp_mu()
        assert mu is not None
        return 1.0 / mu

    def exact_gdp_mu(self) -> float | None:
        return self.base.exact_gdp_mu() if self.steps == 1 else None

    def _remove_table(self, n_max: int) -> np.ndarray:
        size = _MIN_TABLE
        while size < n_max:
            size *= 2
        size = min(size, RDP_TABLE_MAX)
        return self.cached(("remove moments", size),
                           lambda: remove_log_moments(self.steps, self.sigma, size))

    def _remove_k(self, n: int) -> float:
        """Upper bound on (n - 1) D_n(P || Q) at an integer order n >= 1."""
        if n <= RDP_TABLE_MAX:
            return float(self._remove_table(n)[n])
        # (sigma * sigma, not sigma ** 2: past sigma ~ 1e154 the square is inf, the order's
        # divergence 0, where ** raised OverflowError)
        return n * (n - 1.0) / (2.0 * self.sigma * self.sigma) * (1.0 + 4.0 * UNIT_ROUNDOFF)

    def _add_k(self, n: int) -> float:
        """Upper bound on (n - 1) D_n(Q || P) at an integer order n >= 1: the least of the
        harmonic-mean bound (n - 1) / sigma^2 + (n - 2) D_{n-1}(P || Q) and the geometric-mean one."""
        gm = float(add_log_moment_gm(self.steps, self.sigma, np.array(float(n))))
        if n - 1 > RDP_TABLE_MAX:
            return gm
        hm = ((n - 1.0) / (self.sigma * self.sigma) + self._remove_k(n - 1)) * (1.0 + 4.0 * UNIT_ROUNDOFF)
        if n > TAYLOR_MAX_ORDER:
            return min(gm, hm)
        taylor = self.cached(("add taylor",), self._add_table)
        return min(gm, hm, float(taylor[n]))

    def _add_table(self) -> np.ndarray:
        """The least of the three moment bounds of the addition direction, orders 0..TAYLOR_MAX_ORDER."""
        t, sigma = self.steps, self.sigma
        out = np.minimum(add_log_moments_taylor(t, sigma, TAYLOR_MAX_ORDER),
                         add_log_moments_excess(t, sigma, TAYLOR_MAX_ORDER))
        split = add_log_moments_split(t, sigma, SPLIT_MAX_ORDER)
        out[:SPLIT_MAX_ORDER + 1] = np.minimum(out[:SPLIT_MAX_ORDER + 1], split)
        return out

    def rdp_curve(self) -> PairRdp:
        if self.steps == 1:
            return Gaussian(self.sigma).rdp_curve()
        sigma = self.sigma
        if sigma > HUGE_SIGMA:
            def dominating_curve(alpha: np.ndarray) -> np.ndarray:
                # The base's, which dominates the epoch in both directions (dominating).
                v = gaussian_rdp(alpha, sigma)
                return np.stack([v, v])
            return dominating_curve

        def curve(alpha: np.ndarray) -> np.ndarray:
            a = np.asarray(alpha, dtype=float)

            def make() -> np.ndarray:
                # Defined above order 1 (expansions in integer orders); order 1 and below are
                # answered inf, an upper bound the routes replace by the order just above 1.
                above = a > 1.0
                b = np.where(above, a, 2.0)
                remove = interpolate_log_moments(self._remove_k, b)
                remove = np.minimum(remove, b * (1.0 + 4.0 * UNIT_ROUNDOFF) / (2.0 * sigma * sigma))
                add = interpolate_log_moments(self._add_k, b)
                gm = add_log_moment_gm(self.steps, sigma, b) / (b - 1.0)
                add = np.minimum(add, round_up(np.asarray(gm)))
                # Bounded directly (allocation_fractional): the removal direction at orders in
                # (1, 2], where the chord of K through orders 1 and 2 is up to twice the truth
                # and order 2's tables lose Var(R) to rounding for very long epochs; the
                # addition direction at every order (above 256 the tables' fallbacks are near
                # the base's (alpha - 1) / (2 sigma^2), t times the truth for long epochs).
                frac = above & (a <= 2.0)
                k_remove, k_add = (k.reshape(b.shape) for k in self._fractional(b.ravel()))
                remove = np.where(frac, np.minimum(remove, round_up(k_remove / (b - 1.0))), remove)
                add = np.minimum(add, round_up(k_add / (b - 1.0)))
                return np.where(above, np.stack([remove, add]), np.inf)
            return self.cached(("rdp", a.shape, a.tobytes()), make)
        return curve

    def _fractional(self, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Upper bounds on (a - 1) D_a(P || Q) at the orders a = min(alpha, 2) (removal) and on
        (alpha - 1) D_alpha(Q || P) (addition), alpha > 1
        (:mod:`~autoacct.subsampling.allocation_fractional`)."""
        t, sigma = self.steps, self.sigma
        mu = self.cached(("central moments",), lambda: central_moments(t, sigma, max(TAYLOR_ORDERS)))
        tail = self.cached(("tail at splits",), lambda: lower_tail_log_bound(t, sigma, tail_points()))
        return (remove_log_moments_fractional(np.minimum(alpha, 2.0), mu, tail),
                add_log_moments_fractional(alpha, mu, t, sigma))

    def _laws(self) -> EpochLaws | None:
        """The epoch's certified PLD laws (:mod:`autoacct.subsampling.allocation_pld`), or None
        for t = 1 (the base itself) and where their lattice would be too large."""
        if self.steps == 1:
            return None
        return self.cached(("epoch laws",), lambda: epoch_laws(self.steps, self.sigma))

    def loss_parts(self) -> list[LossPart] | None:
        """The Gaussian's law for t = 1; else upper laws of both directions (not ``tight``):
        the pair of the epoch's likelihood ratio with each summand spread to the ends of its
        lattice cell (a mean-preserving spread, so both profiles, convex in the ratio, are
        bounded above), with the lattice's overflow and every rounding moved to +inf."""
        if self.steps == 1:
            return super().loss_parts()
        laws = self._laws()
        return None if laws is None else [LossPart(laws.forward_upper, laws.backward_upper, 1)]

    def attained_parts(self) -> list[LossPart] | None:
        """Lower laws (``tight``) of a pair every epoch dominates (:meth:`dominated`), for the
        lower ends of compositions of epochs."""
        laws = self._laws()
        return None if laws is None else [LossPart(laws.forward_lower, laws.backward_lower, 1)]

    def brackets_own_pair(self) -> bool:
        """True: the upper laws dominate the epoch's pair and the lower laws are dominated by it
        (its cells' sum N, a post-processing), and every epoch attains that pair."""
        return True

    def summed_step(self) -> Mechanism:
        """A pair this epoch dominates, whose compositions' lower bounds are certified for the
        epoch's compositions: the epoch's outputs summed, N(1, t sigma^2) against N(0, t sigma^2),
        the Gaussian with noise multiplier sigma sqrt(t) (rounded up: a larger one is dominated,
        so is the largest float where the product overflows)."""
        return Gaussian(min(self.sigma * math.sqrt(self.steps) * (1.0 + 4.0 * UNIT_ROUNDOFF), sys.float_info.max))

    def dominated_gaussian(self) -> Mechanism:
        """The summed outputs (:meth:`summed_step`), exactly Gaussian, which compositions of
        epochs compose in closed form: 2^39 epochs of t = 2 at sigma = 1000 have eps(1e-5) >=
        1.3967e5 from them, where the cell sums' pairs composed on a capped grid gave 0.0013."""
        return self.summed_step()

    def epsilon_lower(self, delta: float) -> float:
        low = float(self.summed_step().epsilon_bounds(delta)[0])
        if self._laws() is not None:
            low = max(low, float(self.dominated().epsilon_bounds(delta)[0]))
        return low

    def delta_lower(self, eps: np.ndarray) -> np.ndarray:
        """The summed outputs' lower end on delta, as :meth:`epsilon_lower`'s on eps (the PLD
        route reads the cell sums' pair, :meth:`attained_parts`, itself)."""
        return np.asarray(self.summed_step().delta_bounds(eps)[0], dtype=float)

    def dominating(self) -> Mechanism | None:
        """The base Gaussian, which dominates the epoch (t >= 2; t = 1 is the base itself).

        The epoch's dominating pair (Feldman and Shenfeld 2025; module docstring) is
        P = (1/t) sum_j P_j, P_j = N(e_j, sigma^2 I_t), against Q = N(0, sigma^2 I_t). The
        hockey-stick divergence H_g is an f-divergence, jointly convex in its two arguments
        (Balle, Barthe and Gaboardi 2018), so for every g >= 0

            H_g(P || Q) <= (1/t) sum_j H_g(P_j || Q),   H_g(Q || P) <= (1/t) sum_j H_g(Q || P_j),

        and each (P_j, Q) is the Gaussian pair (N(1, sigma^2), N(0, sigma^2)) in the coordinate j
        times a common N(0, sigma^2 I_{t-1}) in the others, which changes no divergence. Both
        directions' profiles are thus at most the base's, under the same add/remove relation,
        so its upper bounds on eps and delta and its tradeoff curve's lower bound hold for
        the epoch. Where the epoch's own bounds are loose (small or large sigma, where only
        the RDP route answers: t = 2, sigma = 0.5, eps(1e-5) <= 10.109 against the base's
        exact 9.997) the auto policy takes the base's."""
        return self.base if self.steps > 1 else None

    def dominated(self) -> Mechanism:
        """The pair of the epoch's cell sums (:class:`AllocationLowerPair`, a post-processing
        whose masses are bounded from below), or where there is none the summed outputs."""
        if self._laws() is None:
            return self.summed_step()
        return AllocationLowerPair(self.steps, self.sigma)


@dataclass(frozen=True)
class RandomAllocation(Sampler):
    """``RandomAllocation(steps)(G)``: an epoch of ``steps`` runs of a Gaussian G, each record used
    in exactly one of them, chosen uniformly at random (balls-in-bins).

    Add/remove relation; see :class:`RandomAllocatedMechanism`. Raises ValueError naming
    ``steps`` for a bad value and naming ``base`` for a base that is not a Gaussian.
    """

    mechanism_type = RandomAllocatedMechanism

    steps: int

    def __post_init__(self) -> None:
        self._set(steps=_check_steps(self.steps))
