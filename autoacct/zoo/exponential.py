"""Bounded-range mechanisms: the exponential mechanism and an exact binary counting pair."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from autoacct import _validation as check
from autoacct.exactness import ExactFloat
from autoacct.losses import DiscreteLoss
from autoacct.losses.atoms import BoundedRangeEnvelopeLoss
from autoacct.mechanism import LossPart, Mechanism, Neighboring, PairRdp

#: Relative margin on the closed form below (a few roundings of exp, log1p and expm1).
_BR_REL = 1e-13


def bounded_range_rdp(eps: float, alpha: np.ndarray) -> np.ndarray:
    """The Renyi divergence of order ``alpha`` in [1, inf] maximised over ``eps``-bounded-range pairs.

    Every eps-BR pair is dominated by a generalised randomised response with some
    t in [0, eps] (see :class:`ExponentialMechanism`): two outcomes with losses t
    and t - eps and P-masses a = (e^eps - e^t)/(e^eps - 1) and 1 - a, itself
    eps-BR. Its divergence, with beta = alpha - 1, u = e^t, E = e^eps and
    c = e^{-beta eps}, is

        D_alpha(t) = log u + log(1 - (1 - c)(u - 1)/(E - 1)) / beta,

    concave in u, so the supremum over the class is attained at the stationary point
    u* = beta (E - c) / ((1 - c) alpha), clipped to [1, E]; both orders of the
    pair are covered (t -> eps - t swaps them). At alpha = 1 (the KL divergence)
    u* = (E - 1)/eps; at alpha = inf the value is eps. Rounded up by a relative
    1e-13; capped by eps (pure DP).
    """
    a = np.asarray(alpha, dtype=float)
    big_e = math.exp(eps)
    em1 = math.expm1(eps)
    beta = np.where(np.isfinite(a), a - 1.0, 1.0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        one_minus_c = -np.expm1(-beta * eps)
        c = 1.0 - one_minus_c
        u = np.where(beta > 0.0, beta * (big_e - c) / (one_minus_c * np.where(np.isfinite(a), a, 1.0)),
                     em1 / eps)
        u = np.clip(u, 1.0, big_e)
        log_u = np.log(u)
        share = (u - 1.0) / em1
        val = np.where(beta > 0.0, log_u + np.log1p(-one_minus_c * share) / np.where(beta > 0.0, beta, 1.0),
                       log_u - eps * share)
    val = np.where(np.isinf(a), eps, val)
    return np.minimum(np.maximum(val, 0.0) * (1.0 + _BR_REL) + 1e-300, eps)


@dataclass(frozen=True, eq=False, repr=False)
class ExponentialMechanism(Mechanism):
    """Any ``eps``-bounded-range mechanism, in particular the exponential mechanism.

    The exponential mechanism with utility u of sensitivity Delta_u samples y
    with probability proportional to exp(eps u(D, y) / (2 Delta_u)); it is
    eps-DP and, more strongly, eps-bounded-range (eps-BR; Durfee and Rogers
    2019): for neighbouring D ~ D' the loss log(P[M(D) = y] / P[M(D') = y])
    takes values in an interval [t - eps, t] with 0 <= t <= eps. For a
    monotone utility (adding a record never decreases any u(., y), e.g.
    counting queries under add/remove) the weights exp(eps u / Delta_u) already
    give eps-BR. ``eps`` is this BR parameter; the guarantee holds for
    whichever neighbouring relation Delta_u refers to.

    Dominating pair. Dong, Durfee and Rogers (2020, Section 3.1) reduce every
    eps-BR pair to a generalised randomised response with some t in [0, eps]:
    two outcomes with losses t and t - eps, P-masses p_t = (e^eps - e^t)/(e^eps - 1)
    and 1 - p_t. (Proof: split each outcome o, whose loss lies in [t - eps, t],
    into two with losses t and t - eps and the same total P- and Q-mass;
    merging all outcomes of equal loss gives the two-point pair, of which the
    original pair is a post-processing.) The upper envelope of their privacy profiles over t is,
    for 0 <= eps' <= eps (maximum at e^t = e^{(eps + eps')/2}),

        delta(eps') = (e^{eps/2} - e^{eps'/2})^2 / (e^eps - 1),

    and 0 beyond eps (at eps' = 0 this is tanh(eps/4), against tanh(eps/2) for
    randomised response). It is the profile of one pair: under P the loss has
    density e^{(eps + l)/2} / (2 (e^eps - 1)) on [-eps, eps], under Q density
    e^{(eps - l)/2} / (2 (e^eps - 1)) (its profile is that envelope; the
    envelope of the reversed pairs is the same since reversing maps t to
    eps - t). This pair dominates every eps-BR pair, so its PLD is sound, also
    under adaptive composition, and exact for one mechanism. For k > 1
    compositions it is pessimistic: the optimal (non-adaptive) bound of Dong et
    al. is the maximum over t of the k-fold composed t-pairs, which no single
    pair represents; the envelope pair is not itself attained by an eps-BR
    mechanism, so a lower bound read off its composed PLD is not certified
    for the composed mechanism (its loss law is flagged ``tight = False``;
    this mechanism's own ``epsilon_bounds`` are certified). RDP:
    :func:`bounded_range_rdp` (exact over the class), which beats the composed envelope for many
    compositions (eps^2/8-zCDP against the envelope's KL of about eps^2/6).

    Parameters
    ----------
    eps:
        The bounded-range parameter, eps > 0.
    """

    eps: float

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set(eps=check.real("eps", self.eps, low=0.0, high=700.0, low_open=True))

    @classmethod
    def binary_counting(cls, eps_tilde: float, n: int, m: int, *,
                        name: str = "ExpMechCounting") -> BinaryCountingExponential:
        """The binary counting-query exponential mechanism of Koskela et al. (2021), Section 6.1.

        See :class:`BinaryCountingExponential`.
        """
        return BinaryCountingExponential(eps_tilde, n, m, name=name)

    def loss_parts(self) -> list[LossPart]:
        loss = BoundedRangeEnvelopeLoss(self.eps)
        return [LossPart(loss, loss, 1)]

    def rdp_curve(self) -> PairRdp:
        def curve(alpha: np.ndarray) -> np.ndarray:
            v = bounded_range_rdp(self.eps, alpha)
            return np.stack([v, v])
        return curve

    def dp_guarantee(self) -> tuple[float, float]:
        return ExactFloat(self.eps), 0.0

    def epsilon_lower(self, delta: float) -> float:
        """The exact eps(delta) of one eps-BR mechanism (attained in the limit by some t-pair).

        Inverts delta = (e^{eps/2} - e^{eps'/2})^2 / (e^eps - 1):
        eps' = 2 log(e^{eps/2} - sqrt(delta (e^eps - 1))).
        """
        e = self.eps
        root = math.exp(e / 2.0) - math.sqrt(delta * math.expm1(e))
        if root <= 1.0:
            return 0.0
        return max(0.0, 2.0 * math.log(root) * (1.0 - 1e-12))


def _two_point_rdp(logp: np.ndarray, logq: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """D_alpha(P || Q) of two distributions on finitely many outcomes, from log-masses."""
    a = np.asarray(alpha, dtype=float)[..., None]
    terms = a * logp + (1.0 - a) * logq
    return special.logsumexp(terms, axis=-1) / (np.asarray(alpha, dtype=float) - 1.0)


@dataclass(frozen=True, eq=False, repr=False)
class BinaryCountingExponential(Mechanism):
    """The exponential mechanism for a binary counting query, on one pair of datasets (Koskela et al. 2021, 6.1).

    Outcomes Y = {0, 1}; utility u(X, y) = #{x in X : x = y}; the mechanism
    outputs y with probability e^{eps_tilde u(X, y)} / sum_y' e^{eps_tilde u(X, y')}.
    X has n records, m of them equal to 0; its neighbour Y (relation ~_R:
    removal of one record) is X without one of its zeros (n - 1 records, m - 1
    zeros). With a = eps_tilde (2m - n), P[M(X) = 0] = expit(a) and
    P[M(Y) = 0] = expit(a - eps_tilde); the losses are

        s_0 = log(expit(a) / expit(a - eps_tilde)),   s_1 = log(expit(-a) / expit(eps_tilde - a)),

    with s_0 - s_1 = eps_tilde. The PLD is that of this exact pair
    (M(X), M(Y)), forward, and (M(Y), M(X)), backward: it describes these two
    datasets only, as in the experiment of Koskela, Jalko, Prediger and Honkela (2021), not a worst case over all
    datasets (for that use ``ExponentialMechanism(eps_tilde)``, which
    dominates it since the counting utility is monotone). RDP is exact. The
    mechanism declares ``Neighboring.ADD_REMOVE``.

    Parameters
    ----------
    eps_tilde:
        The exponential mechanism's parameter, > 0.
    n:
        Number of records of X, >= 1.
    m:
        Number of zeros in X, 1 <= m <= n.
    """

    default_name = "ExpMechCounting"

    eps_tilde: float
    n: int
    m: int

    def __post_init__(self) -> None:
        super().__post_init__()
        e = check.real("eps_tilde", self.eps_tilde, low=0.0, high=700.0, low_open=True)
        nn = check.bounded_int("n", self.n)
        mm = check.positive_int("m", self.m)
        if mm > nn:
            raise ValueError(f"m must lie in [1, n] = [1, {nn}], got {self.m!r}")
        if self.neighboring not in (None, Neighboring.ADD_REMOVE):
            raise ValueError(f"neighboring must be ADD_REMOVE (removal of one record), got {self.neighboring!r}")
        self._set(eps_tilde=e, n=nn, m=mm, neighboring=Neighboring.ADD_REMOVE)

    def _log_masses(self) -> tuple[np.ndarray, np.ndarray]:
        """(log P(0), log P(1)) for M(X) and for M(Y)."""
        e = self.eps_tilde
        a = e * (2 * self.m - self.n)
        log_x = np.array([special.log_expit(a), special.log_expit(-a)])
        log_y = np.array([special.log_expit(a - e), special.log_expit(e - a)])
        return log_x, log_y

    @property
    def losses(self) -> tuple[float, float]:
        """(s_0, s_1): the privacy losses log(P[M(X) = y] / P[M(Y) = y]) at y = 0 and y = 1."""
        log_x, log_y = self._log_masses()
        s = log_x - log_y
        return float(s[0]), float(s[1])

    def loss_parts(self) -> list[LossPart]:
        lx, ly = self._log_masses()
        fwd = DiscreteLoss(lx - ly, np.exp(lx), np.exp(ly))
        bwd = DiscreteLoss(ly - lx, np.exp(ly), np.exp(lx))
        return [LossPart(fwd, bwd, 1)]

    def rdp_curve(self) -> PairRdp:
        lx, ly = self._log_masses()

        def curve(alpha: np.ndarray) -> np.ndarray:
            return np.stack([_two_point_rdp(lx, ly, alpha), _two_point_rdp(ly, lx, alpha)])
        return curve

