"""Poisson subsampling (add/remove): each record joins the sample independently with probability q.

Dominating pairs, for the base pair (P, Q): removal ((1-q) Q + q P, Q), addition
(Q, (1-q) Q + q P) (Zhu, Dong and Wang 2022; Koskela, Jalko and Honkela 2020 for the
Gaussian). Renyi DP: exact for a Gaussian base (Mironov, Talwar and Zhang 2019),
Zhu and Wang (2019, Theorem 6) for other bases.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from autoacct import _validation
from autoacct import _validation as check
from autoacct.losses import PrivacyLoss
from autoacct.mechanism import LossPart, Neighboring
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
from autoacct.subsampling.represented import (
    PoissonLossMap,
    Representation,
    RepresentedLoss,
    cell_of,
    check_q,
    masses_between,
    previous_float,
    representation,
)


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
        self.q = check_q(q)
        self._phi = PoissonLossMap(self.q)
        self.p_inf = self.q * base.p_inf
        self.p_inf_truncated = self.q * base.p_inf_truncated
        self.q_ninf = 0.0
        self.has_atoms = bool(base.has_atoms or base.q_ninf > 0)

    @property
    def key(self) -> tuple:
        return ("poisson-remove", self.q, self.base.key)

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e = np.asarray(edges, dtype=float)
        t = np.maximum.accumulate(self._phi.inverse(e))
        m_p, m_q = masses_between(self.base, t)
        p = (1.0 - self.q) * m_q + self.q * m_p
        qm = m_q.copy()
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
        inner = self._phi.inverse(eps)
        big = np.isfinite(inner) | (inner == np.inf)
        safe = np.where(np.isfinite(inner), inner, 0.0)
        val = self.q * np.asarray(self.base.profile(safe), dtype=float)
        val = np.where(inner == np.inf, self.p_inf, val)
        low = -np.expm1(np.minimum(eps, 0.0))
        return np.clip(np.where(big, val, low), 0.0, 1.0)

    def _base_range(self, eta: float) -> tuple[float, float]:
        """An interval holding L under P and under Q up to eta on each side (symmetric base)."""
        a, b = self.base.quantile_range(eta)
        return min(a, -b), max(b, -a)

    def quantile_range(self, eta: float) -> tuple[float, float]:
        lo, hi = self._base_range(eta)
        phi = self._phi.forward(np.array([lo, hi]))
        a = self._phi.c if self.base.q_ninf > 0 else float(phi[0])
        return a, float(phi[1])

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
    """

    def __init__(self, base: PrivacyLoss, q: float) -> None:
        self.base = base
        self.q = check_q(q)
        self._phi = PoissonLossMap(self.q)
        self.p_inf = 0.0
        self.q_ninf = self.q * base.p_inf
        self.has_atoms = bool(base.has_atoms or base.q_ninf > 0)

    @property
    def key(self) -> tuple:
        return ("poisson-add", self.q, self.base.key)

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e = np.asarray(edges, dtype=float)
        s = self._phi.inverse(-e)
        r = np.maximum.accumulate(s[::-1])
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
        log_c = np.log(-np.expm1(np.minimum(eps + self._phi.c, -1e-300)))
        inner = self._phi.inverse(-eps)
        alive = (eps + self._phi.c < 0) & np.isfinite(inner)
        arg = np.where(alive, -inner, 0.0)
        val = np.exp(log_c) * np.asarray(self.base.profile(arg), dtype=float)
        return np.clip(np.where(alive, val, 0.0), 0.0, 1.0)

    def quantile_range(self, eta: float) -> tuple[float, float]:
        a, b = self.base.quantile_range(eta)
        lo, hi = min(a, -b), max(b, -a)
        phi = self._phi.forward(np.array([lo, hi]))
        top = -self._phi.c if self.base.q_ninf > 0 else float(-phi[0])
        return float(-phi[1]), top

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


def poisson_rdp_bound(rdp: Callable[[np.ndarray], np.ndarray], q: float,
                      alpha: ArrayLike) -> np.ndarray:
    """Upper bound on the Renyi DP of a Poisson-subsampled mechanism (add/remove).

    Zhu and Wang (2019, Theorem 6): if the base mechanism M is (n, eps(n))-RDP at
    every integer n >= 2, then M applied to a Poisson sample with rate q satisfies,
    at integer n >= 2,

        (n - 1) eps'(n) <= log( (1-q)^(n-1) (1 + (n-1) q)
                                + C(n,2) q^2 (1-q)^(n-2) e^(eps(2))
                                + 3 sum_{l=3}^n C(n,l) q^l (1-q)^(n-l) e^((l-1) eps(l)) ).

    It is evaluated as log(1 + sum_{l>=2} C(n,l) q^l (1-q)^(n-l) (c_l e^((l-1)eps(l)) - 1))
    (c_2 = 1, c_l = 3), whose terms are non-negative, so small q loses no digits.
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
        inner = (l_ - 1.0) * eps_l + np.where(l_ >= 3.0, math.log(3.0), 0.0)
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
        Sampling probability, 0 < q <= 1.
    """

    _SAMPLER = "PoissonSubsample"
    _RELATION = Neighboring.ADD_REMOVE
    _RDP_BOUND = staticmethod(poisson_rdp_bound)
    _EXACT_GAUSSIAN_RDP = True

    def _subsampled_parts(self, loss: PrivacyLoss) -> list[LossPart]:
        return [LossPart(PoissonRemoveLoss(loss, self.q), PoissonAddLoss(loss, self.q), 1)]


@dataclass(frozen=True)
class PoissonSubsample(Sampler):
    """``PoissonSubsample(q)(M)``: M on a Poisson sample keeping each record with probability q.

    Add/remove relation; see :class:`PoissonSubsampledMechanism`. Raises
    ValueError naming ``q`` for q outside (0, 1] and naming ``mechanism`` for a
    replace-one mechanism or one that is not a single dominating pair.
    """

    mechanism_type = PoissonSubsampledMechanism

    q: float

    def __post_init__(self) -> None:
        self._set(q=check.real("q", self.q, low=0.0, high=1.0, low_open=True))
