"""Sampling without replacement (replace-one): the sample is a uniformly random subset of size q n.

Lower ends. The accounted pair is the symmetric pair whose profile is H_{e^eps}(q P +
(1 - q) Q || Q) for eps >= 0 (Zhu, Dong and Wang 2022). One run attains it, so a single
run's lower bounds are read off it; but the composition of symmetrised pairs need not be
attained by any single pair of neighbouring datasets (Lebeda, Regehr, Kamath and Steinke
2024). A composition of several runs therefore marks that pair not ``tight`` (its upper
bounds stand) and takes its lower ends from
:meth:`SampledWithoutReplacementMechanism.attained_parts`: the pair (q P + (1 - q) Q, Q),
which one fixed pair of datasets attains at every run, composed as often. The bracket is
then wider than the accountant's accuracy: at q = 0.002, a Gaussian base of noise 0.9,
20000 runs and delta 1e-6, [2.055, 2.676], where the dominating pair's own lower end
(not a bound on the mechanism) is 2.675.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mpmath as mp
import numpy as np
from numpy.typing import ArrayLike

from autoacct import _validation
from autoacct import _validation as check
from autoacct.losses import DiscreteLoss, PrivacyLoss
from autoacct.losses.atoms import AtomLoss
from autoacct.losses.binary import RandomizedResponseLoss
from autoacct.mechanism import LossPart, Mechanism, Neighboring
from autoacct.rdp_curves import max_divergence
from autoacct.subsampling.atoms import held_as_atoms, poisson_atom_losses, symmetrized_atom_loss
from autoacct.subsampling.base import RateSubsampledMechanism, Sampler
from autoacct.subsampling.numerics import (
    UNIT_ROUNDOFF,
    convexity_log_moment,
    eval_rdp,
    interpolate_log_moments,
    log1pexp,
    log_binom_table,
    log_expm1,
    lse,
    orders_needed,
)
from autoacct.subsampling.poisson import PoissonRemoveLoss, poisson_laws
from autoacct.subsampling.represented import (
    Representation,
    RepresentedLoss,
    cell_of,
    masses_on,
    previous_float,
    representation,
)


class SymmetrizedLoss(RepresentedLoss):
    """The symmetric pair (X, Y) whose profile agrees with that of a pair ``half`` for eps >= 0.

    With (A, B) the pair of ``half`` and L_h its loss, the law of the new loss L
    under X is: the law of L_h under A on (0, +inf] (so H_{e^eps}(X || Y) =
    H_{e^eps}(A || B) for eps >= 0); an atom at 0 of mass
    a0 = 1 - A(L_h > 0) - B(0 < L_h < inf) under both X and Y; and on (-inf, 0)
    the mirror image of the law of L_h under B on (0, inf). Under Y the law is
    the mirror image of the law under X, so the pair is symmetric and for
    eps < 0 its profile is 1 - e^eps + e^eps H_{e^-eps}(A || B).

    For a symmetric relation (replace-one) the privacy profile of a mechanism
    satisfies exactly that identity, so any bound on it for eps >= 0 extends to
    all eps through this pair, which is then a dominating pair.

    Raises ValueError when a0 < 0 (the positive part of ``half`` is not the
    positive part of any symmetric pair).
    """

    def __init__(self, half: PrivacyLoss) -> None:
        self.half = half
        # Its cells ask ``half`` for two sets of edges (the positive and the mirrored losses).
        self.cell_cost = 2.0 * half.cell_cost
        m_p, m_q = half.cell_masses(np.array([0.0, np.inf]))
        a0 = 1.0 - float(m_p[0]) - half.p_inf - float(m_q[0])
        if a0 < -1e-12:
            raise ValueError("the law has too much mass above 0 to be the positive part of a "
                             f"symmetric pair (atom at 0 would be {a0:.3g})")
        self.a0 = max(a0, 0.0)
        self.p_inf = half.p_inf
        self.tight = half.tight
        self.p_inf_truncated = half.p_inf_truncated
        self.q_ninf = half.p_inf
        self.has_atoms = bool(self.a0 > 0 or half.has_atoms)

    @property
    def key(self) -> tuple:
        return ("symmetrized", self.half.key)

    @property
    def atoms(self) -> tuple[np.ndarray, np.ndarray]:
        # The atom at 0, the half's atoms v > 0 under A and their mirror images -v under B
        # (B-mass e^{-v} times the A-mass); none listed where the half has atoms it does not
        # list (read through its cells only), or none at all.
        v, p = self.half.atoms
        if self.half.has_atoms and not v.size or not (self.a0 > 0 or np.any(v > 0)):
            return np.empty(0), np.empty(0)
        pos = v > 0
        values = np.concatenate((-v[pos][::-1], [0.0], v[pos]))
        masses = np.concatenate(((p[pos] * np.exp(-v[pos]))[::-1], [self.a0], p[pos]))
        keep = masses > 0
        return values[keep], masses[keep]

    @property
    def max_loss(self) -> float:
        # Its positive losses are those of ``half`` under A; the rest are at most 0.
        return max(self.half.max_loss, 0.0)

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e = np.asarray(edges, dtype=float)
        # Positive losses: the cells clipped to (0, inf). Negative losses: L in
        # (e_i, e_{i+1}] with L < 0 is s = -L in [-e_{i+1}, -e_i) with s > 0, i.e.
        # (prev(-e_{i+1}), prev(-e_i)]; without atoms the shift by one ulp is void.
        f = -e[::-1]
        g = previous_float(f) if self.half.has_atoms else f
        g = np.where(f > 0.0, g, 0.0)
        (pos_p, pos_q), (neg_p_rev, neg_q_rev) = masses_on(self.half, [np.maximum(e, 0.0), g])
        neg_p, neg_q = neg_p_rev[::-1], neg_q_rev[::-1]
        p = pos_p + neg_q
        qm = pos_q + neg_p
        if self.a0 > 0:
            i = cell_of(e, 0.0)
            if i is not None:
                p[i] += self.a0
                qm[i] += self.a0
        return p, qm

    def profile(self, eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        h = np.asarray(self.half.profile(np.abs(eps)), dtype=float)
        neg = -np.expm1(np.minimum(eps, 0.0)) + np.exp(np.minimum(eps, 0.0)) * h
        return np.clip(np.where(eps >= 0, h, neg), 0.0, 1.0)

    def quantile_range(self, eta: float) -> tuple[float, float]:
        # X(L < -b) = B(L_h > b) <= A(L_h > b) for b >= 0.
        b = max(float(self.half.quantile_range(eta)[1]), 0.0)
        return -b, b

    @property
    def _representation(self) -> Representation:
        v, mp, mq = representation(self.half)
        pos = v > 0
        values = np.concatenate((v[pos], [0.0], -v[pos]))
        p = np.concatenate((mp[pos], [self.a0], mq[pos]))
        qm = np.concatenate((mq[pos], [self.a0], mp[pos]))
        return values, p, qm


def swor_rdp_bound(rdp: Callable[[np.ndarray], np.ndarray], q: float, alpha: ArrayLike,
                   *, eps_inf: float = math.inf) -> np.ndarray:
    """Upper bound on the Renyi DP of subsampling without replacement (replace-one).

    Wang, Balle and Kasiviswanathan (2019, Theorem 9): if M is (n, eps(n))-RDP at
    every integer n >= 2 and eps(inf)-DP, then M run on a uniformly random subset of
    size m of a dataset of size N (q = m/N) satisfies, at integer n >= 2,

        (n - 1) eps'(n) <= log( 1 + q^2 C(n,2) min(4 (e^eps(2) - 1),
                                              e^eps(2) min(2, (e^eps(inf) - 1)^2))
                              + sum_{j=3}^n q^j C(n,j) e^((j-1) eps(j))
                                                   min(2, (e^eps(inf) - 1)^j) ),

    further capped by the joint-convexity bound log(1 + q (e^((n-1) eps(n)) - 1)).
    Fractional orders interpolate the integer log-moments (convex, zero at 1).

    Parameters
    ----------
    rdp:
        The base curve alpha -> eps(alpha) >= 0 under replace-one adjacency; called
        with a float array of integer orders 2, ..., ceil(max(alpha)) (or
        elementwise if it does not accept arrays).
    q:
        Sampling ratio m/N, 0 < q <= 1.
    alpha:
        Renyi order(s) > 1.
    eps_inf:
        The pure-DP epsilon eps(inf) >= 0 of M (default inf, i.e. none).

    Returns
    -------
    numpy.ndarray
        Array of alpha's shape: upper bounds on eps'(alpha).
    """
    q = _validation.real("q", q, low=0.0, high=1.0, low_open=True)
    a = _validation.real_array("alpha", alpha, low=1.0, low_open=True)
    eps_inf = _validation.real("eps_inf", eps_inf, low=0.0, allow_inf=True)
    orders = orders_needed(a)
    base = eval_rdp(rdp, orders)
    lq = math.log(q)
    log_em1_inf = float(log_expm1(np.array([eps_inf]))[0])

    def log_moment(n: int) -> float:
        k_base = (n - 1.0) * float(base[n - 2])
        conv = convexity_log_moment(q, k_base)
        eps_2 = float(base[0])
        if np.any(np.isinf(base[: n - 1])):
            return conv
        logc, logc_err = log_binom_table(float(n), n + 1)
        l2 = float(log_expm1(np.array([eps_2]))[0])
        second = min(math.log(4.0) + l2, eps_2 + min(math.log(2.0), 2.0 * log_em1_inf))
        j = np.arange(3, n + 1, dtype=float)
        higher = (j - 1.0) * base[1: n - 1] + np.minimum(math.log(2.0), j * log_em1_inf)
        terms = np.concatenate(([2.0 * lq + logc[2] + second], j * lq + logc[3:] + higher))
        log_x = lse(terms)
        if log_x == -math.inf:
            return min(0.0, conv)
        finite = np.isfinite(terms)
        ks = np.arange(2, n + 1, dtype=float)
        mag = (np.abs(logc[2:]) + ks * abs(lq) + np.abs(np.concatenate(([second], higher))) + 1.0)
        err = float(np.max((logc_err[2:] + 8.0 * UNIT_ROUNDOFF * mag)[finite])) + 2.0 * (n + 2) * UNIT_ROUNDOFF
        theorem = log1pexp(log_x + err)
        return min(theorem, conv + 4.0 * UNIT_ROUNDOFF * (conv + 1.0))

    return interpolate_log_moments(log_moment, a)


#: Highest order at which the Gaussian-specific bound is evaluated (its central moments
#: cost O(order^2) high-precision terms); above it the general bound is used.
GAUSSIAN_WOR_MAX_ORDER = 128


def gaussian_central_log_moments(sigma: float, kmax: int) -> np.ndarray:
    """log E_Q[(r - 1)^k] for k = 0..kmax (k even; odd entries are not used), r = dP/dQ of
    the Gaussian pair (N(1, sigma^2), N(0, sigma^2)), rounded up.

    E_Q[(r - 1)^k] = sum_i (-1)^(k-i) C(k, i) E_Q[r^i] with E_Q[r^i] = e^{i (i-1) / (2 sigma^2)}.
    The alternating sum cancels almost all of its digits (for sigma = 10 and k = 128 about
    200 of them), which double precision cannot hold: it is summed in mpmath, at a precision
    raised until two evaluations 20 digits apart agree to 30 digits.
    """
    dps = 50 + int(kmax * math.log10(2.0 + sigma))
    while True:
        runs = [_central_moments(sigma, kmax, dps + extra) for extra in (0, 20)]
        agree = all(b > 0 and abs(a - b) <= b * mp.mpf(10) ** -30 for a, b in zip(runs[0][2::2], runs[1][2::2]))
        if agree:
            break
        dps *= 2
    out = np.full(kmax + 1, -math.inf)
    out[0] = 0.0
    for k in range(2, kmax + 1, 2):
        lg = float(mp.log(runs[1][k]))
        out[k] = lg + 1e-12 * (1.0 + abs(lg))
    return out


def _central_moments(sigma: float, kmax: int, dps: int) -> list[Any]:
    """E_Q[(r - 1)^k], k = 0..kmax, at ``dps`` digits (the raw moments' exponentials once)."""
    with mp.workdps(dps):
        two_var = 2 * mp.mpf(sigma) ** 2
        raw = [mp.exp(i * (i - 1) / two_var) for i in range(kmax + 1)]
        out = []
        for k in range(kmax + 1):
            c, terms = mp.mpf(1), []
            for i in range(k + 1):
                terms.append(c * raw[i] if (k - i) % 2 == 0 else -c * raw[i])
                c = c * (k - i) / (i + 1)
            out.append(+mp.fsum(terms))
        return out


def swor_gaussian_rdp_bound(sigma: float, q: float, alpha: ArrayLike) -> np.ndarray:
    """Renyi DP of the Gaussian mechanism run on a sample drawn without replacement (replace-one).

    Wang, Balle and Kasiviswanathan (2019, Theorem 27, their strengthening of Theorem 9
    for the Gaussian): with eps(j) = j / (2 sigma^2) and M_k = E_Q[(r - 1)^k] (r the
    likelihood ratio of the Gaussian pair), at integer n >= 2

        (n - 1) eps'(n) <= log( 1 + q^2 C(n,2) min(4 (e^eps(2) - 1), 2 e^eps(2))
                              + sum_{j=3}^n q^j C(n,j) min(4 sqrt(M_{2 floor(j/2)} M_{2 ceil(j/2)}),
                                                           2 e^((j-1) eps(j))) ),

    capped by joint convexity; fractional orders interpolate the log-moments. Orders
    above GAUSSIAN_WOR_MAX_ORDER are not evaluated (inf there).
    """
    a = np.asarray(alpha, dtype=float)
    top = int(min(max(2, math.ceil(float(np.max(a)))), GAUSSIAN_WOR_MAX_ORDER))
    central = gaussian_central_log_moments(sigma, 2 * ((top + 1) // 2))
    lq = math.log(q)
    inv = 1.0 / (2.0 * sigma * sigma)

    def log_moment(n: int) -> float:
        if n > GAUSSIAN_WOR_MAX_ORDER:
            return math.inf
        logc, logc_err = log_binom_table(float(n), n + 1)
        eps2 = 2.0 * inv
        second = min(math.log(4.0) + float(log_expm1(np.array([eps2]))[0]), math.log(2.0) + eps2)
        j = np.arange(3, n + 1)
        lo, hi = 2 * (j // 2), 2 * ((j + 1) // 2)
        cauchy = math.log(4.0) + 0.5 * (central[lo] + central[hi])
        higher = np.minimum(cauchy, math.log(2.0) + (j - 1.0) * j * inv)
        terms = np.concatenate(([2.0 * lq + logc[2] + second], j * lq + logc[3:] + higher))
        mag = np.abs(terms) + 1.0
        err = float(np.max(logc_err[2:] + 8.0 * UNIT_ROUNDOFF * mag)) + 2.0 * (n + 2) * UNIT_ROUNDOFF
        theorem = log1pexp(lse(terms) + err)
        conv = convexity_log_moment(q, (n - 1.0) * n * inv)
        return min(theorem, conv + 4.0 * UNIT_ROUNDOFF * (conv + 1.0))

    return interpolate_log_moments(log_moment, a)


#: Binary randomized response up to this eps0 has the atom law of the other atom bases when
#: sampled without replacement (its masses are normal floats far beyond it).
_BINARY_ATOMS_EPS = 30.0


def _small_binary(loss: DiscreteLoss) -> bool:
    """Binary randomized response (PureDP, RandomizedResponse) of eps0 at most _BINARY_ATOMS_EPS.

    Its symmetrized law is three atoms, (-v, 0, v), as DiscreteLaplace(t)'s is: held so, its
    lower PLD merges them onto the lattice and its blocks merge their points
    (:mod:`autoacct.pld.merged`, :func:`autoacct.pld.levels.coarsen`), where the symmetrized
    continuous form asked for lattices past the grid's cap (q = 1e-4, eps0 = 0.5, 1e6 runs:
    3.4 s and five warnings). Its Poisson laws (the attained pair's) stay two-point pairs,
    answered by their binomial sums; beyond eps0 = 700 its masses underflow, which only its
    closed forms survive."""
    return isinstance(loss, RandomizedResponseLoss) and float(np.max(np.abs(loss.values))) <= _BINARY_ATOMS_EPS


@dataclass(frozen=True, eq=False, repr=False)
class SampledWithoutReplacementMechanism(RateSubsampledMechanism):
    """``base`` run on a uniformly random subset of fixed size q n of the n records.

    Replace-one relation. For the base's replace-one dominating pair (P, Q) the
    dominating pair is the symmetric pair with profile
    H_{e^eps}(q P + (1-q) Q || Q) at eps >= 0 (module docstring). q = 1 is the
    base itself.

    Lower ends: one run's are read off its own pair, which it attains; a
    composition of several runs reads them off :meth:`attained_parts`, a pair that
    one fixed pair of datasets attains at every run (module docstring). At
    q = 0.002, a Gaussian base of noise 0.9 and 20000 runs, epsilon(1e-6) lies
    in [2.055, 2.6758] (the dominating pair's own lower end, 2.6753, bounds that
    pair only).

    Parameters
    ----------
    base:
        Mechanism given by one symmetric dominating pair under replace-one (or
        relation-agnostic, its sensitivity then referring to replace-one), or by
        its Renyi DP only.
    q:
        Sampling ratio batch size / dataset size, 0 <= q <= 1 (q = 0 reveals nothing).
    """

    _SAMPLER = "SampleWithoutReplacement"
    _RELATION = Neighboring.REPLACE_ONE
    _RDP_BOUND = staticmethod(swor_rdp_bound)

    def attained_parts(self) -> list[LossPart] | None:
        """The pair (q P + (1 - q) Q, Q) and its reverse, for the base's pair (P, Q): attained
        at every run by one fixed pair of neighbouring datasets (None for q = 0 or 1, where
        the mechanism's own pair is attained under composition, and for a base without a PLD).

        Take D' = (y, ..., y) and D = (x, y, ..., y), n records each. A batch of D' is always
        y^m (m = q n); a batch of D is x y^(m-1) with probability q and y^m otherwise, at
        every run and independently. For a base whose pair is that of the batches
        (x y^(m-1), y^m) (a query through the count of x, scaled to the sensitivity: the
        Gaussian's and every attained (``tight``) pair's) the outputs are (q P + (1 - q) Q, Q)
        on (D, D'), and (Q, q P + (1 - q) Q) on (D', D): the Poisson-subsampled laws, flagged
        ``tight`` as the base's law is. D and D' stay fixed, so the composition of k runs
        attains the k-fold composition of this pair.
        """
        if not 0.0 < self.q < 1.0:
            return None
        loss = self._loss()
        if loss is None:
            return None
        return [LossPart(*self._poisson_laws(loss), 1)]

    def attained_step(self) -> Mechanism | None:
        """The pair of :meth:`attained_parts` as a mechanism, for a Gaussian base (None for
        other bases): ``PoissonSubsample(q)(Gaussian(1 / mu))``, mu the base's.

        Take a sum query of replace-one sensitivity 1 whose value is y on every record
        but the replaced one: x on D, y on D' with |x - y| = 1. A batch of D' always sums
        to the same value; a batch of D differs by x - y exactly when it holds the
        replaced record, with probability q. The outputs are (q N(1, s^2) + (1 - q)
        N(0, s^2), N(0, s^2)) up to a common shift (s = 1 / mu), the Poisson-subsampled
        Gaussian's pair in both directions, at every step and independently across steps
        (for DP-SGD: every other example's clipped gradient -C e, the replaced one's +C e).
        Its k-fold composition is attained by the k-step mechanism, so its lower bounds on
        epsilon(delta) and delta(epsilon) are certified for the mechanism.
        """
        mu = self.base.exact_gdp_mu()
        if mu is None or mu == 0.0:
            return None
        # Imported here: the Poisson module does not depend on this one, nor this on it at load.
        from autoacct.subsampling.poisson import PoissonSubsample  # noqa: PLC0415
        from autoacct.zoo.mechanisms import Gaussian  # noqa: PLC0415
        # 1 / mu may round below the base's noise by an ulp or two; a little more noise only
        # lowers the attained pair's epsilon, so its lower bounds stay lower bounds.
        return PoissonSubsample(self.q)(Gaussian((1.0 / mu) * (1.0 + 8.0 * UNIT_ROUNDOFF)))

    def _subsampled_parts(self, loss: PrivacyLoss) -> list[LossPart]:
        if isinstance(loss, DiscreteLoss) and (held_as_atoms(loss) or _small_binary(loss)):
            # A base held as atoms gives an atom law (see :mod:`autoacct.subsampling.atoms`).
            atoms = self.cached(("atom-law",), lambda: self._atom_law(loss))
            return [LossPart(atoms, atoms, 1)]
        law = SymmetrizedLoss(PoissonRemoveLoss(loss, self.q))
        return [LossPart(law, law, 1)]

    def _atom_law(self, loss: DiscreteLoss) -> PrivacyLoss:
        """The symmetrized removal law of a base held as atoms, as an atom law (for binary
        randomized response, from its removal atoms, its own Poisson laws kept as they are)."""
        half = self._poisson_laws(loss)[0]
        if not isinstance(half, AtomLoss):
            half = poisson_atom_losses(loss, self.q)[0]
        return symmetrized_atom_loss(half, SymmetrizedLoss(PoissonRemoveLoss(loss, self.q)))

    def _poisson_laws(self, loss: PrivacyLoss) -> tuple[PrivacyLoss, PrivacyLoss]:
        """The removal and addition laws of the pair (q P + (1 - q) Q, Q), atom laws for a
        base held as atoms (:mod:`autoacct.subsampling.atoms`)."""
        def make() -> tuple[PrivacyLoss, PrivacyLoss]:
            removal, addition = poisson_laws(loss, self.q)
            if isinstance(loss, DiscreteLoss) and held_as_atoms(loss):
                return poisson_atom_losses(loss, self.q, (removal, addition))
            return removal, addition
        return self.cached(("poisson-laws",), make)

    def _rdp_bound(self) -> Callable[..., np.ndarray]:
        mu = self.base.exact_gdp_mu()
        if mu is None or mu == 0.0:
            # Theorem 9's terms shrink with the base's pure-DP epsilon where it has one.
            return functools.partial(swor_rdp_bound, eps_inf=max_divergence(self.base))
        sigma = 1.0 / mu

        def bound(rdp: Callable[[np.ndarray], np.ndarray], q: float, alpha: ArrayLike) -> np.ndarray:
            # Both bounds are valid; the Gaussian one is the tighter where it is evaluated.
            general = np.asarray(swor_rdp_bound(rdp, q, alpha), dtype=float)
            return np.minimum(general, swor_gaussian_rdp_bound(sigma, q, alpha))
        return bound


@dataclass(frozen=True)
class SampleWithoutReplacement(Sampler):
    """``SampleWithoutReplacement(q)(M)``: M on a uniformly random subset of q n of the n records.

    Replace-one relation; see :class:`SampledWithoutReplacementMechanism`.
    Raises ValueError naming ``q`` for q outside [0, 1] and naming
    ``mechanism`` for an add/remove mechanism or one that is not a single
    dominating pair.
    """

    mechanism_type = SampledWithoutReplacementMechanism

    q: float

    def __post_init__(self) -> None:
        self._set(q=check.real("q", self.q, low=0.0, high=1.0))
