"""Bounded-range mechanisms: the exponential mechanism and an exact binary counting pair."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from autoacct import _validation as check
from autoacct.exactness import MACHINE_EPSILON, ExactFloat
from autoacct.losses import DiscreteLoss
from autoacct.losses.atoms import BoundedRangeEnvelopeLoss
from autoacct.mechanism import LossPart, Mechanism, Neighboring, PairRdp
from autoacct.zoo.mechanisms import PureDP

#: Relative margin on the closed form below (a few roundings of exp, log1p and expm1).
_BR_REL = 1e-13
#: The closed form below is read where alpha eps is at least this (its roundings and the
#: miss of its stationary point stay below 1e-11 of it), alpha eps^2 / 8 below.
_BR_CLOSED = 1e-3
#: Exponents below which e^x is finite.
_NO_OVERFLOW = 700.0
#: Roundings of each summand of a sum that may cancel, counted on its magnitude.
_SUMMAND_ULPS = 8.0 * MACHINE_EPSILON
#: The smallest normal float: below it a probability has lost relative precision.
_TINY = float(np.finfo(float).tiny)


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
    u* = (E - 1)/eps; at alpha = inf the value is eps.

    The two summands nearly cancel for small alpha eps (each about eps / 2, their sum about
    alpha eps^2 / 8). Where alpha eps >= _BR_CLOSED the rounding of each summand is added on
    its own magnitude, with a relative 1e-13; below, and as a cap everywhere, alpha eps^2 / 8:
    an eps-BR mechanism is eps^2 / 8-zCDP (Cesar and Rogers 2021), above D_alpha by a relative
    (alpha eps)^2 / 70 or less (1.4e-8 at alpha eps = 1e-3, against 80-digit values). Capped
    by eps (pure DP).

    The computed u misses the stationary point u* by du, a few roundings of u (E - c is
    formed as (E - 1) + (1 - c), two positive terms, not as a difference of two numbers near
    1, which missed by an absolute ulp: 1e-13 in u at eps = 1.1e-9, alpha = 1.6e6). D_alpha,
    concave, drops by at most |D''| du^2 / 2 there, |D''(u)| = 1/u^2 + s^2 / (beta (1 -
    s (u - 1))^2) with s = (1 - c)/(E - 1); twice that is added. (At that point the value had
    come out 1.8e-9 below the truth: 26 of 4000 random (eps, alpha), all at eps below 5e-8.)
    """
    a = np.asarray(alpha, dtype=float)
    big_e = math.exp(eps)
    em1 = math.expm1(eps)
    beta = np.where(np.isfinite(a), a - 1.0, 1.0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        one_minus_c = -np.expm1(-beta * eps)
        u = np.where(beta > 0.0, beta * (em1 + one_minus_c) / (one_minus_c * np.where(np.isfinite(a), a, 1.0)),
                     em1 / eps)
        u = np.clip(u, 1.0, big_e)
        s_slope = one_minus_c / em1
        safe_beta = np.where(beta > 0.0, beta, 1.0)
        curvature = 1.0 / (u * u) + np.where(
            beta > 0.0, s_slope * s_slope / (safe_beta * (1.0 - s_slope * (u - 1.0)) ** 2), 0.0)
        du = 4.0 * _SUMMAND_ULPS * u
        miss = 2.0 * curvature * du * du
        log_u = np.log(u)
        share = (u - 1.0) / em1
        # (u - 1 is exact for u in [1, 2]: log u and share read the same point u)
        second = np.where(beta > 0.0, np.log1p(-one_minus_c * share) / np.where(beta > 0.0, beta, 1.0),
                          -eps * share)
        val = log_u + second
        closed = (np.maximum(val, 0.0) * (1.0 + _BR_REL) + _SUMMAND_ULPS * (np.abs(log_u) + np.abs(second))
                  + np.where(np.isfinite(miss), miss, 0.0))
        finite = np.where(np.isfinite(a), a, 1.0)
        zcdp = finite * (eps * eps / 8.0) * (1.0 + _SUMMAND_ULPS)
        val = np.where(finite * eps >= _BR_CLOSED, np.minimum(closed, zcdp), zcdp)
    val = np.where(np.isinf(a), eps, val)
    return np.minimum(val + 1e-300, eps)


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

    def attained_parts(self) -> list[LossPart]:
        """Two candidates whose utilities (Delta_u, 0) swap between D and D': the first is
        released with probability e^{eps/2} / (1 + e^{eps/2}) on D and 1 / (1 + e^{eps/2}) on D',
        randomized response with log-odds eps/2 (the t = eps/2 pair of Dong, Durfee and Rogers
        2020, an eps-BR instance). One fixed pair of datasets attains it at every run, so its
        compositions' lower ends are this mechanism's (50 runs of eps 0.3, eps(1e-5): 4.487,
        where the one run's 0.297 was taken)."""
        # (eps / 2 is exact: PureDP's pair is randomized response with exactly that log-odds)
        return self.cached(("instance",), lambda: PureDP(self.eps / 2.0)).loss_parts()

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


def _two_point_rdp(logp: np.ndarray, logq: np.ndarray, alpha: np.ndarray, loss: np.ndarray | None = None,
                   log_err: float | np.ndarray = 0.0) -> np.ndarray:
    """D_alpha(P || Q) of two distributions on finitely many outcomes, from log-masses, rounded
    up. With beta = alpha - 1 and the losses s_i = log p_i - log q_i, it is
    log(sum_i p_i e^{beta s_i}) / beta, the log of a sum near 1 for nearby P and Q. ``loss``,
    if given, holds the s_i to a few ulps of their own (a difference of log-masses near
    log(1/2) keeps only their ulps: a relative 1e-5 of a divergence of 7e-11 at
    eps_tilde = 1.7e-5).

    It is read as log1p(sum_i p_i expm1(beta s_i)) / beta (sum_i p_i = 1), whose sum keeps its
    relative accuracy as beta -> 0 (it tends to beta KL) and near 0 (a log-sum-exp there
    rounds 1 + x to an absolute ulp: a relative 1e-5 of a divergence of 6e-11), the roundings of
    its terms (and of the log-masses read) added on their magnitudes. Where e^{beta s_i} would
    overflow, the sum is far from 1 and its log-sum-exp's roundings are added on the magnitudes
    of its terms (each weighed by its share of the sum) before the division by beta.

    Each term p_i expm1(beta s_i) is formed as e^{log p_i + log|expm1(beta s_i)|}, so that a
    mass below the floats (log p_i < -745) still gives its term where the term is a float
    (e^-746 e^{10 * 72} at eps_tilde = 74.6, n = 20, m = 5: the term was dropped and the
    divergence 2.3e-24 came out 1.6e-322). ``log_err`` (one value, or one per outcome) bounds
    an error of each log-mass and of each loss beyond their own roundings (the counting pair's
    a = eps_tilde (2m - n) is itself rounded)."""
    al = np.asarray(alpha, dtype=float)
    beta = (al - 1.0)[..., None]
    # (the rounding of s_i, moved by beta into each term)
    if loss is None:
        loss = logp - logq
        read = _SUMMAND_ULPS * (np.abs(logp) + np.abs(logq)) + 2.0 * log_err
    else:
        read = _SUMMAND_ULPS * np.abs(loss) + 2.0 * log_err
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        small = np.max(beta * loss, axis=-1) < _NO_OVERFLOW
        bent = np.expm1(beta * loss)
        terms = np.sign(bent) * np.exp(logp + np.log(np.abs(bent)))
        # (p_i = e^{log p_i} is off by a relative |log p_i| ulps and log_err, and
        # e^{beta s_i} by beta times s_i's error)
        slack = np.sum((_SUMMAND_ULPS * (2.0 + np.abs(logp)) + 2.0 * log_err) * np.abs(terms)
                       + beta * read * np.exp(logp + beta * loss), axis=-1)
        near = np.log1p(np.sum(terms, axis=-1) + slack)
        log_terms = (al[..., None] * logp + (1.0 - al[..., None]) * logq)
        total = special.logsumexp(log_terms, axis=-1)
        # (each term's rounding, on its magnitude, moves the sum by its share e^{term - total})
        size = np.sum(np.exp(log_terms - total[..., None])
                      * (np.abs(al[..., None] * logp) + np.abs((1.0 - al[..., None]) * logq)), axis=-1)
        far = total + _SUMMAND_ULPS * (size + np.abs(total) + 1.0)
    out = np.where(small, near, far)
    # (a divergence among the subnormals keeps no relative precision: each of its few dozen
    # operations may round by half the least subnormal)
    return np.maximum(out, 0.0) / (al - 1.0) * (1.0 + _SUMMAND_ULPS) + 32.0 * math.ulp(0.0)


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
    dominates it since the counting utility is monotone). RDP is exact (rounded up). The
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
        """(s_0, s_1): the privacy losses log(P[M(X) = y] / P[M(Y) = y]) at y = 0 and y = 1.

        Not as differences of the log-masses, which are about a (up to 700 * 2^52) where |a| is
        large, so that s_0 kept an ulp of a: (512.0, 0.0) for (700, 2^52, 1), whose s_0 is 700.
        With g = e^eps_tilde - 1, expit(a) / expit(a - eps_tilde) = 1 + g expit(-a) and
        expit(-a) / expit(eps_tilde - a) = 1 / (1 + g expit(a - eps_tilde)): each a log1p of a
        product of positive factors with relative precision (where expit underflows, as
        expit(-800) does while g expit(-800) = e^-400 at eps_tilde = 400 does not, the exponential
        of the sum of their logarithms), so each loss keeps its own to a few ulps.
        """
        e = self.eps_tilde
        a = e * (2 * self.m - self.n)
        g = math.expm1(e)

        def log1p_g_expit(z: float) -> float:
            r = float(special.expit(z))
            x = g * r if r >= _TINY else math.exp(math.log(g) + float(special.log_expit(z)))
            return math.log1p(x)
        return log1p_g_expit(-a), -log1p_g_expit(a - e)

    def loss_parts(self) -> list[LossPart]:
        lx, ly = self._log_masses()
        s = np.array(self.losses)
        fwd = DiscreteLoss(s, np.exp(lx), np.exp(ly))
        bwd = DiscreteLoss(-s, np.exp(ly), np.exp(lx))
        return [LossPart(fwd, bwd, 1)]

    def rdp_curve(self) -> PairRdp:
        lx, ly = self._log_masses()

        def curve(alpha: np.ndarray) -> np.ndarray:
            # (the pair is eps_tilde-BR, its losses eps_tilde apart: that bound caps the rounding)
            cap = bounded_range_rdp(self.eps_tilde, alpha)
            s = np.array(self.losses)
            # (a = eps_tilde (2m - n) is rounded by half an ulp of |a|: it moves log expit(+-a)
            # by that times expit(-+a), 1 - the outcome's mass, and a loss by the sum of its two
            # masses' moves; four times that)
            moved = 2.0 * MACHINE_EPSILON * abs(self.eps_tilde * (2 * self.m - self.n))
            err = moved * (2.0 - np.exp(lx) - np.exp(ly))
            return np.minimum(np.stack([_two_point_rdp(lx, ly, alpha, s, err),
                                        _two_point_rdp(ly, lx, alpha, -s, err)]), cap)
        return curve

