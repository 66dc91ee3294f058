"""Poisson subsampling (add/remove): each record joins the sample independently with probability q.

Dominating pairs, for the base pair (P, Q): removal ((1-q) Q + q P, Q), addition
(Q, (1-q) Q + q P) (Zhu, Dong and Wang 2022; Koskela, Jalko and Honkela 2020 for the
Gaussian). Renyi DP: exact for a Gaussian base (Mironov, Talwar and Zhang 2019),
Zhu and Wang (2019, Theorem 6) for other bases.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike

from autoacct import _validation
from autoacct import _validation as check
from autoacct.grouping import snap_value
from autoacct.losses import PROFILE_REL, DiscreteLoss, PrivacyLoss
from autoacct.losses.binary import TwoPoint
from autoacct.mechanism import LossPart, Mechanism, Neighboring
from autoacct.subsampling.atoms import held_as_atoms, poisson_atom_losses
from autoacct.subsampling.base import RateSubsampledMechanism, Sampler
from autoacct.subsampling.numerics import (
    UNIT_ROUNDOFF,
    convexity_log_moment,
    eval_rdp,
    interpolate_log_moments,
    log1p_q_expm1_up,
    log1pexp,
    log_binom_table,
    log_expm1,
    lse,
    orders_needed,
)
from autoacct.subsampling.represented import (
    PoissonLossMap,
    Representation,
    RepresentedLoss,
    cell_of,
    check_q,
    masses_between,
    moments_of,
    previous_float,
    representation,
)


def base_profile_error(base: PrivacyLoss, x: np.ndarray, log_q: float) -> np.ndarray:
    """A bound on the error of ``base.profile`` at an argument ``x`` computed by
    :meth:`PoissonLossMap.inverse` (0 where x is not finite): the base's own rounding bound,
    plus the profile's change over the few roundoffs by which x itself is off. Those are
    roundoffs of the largest term summed, |x| or |log q| (the profile is monotone, so its
    change between x - d and x + d bounds the error; near the end of a support it is far
    larger than a relative error of the value)."""
    x = np.asarray(x, dtype=float)
    ok = np.isfinite(x)
    safe = np.where(ok, x, 0.0)
    d = 8.0 * UNIT_ROUNDOFF * (np.abs(safe) + abs(log_q) + 1.0)
    # Both ends in one call (the base's profile is elementwise).
    n = safe.size
    value, error = base.profile_with_error(np.concatenate(((safe - d).ravel(), (safe + d).ravel())))
    spread = np.abs(value[:n] - value[n:]).reshape(safe.shape)
    own = np.maximum(error[:n], error[n:]).reshape(safe.shape)
    return np.where(ok, spread + own, 0.0)


def _rounded_up(x: float) -> float:
    """``x`` moved up by more than the few roundings of log1p and expm1 that made it (a
    larger max_loss only keeps the upper profile's floor further right: safe)."""
    return x + 1e-14 * abs(x) + 1e-300 if math.isfinite(x) else x


class PoissonRemoveLoss(RepresentedLoss):
    """Loss of the pair ((1-q) Q + q P, Q) for a base pair (P, Q) with loss L.

    The loss is phi(L) = log(1 - q + q e^L), increasing in L. Under the first
    distribution its law is (1-q) (law of phi(L) under Q) + q (law of phi(L)
    under P); under Q it is the law of phi(L) under Q. The base atom L = -inf
    (Q-mass ``q_ninf``) becomes the finite atom log(1-q) with masses
    ((1-q) q_ninf, q_ninf); the base atom L = +inf keeps its place with P-mass
    q p_inf.

    Parameters
    ----------
    base:
        Law of L = log(dP/dQ); cell masses and profile hold for any pair, the
        quantile range assumes a symmetric one (the law of L under P equals the
        law of -L under Q).
    q:
        Sampling probability, 0 < q < 1.
    """

    def __init__(self, base: PrivacyLoss, q: float) -> None:
        self.base = base
        self.cell_cost = base.cell_cost
        self.q = check_q(q)
        self._phi = PoissonLossMap(self.q)
        self.p_inf = self.q * base.p_inf
        self.p_inf_truncated = self.q * base.p_inf_truncated
        self.q_ninf = 0.0
        self.has_atoms = bool(base.has_atoms or base.q_ninf > 0)
        # The profile below is the base's at a transformed point, times a factor.
        self.exact_profile = base.exact_profile
        # Subsampling a pair no mechanism attains gives a pair no mechanism attains: a lower
        # bound read off it would be one on the dominating pair only.
        self.tight = base.tight

    @property
    def key(self) -> tuple:
        return ("poisson-remove", self.q, self.base.key)

    @property
    def atoms(self) -> tuple[np.ndarray, np.ndarray]:
        # A base without atoms gives one: its mass at -inf moved to log(1 - q) (see above).
        # Where the base has atoms of its own they are read through the cells, not listed.
        if self.base.has_atoms or self.base.q_ninf <= 0.0:
            return super().atoms
        return np.array([math.log1p(-self.q)]), np.array([(1.0 - self.q) * self.base.q_ninf])

    def two_point(self) -> TwoPoint | None:
        """The pair ((1-q) Q + q P, Q) of a two-outcome base pair (P, Q)."""
        base = self.base.two_point()
        return None if base is None else base.subsampled(self.q, remove=True)

    def reverses(self, other: PrivacyLoss) -> bool:
        """The addition pair (Q, (1-q) Q + q P) of the same base and q reverses this one."""
        return isinstance(other, PoissonAddLoss) and other.reverses(self)

    @property
    def max_loss(self) -> float:
        """log(1 - q + q e^M) for the base's M, phi being increasing (rounded up)."""
        m = self.base.max_loss
        return _rounded_up(log1p_q_expm1_up(self.q, m))

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e = np.asarray(edges, dtype=float)
        t = np.maximum.accumulate(self._phi.inverse(e, increasing=True))
        # masses_between returns arrays of this call's own: the first-distribution masses
        # (1-q) m_q + q m_p are formed in them, and the Q-masses are returned as they are.
        m_p, qm = masses_between(self.base, t)
        p = np.multiply(qm, 1.0 - self.q)
        m_p *= self.q
        p += m_p
        if self.base.q_ninf > 0:
            i = cell_of(e, self._phi.c)
            if i is not None:
                p[i] += (1.0 - self.q) * self.base.q_ninf
                qm[i] += self.base.q_ninf
        return p, qm

    def profile(self, eps: np.ndarray) -> np.ndarray:
        """H_{e^eps} = q H_{gamma}(P || Q) with gamma = 1 + (e^eps - 1)/q, i.e. log gamma = phi^{-1}(eps).

        Where e^eps <= 1 - q the first distribution exceeds e^eps Q everywhere
        and the value is 1 - e^eps.
        """
        eps = np.asarray(eps, dtype=float)
        return self._profile_at(eps, self._phi.inverse(eps))

    def _profile_at(self, eps: np.ndarray, inner: np.ndarray) -> np.ndarray:
        """:meth:`profile` at ``eps``, with ``inner`` = phi^{-1}(eps)."""
        big = np.isfinite(inner) | (inner == np.inf)
        safe = np.where(np.isfinite(inner), inner, 0.0)
        val = self.q * np.asarray(self.base.profile(safe), dtype=float)
        val = np.where(inner == np.inf, self.p_inf, val)
        low = -np.expm1(np.minimum(eps, 0.0))
        return np.clip(np.where(big, val, low), 0.0, 1.0)

    def profile_error(self, eps: np.ndarray) -> np.ndarray:
        """q times the base's error at the transformed point (:func:`base_profile_error`), plus
        a few roundoffs of the value (the product)."""
        return self.profile_with_error(eps)[1]

    def profile_with_error(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        eps = np.asarray(eps, dtype=float)
        inner = self._phi.inverse(eps)
        value = self._profile_at(eps, inner)
        return value, self.q * base_profile_error(self.base, inner, self._phi.log_q) + PROFILE_REL * value

    def _base_range(self, eta: float) -> tuple[float, float]:
        """An interval holding L under P and under Q up to eta on each side (symmetric base)."""
        a, b = self.base.quantile_range(eta)
        return min(a, -b), max(b, -a)

    def quantile_range(self, eta: float) -> tuple[float, float]:
        lo, hi = self._base_range(eta)
        phi = self._phi.forward(np.array([lo, hi]))
        a = self._phi.c if self.base.q_ninf > 0 else float(phi[0])
        return a, float(phi[1])

    @cached_property
    def moments(self) -> tuple[float, float]:
        return self.pair_moments[0]

    @cached_property
    def pair_moments(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """The moments of this law and of the addition law of the same base and q, from one
        representation: the addition law's is this one's with every value negated and the P-
        and Q-masses swapped (compare the two ``_representation``), and negation is exact, so
        both are the moments each law would get from its own."""
        values, p, qm = self._representation
        return moments_of((values, p, qm)), moments_of((-values, qm, p))

    @property
    def _representation(self) -> Representation:
        v, mp, mq = representation(self.base)
        values = self._phi.forward(v)
        p = (1.0 - self.q) * mq + self.q * mp
        qm = mq
        if self.base.q_ninf > 0:
            values = np.append(values, self._phi.c)
            p = np.append(p, (1.0 - self.q) * self.base.q_ninf)
            qm = np.append(qm, self.base.q_ninf)
        return values, p, qm


class PoissonAddLoss(RepresentedLoss):
    """Loss of the pair (Q, (1-q) Q + q P) for a symmetric base pair (P, Q) with loss L.

    The loss is -phi(L), decreasing in L: a cell (a, b] of it is the set of L in
    [phi^{-1}(-b), phi^{-1}(-a)). Its law under Q is the law of -phi(L) under Q,
    and under the mixture (1-q) (law under Q) + q (law under P). The base atom
    L = +inf becomes -inf (Q-side mass q p_inf); L = -inf becomes the finite atom
    -log(1-q) with masses (q_ninf, (1-q) q_ninf).

    Parameters
    ----------
    base:
        Law of L = log(dP/dQ); its pair must be symmetric (the law of L under P
        equals the law of -L under Q), as for every single-part zoo mechanism.
    q:
        Sampling probability, 0 < q < 1.
    removal:
        Optionally the removal law of the same ``base`` object and q (see
        :func:`poisson_laws`), whose representation then gives this law's moments.
    """

    def __init__(self, base: PrivacyLoss, q: float, removal: PoissonRemoveLoss | None = None) -> None:
        self.base = base
        self.cell_cost = base.cell_cost
        self.q = check_q(q)
        self._phi = PoissonLossMap(self.q)
        #: The removal law of this very base and q, if given: its representation gives this
        #: law's moments too (:attr:`PoissonRemoveLoss.pair_moments`).
        self._removal = removal if removal is not None and removal.base is base and removal.q == self.q else None
        self.p_inf = 0.0
        self.q_ninf = self.q * base.p_inf
        # The profile below reads H_beta(Q || P) as H_beta(P || Q), which counts the base's
        # truncated tails (P-mass moved to +inf), times 1 - (1-q) e^eps <= q at eps >= 0: a
        # lower bound leaves that out (a discrete Gaussian at q = 1 - 1e-7 had delta(10) >=
        # 1.9e-49 from its tails, the truth 1.2e-73).
        self.profile_truncated = self.q * base.p_inf_truncated
        self.has_atoms = bool(base.has_atoms or base.q_ninf > 0)
        # The profile below is the base's at a transformed point, times a factor.
        self.exact_profile = base.exact_profile
        # Subsampling a pair no mechanism attains gives a pair no mechanism attains: a lower
        # bound read off it would be one on the dominating pair only.
        self.tight = base.tight

    @property
    def key(self) -> tuple:
        return ("poisson-add", self.q, self.base.key)

    def two_point(self) -> TwoPoint | None:
        """The pair (Q, (1-q) Q + q P) of a two-outcome base pair (P, Q)."""
        base = self.base.two_point()
        return None if base is None else base.subsampled(self.q, remove=False)

    def reverses(self, other: PrivacyLoss) -> bool:
        """This is the pair (Q, (1-q) Q + q P), the reverse of the removal pair ((1-q) Q + q P, Q)
        of the same base and q: its cell masses are the removal pair's, swapped, for any base."""
        return (isinstance(other, PoissonRemoveLoss) and other.q == self.q
                and type(other.base) is type(self.base) and other.base.key == self.base.key)

    @property
    def max_loss(self) -> float:
        """-log(1 - q + q e^{-M}) for the base's M: -phi is decreasing and the symmetric base's
        smallest loss under Q is -M (-log(1 - q), the atom of L = -inf, for M = inf)."""
        m = self.base.max_loss
        return _rounded_up(-math.log1p(self.q * math.expm1(-m))) if m >= -700.0 else math.inf

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e = np.asarray(edges, dtype=float)
        # -e decreases: its reversal is inverted, as increasing edges.
        r = np.maximum.accumulate(self._phi.inverse(-e[::-1], increasing=True))
        m_p_rev, m_q_rev = masses_between(self.base, previous_float(r))
        m_p, m_q = m_p_rev[::-1], m_q_rev[::-1]
        p = m_q.copy()
        qm = (1.0 - self.q) * m_q + self.q * m_p
        if self.base.q_ninf > 0:
            i = cell_of(e, -self._phi.c)
            if i is not None:
                p[i] += self.base.q_ninf
                qm[i] += (1.0 - self.q) * self.base.q_ninf
        return p, qm

    def profile(self, eps: np.ndarray) -> np.ndarray:
        """H_{e^eps}(Q || (1-q) Q + q P) = (1 - (1-q) e^eps) H_beta(P || Q), 0 once (1-q) e^eps >= 1.

        Here log beta = -phi^{-1}(-eps), and H_beta(Q || P) = H_beta(P || Q)
        because the base pair is symmetric.
        """
        eps = np.asarray(eps, dtype=float)
        return self._profile_at(eps, self._phi.inverse(-eps))

    def _profile_at(self, eps: np.ndarray, inner: np.ndarray) -> np.ndarray:
        """:meth:`profile` at ``eps``, with ``inner`` = phi^{-1}(-eps)."""
        log_c = np.log(-np.expm1(np.minimum(eps + self._phi.c, -1e-300)))
        alive = (eps + self._phi.c < 0) & np.isfinite(inner)
        arg = np.where(alive, -inner, 0.0)
        val = np.exp(log_c) * np.asarray(self.base.profile(arg), dtype=float)
        return np.clip(np.where(alive, val, 0.0), 0.0, 1.0)

    def profile_error(self, eps: np.ndarray) -> np.ndarray:
        """The base's error at the transformed point (:func:`base_profile_error`) times the
        factor (at most 1), plus a few roundoffs of the value."""
        return self.profile_with_error(eps)[1]

    def profile_with_error(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        eps = np.asarray(eps, dtype=float)
        inner = self._phi.inverse(-eps)
        value = self._profile_at(eps, inner)
        factor = -np.expm1(np.minimum(eps + self._phi.c, 0.0))
        arg = np.where(eps + self._phi.c < 0, -inner, np.nan)
        return value, factor * base_profile_error(self.base, arg, self._phi.log_q) + PROFILE_REL * value

    def quantile_range(self, eta: float) -> tuple[float, float]:
        a, b = self.base.quantile_range(eta)
        lo, hi = min(a, -b), max(b, -a)
        phi = self._phi.forward(np.array([lo, hi]))
        top = -self._phi.c if self.base.q_ninf > 0 else float(-phi[0])
        return float(-phi[1]), top

    @cached_property
    def moments(self) -> tuple[float, float]:
        if self._removal is not None:
            return self._removal.pair_moments[1]
        return moments_of(self._representation)

    @property
    def _representation(self) -> Representation:
        v, mp, mq = representation(self.base)
        values = -self._phi.forward(v)
        p = mq
        qm = (1.0 - self.q) * mq + self.q * mp
        if self.base.q_ninf > 0:
            values = np.append(values, -self._phi.c)
            p = np.append(p, self.base.q_ninf)
            qm = np.append(qm, (1.0 - self.q) * self.base.q_ninf)
        return values, p, qm


def poisson_laws(base: PrivacyLoss, q: float) -> tuple[PoissonRemoveLoss, PoissonAddLoss]:
    """The removal and addition laws of Poisson subsampling at rate q from ``base``, paired so
    that one representation gives the moments of both."""
    removal = PoissonRemoveLoss(base, q)
    return removal, PoissonAddLoss(base, q, removal)


def poisson_rdp_bound(rdp: Callable[[np.ndarray], np.ndarray], q: float,
                      alpha: ArrayLike, *, removal_only: bool = False) -> np.ndarray:
    """Upper bound on the Renyi DP of a Poisson-subsampled mechanism (add/remove).

    Zhu and Wang (2019, Theorem 6): if the base mechanism M is (n, eps(n))-RDP at
    every integer n >= 2, then M applied to a Poisson sample with rate q satisfies,
    at integer n >= 2,

        (n - 1) eps'(n) <= log( (1-q)^(n-1) (1 + (n-1) q)
                                + C(n,2) q^2 (1-q)^(n-2) e^(eps(2))
                                + 3 sum_{l=3}^n C(n,l) q^l (1-q)^(n-l) e^((l-1) eps(l)) ).

    It is evaluated as log(1 + sum_{l>=2} C(n,l) q^l (1-q)^(n-l) (c_l e^((l-1)eps(l)) - 1))
    (c_2 = 1, c_l = 3), whose terms are non-negative, so small q loses no digits.
    With ``removal_only`` every c_l is 1: the expression is then the exact log-moment
    E_Q[(1 - q + q dP/dQ)^n] of the removal direction alone (binomial expansion, with
    E_Q[(dP/dQ)^l] = e^{(l-1) eps(l)}), an upper bound for that direction only.
    The result is also capped by the joint-convexity bound
    log(1 + q (e^((n-1) eps(n)) - 1)). Fractional orders interpolate the integer
    log-moments (convex in alpha, zero at alpha = 1).

    Parameters
    ----------
    rdp:
        The base curve alpha -> eps(alpha) >= 0 (Renyi DP of M at order alpha,
        add/remove adjacency); called with a float array of integer orders
        2, 3, ..., ceil(max(alpha)), or elementwise if it does not accept arrays.
    q:
        Sampling probability, 0 < q <= 1.
    alpha:
        Renyi order(s) > 1.

    Returns
    -------
    numpy.ndarray
        Array of alpha's shape: upper bounds on eps'(alpha) (inf where the base
        curve is infinite at an order that enters).
    """
    q = _validation.real("q", q, low=0.0, high=1.0, low_open=True)
    a = _validation.real_array("alpha", alpha, low=1.0, low_open=True)
    orders = orders_needed(a)
    base = eval_rdp(rdp, orders)
    lq = math.log(q)
    l1q = math.log1p(-q) if q < 1.0 else -math.inf

    def log_moment(n: int) -> float:
        l_ = np.arange(2, n + 1, dtype=float)
        eps_l = base[: n - 1]
        if np.any(np.isinf(eps_l)):
            return math.inf
        logc, logc_err = log_binom_table(float(n), n + 1)
        logc, logc_err = logc[2:], logc_err[2:]
        inner = (l_ - 1.0) * eps_l + (0.0 if removal_only else np.where(l_ >= 3.0, math.log(3.0), 0.0))
        lg = log_expm1(inner)
        with np.errstate(invalid="ignore"):
            part_1q = np.where(l_ == n, 0.0, (n - l_) * l1q)
        part_q = l_ * lq
        terms = logc + part_q + part_1q + lg
        log_m1 = lse(terms)
        k_base = (n - 1.0) * float(base[n - 2])
        conv = convexity_log_moment(q, k_base)
        if log_m1 == -math.inf:
            return min(0.0, conv)
        finite = np.isfinite(terms)
        mag = (np.abs(logc) + np.abs(part_q) + np.abs(part_1q) + np.abs(lg) + inner + 1.0)[finite]
        err = float(np.max(logc_err[finite] + 8.0 * UNIT_ROUNDOFF * mag)) + 2.0 * (n + 2) * UNIT_ROUNDOFF
        theorem = log1pexp(log_m1 + err)
        return min(theorem, conv + 4.0 * UNIT_ROUNDOFF * (conv + 1.0))

    return interpolate_log_moments(log_moment, a)


#: Cells of the base law on which the addition direction's Renyi divergence is integrated.
ADD_RDP_CELLS = 4096
#: Highest order at which the pair's own Renyi divergence is computed (above it the
#: general bound, whose cost does not grow with the order, is used).
PAIR_RDP_MAX_ORDER = 256


def poisson_add_log_moments(loss: PrivacyLoss, q: float, orders: np.ndarray) -> np.ndarray:
    """Upper bounds on (n - 1) D_n(Q || (1-q) Q + q P) at integer orders n, from the base law.

    D_n(Q || M) = log E_Q[g(t)] / (n - 1) with t = dP/dQ = e^L and g(t) = (1 - q + q t)^(1-n),
    convex and decreasing in t. On a cell of L-values (a, b] with Q-mass m and P-mass
    m_P the conditional Q-mean of t is m_P / m, so by convexity the cell's share of
    E_Q[g] is at most m times the chord of g from e^a to e^b evaluated there (the
    connect-the-dots bound of Doroshenko et al. 2022, applied to g). Q-mass outside the
    cells (tails, the atom L = -inf) is counted at g(0) = (1-q)^(1-n), the largest value.
    Everything is summed as g - 1 (whose first-order part cancels exactly in the true
    sum), and the sum's rounding bound is added.
    """
    a, b = loss.quantile_range(1e-300)
    if not (np.isfinite(a) and np.isfinite(b)) or b <= a:
        return np.full(orders.shape, np.inf)
    edges = np.linspace(a, b, ADD_RDP_CELLS + 1)
    edges[0], edges[-1] = np.nextafter(a, -np.inf), b
    m_p, m_q = loss.cell_masses(edges)
    keep = m_q > 0.0
    m_p, m_q = m_p[keep], m_q[keep]
    lo_t, hi_t = np.exp(edges[:-1][keep]), np.exp(edges[1:][keep])
    t_bar = np.clip(m_p / m_q, lo_t, hi_t)
    rest = max(1.0 - float(np.sum(m_q)), 0.0) + 4.0 * ADD_RDP_CELLS * UNIT_ROUNDOFF
    n = orders[:, None]
    log_c = math.log1p(-q)

    def g_minus_1(t: np.ndarray) -> np.ndarray:
        return np.expm1((1.0 - n) * np.log1p(q * (t - 1.0)))

    g_lo, g_hi = g_minus_1(lo_t), g_minus_1(hi_t)
    width = hi_t - lo_t
    w = np.where(width > 0.0, (t_bar - lo_t) / np.where(width > 0.0, width, 1.0), 0.0)
    terms = m_q * (g_lo + w * (g_hi - g_lo))
    total = np.sum(terms, axis=1) + rest * np.expm1((1.0 - orders) * log_c)
    err = (math.log2(terms.shape[1] + 1) + 8.0) * UNIT_ROUNDOFF * np.sum(np.abs(terms), axis=1)
    with np.errstate(invalid="ignore"):
        return np.log1p(np.maximum(total + err, -1.0 + UNIT_ROUNDOFF)) * (1.0 + 4.0 * UNIT_ROUNDOFF)


def poisson_pair_rdp_bound(loss: PrivacyLoss, rdp: Callable[[np.ndarray], np.ndarray], q: float,
                           alpha: ArrayLike) -> np.ndarray:
    """Renyi DP of a Poisson-subsampled base with a known symmetric pair, at integer orders.

    The larger of the two directions: the removal direction's exact binomial
    expansion over the base's Renyi DP (:func:`poisson_rdp_bound` with
    ``removal_only``), and the addition direction integrated over the base law
    (:func:`poisson_add_log_moments`); the smaller of that and the general bound
    of Zhu and Wang (2019), both being valid. Orders above PAIR_RDP_MAX_ORDER use
    the general bound.
    """
    a = np.asarray(alpha, dtype=float)
    general = np.asarray(poisson_rdp_bound(rdp, q, a), dtype=float)
    inside = a <= PAIR_RDP_MAX_ORDER
    if not np.any(inside):
        return general
    orders = a[inside]
    removal = np.asarray(poisson_rdp_bound(rdp, q, orders, removal_only=True), dtype=float)
    addition = poisson_add_log_moments(loss, q, orders) / (orders - 1.0)
    out = general.copy()
    out[inside] = np.minimum(general[inside], np.maximum(removal, addition))
    return out


@dataclass(frozen=True, eq=False, repr=False)
class PoissonSubsampledMechanism(RateSubsampledMechanism):
    """``base`` run on a Poisson sample: every record is kept independently with probability ``q``.

    Add/remove relation. Dominating pairs, for the base pair (P, Q): removal
    ((1-q) Q + q P, Q), addition (Q, (1-q) Q + q P). q = 1 is the base itself.
    A Gaussian base has the exact subsampled-Gaussian RDP (Mironov, Talwar and Zhang 2019).

    Parameters
    ----------
    base:
        Mechanism given by one symmetric dominating pair under add/remove (or
        relation-agnostic), or by its Renyi DP only.
    q:
        Sampling probability, 0 <= q <= 1 (q = 0 reveals nothing).
    """

    _SAMPLER = "PoissonSubsample"
    _RELATION = Neighboring.ADD_REMOVE
    _RDP_BOUND = staticmethod(poisson_rdp_bound)
    _EXACT_GAUSSIAN_RDP = True

    def _subsampled_parts(self, loss: PrivacyLoss) -> list[LossPart]:
        if isinstance(loss, DiscreteLoss) and held_as_atoms(loss):
            # A base held as atoms gives atom laws (see :mod:`autoacct.subsampling.atoms`).
            laws = self.cached(("atom-laws",), lambda: poisson_atom_losses(
                loss, self.q, poisson_laws(loss, self.q)))
            return [LossPart(*laws, 1)]
        return [LossPart(*poisson_laws(loss, self.q), 1)]

    def _rdp_bound(self) -> Callable[..., np.ndarray]:
        loss = self._loss()
        if loss is None:
            return poisson_rdp_bound
        return functools.partial(poisson_pair_rdp_bound, loss)

    #: Its base never answers it more tightly than its own PLD; it matters only composed with
    #: balls-in-bins epochs (see :meth:`dominating`).
    dominating_alone = False

    def dominating(self) -> Mechanism | None:
        """The base, where it is exactly GDP and q < 1 (its closed form costs nothing): rate 1
        dominates every rate q (the kernel of :meth:`snap`, with q' = 1), so a composition of
        such steps and balls-in-bins epochs is dominated by a composition of Gaussians
        (``ComposedMechanism.dominating``)."""
        if self.q == 1.0 or self.base.exact_gdp_mu() is None:
            return None
        return self.base

    def snap(self, ratio: float, up: bool) -> tuple[Hashable, Callable[[], Mechanism]] | None:
        # A larger rate dominates, for any base pair (P, Q): keeping a draw of
        # (1 - q') Q + q' P with probability q / q' and else drawing afresh from Q (known) maps
        # it to (1 - q) Q + q P, and Q to Q, in both directions; a dominating base dominates
        # the mixtures, by the same kernel applied inside them.
        base = self.base.snap(ratio, up)
        if base is None or not 0.0 < self.q < 1.0:
            return None
        q = snap_value(self.q, ratio, up)
        key, make = base
        return ("PoissonSubsample", q, key), lambda: PoissonSubsampledMechanism(make(), q)


@dataclass(frozen=True)
class PoissonSubsample(Sampler):
    """``PoissonSubsample(q)(M)``: M on a Poisson sample keeping each record with probability q.

    Add/remove relation; see :class:`PoissonSubsampledMechanism`. Raises
    ValueError naming ``q`` for q outside [0, 1] and naming ``mechanism`` for a
    replace-one mechanism or one that is not a single dominating pair.
    """

    mechanism_type = PoissonSubsampledMechanism

    q: float

    def __post_init__(self) -> None:
        self._set(q=check.real("q", self.q, low=0.0, high=1.0))
