"""Mechanisms with discrete outputs: exponential, binomial, discrete Gaussian and discrete Laplace.

Each mechanism is given by a dominating pair (P, Q) of output distributions of
neighbouring datasets, through the law of the privacy loss L = log(dP/dQ)
under P (the PLD) and, where it is known in closed form, its Renyi divergence.

Infinite supports are truncated soundly: the P-mass of every truncated tail
(at most :data:`TAIL_MASS` per tail) is moved to the atom L = +inf, which can
only raise the privacy profile; when a support is too large to enumerate,
adjacent outcomes are merged into one whose loss is the largest loss of the
group, which again only raises it (see :func:`_atoms`). The certified
``lower`` bounds of ``epsilon_bounds`` then refer to this slightly pessimistic
pair: they may exceed the truth by 2 * TAIL_MASS in delta (plus the merging
error, when a support was merged).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from autoacct import _validation as check
from autoacct.losses import ContinuousLoss, DiscreteLoss, PrivacyLoss
from autoacct.mechanism import LossPart, Mechanism, Neighboring, PairRdp

__all__ = ["AtomLoss", "BinaryCountingExponential", "Binomial", "BoundedRangeEnvelopeLoss",
           "DiscreteGaussian", "DiscreteLaplace", "ExponentialMechanism", "MAX_ATOMS", "TAIL_MASS",
           "bounded_range_rdp"]

#: P-mass of each truncated tail of an infinite support; it is moved to L = +inf.
TAIL_MASS = 1e-40
#: Most atoms a loss law keeps; larger supports are merged soundly into this many groups.
MAX_ATOMS = 1 << 17
#: Outcomes evaluated at once when a large support is merged into groups.
_CHUNK = 1 << 20
#: Integer parameters must stay exactly representable as floats.
_INT_MAX = 2 ** 52


def _log_expm1(y: np.ndarray) -> np.ndarray:
    """log(e^y - 1) for y >= 0 (-inf at 0), without overflow."""
    y = np.asarray(y, dtype=float)
    with np.errstate(divide="ignore"):
        return y + np.log(-np.expm1(-y))


def _nonzero_int(name: str, value: Any) -> int:
    """``value`` as a nonzero int; ValueError or TypeError naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, float, np.floating)):
        raise TypeError(f"{name} must be a nonzero integer, got {value!r} ({type(value).__name__})")
    if isinstance(value, (float, np.floating)) and not float(value).is_integer():
        raise ValueError(f"{name} must be a nonzero integer, got {value!r}")
    n = int(value)
    if n == 0:
        raise ValueError(f"{name} must be a nonzero integer, got {value!r}")
    return n


def _bounded_int(name: str, value: Any, high: int = _INT_MAX) -> int:
    n = check.positive_int(name, value)
    if n > high:
        raise ValueError(f"{name} must be at most {high}, got {value!r}")
    return n


# ----- loss laws ------------------------------------------------------------------------------


class AtomLoss(DiscreteLoss):
    """Loss law of a pair on countably many outcomes, held as sorted arrays of atoms.

    Like :class:`autoacct.losses.DiscreteLoss`, but for large supports: its
    ``key`` is given by the caller (the mechanism's parameters) instead of
    the arrays, and its profile and quantiles use precomputed tail sums.

    Parameters
    ----------
    key:
        Hashable identity of the law (equal keys must mean equal laws).
    values, p_mass, q_mass:
        Finite loss values and the P- and Q-masses of their atoms
        (p_mass = e^value q_mass).
    p_inf, q_ninf:
        P-mass at L = +inf and Q-mass at L = -inf.
    p_inf_truncated:
        The part of ``p_inf`` that is truncated finite-loss mass (see
        :attr:`autoacct.losses.PrivacyLoss.p_inf_truncated`).
    lattice:
        Spacing h of a lattice hZ containing every value, or None.
    tight:
        False when the atoms only dominate the mechanism's pair (merged by
        :func:`_atoms`): lower bounds computed from them are then not certified
        (see :attr:`autoacct.losses.PrivacyLoss.tight`).
    """

    def __init__(self, key: tuple, values: np.ndarray, p_mass: np.ndarray, q_mass: np.ndarray, *,
                 p_inf: float = 0.0, q_ninf: float = 0.0, lattice: float | None = None,
                 p_inf_truncated: float = 0.0, tight: bool = True) -> None:
        super().__init__(values, p_mass, q_mass, p_inf=min(max(p_inf, 0.0), 1.0),
                         q_ninf=min(max(q_ninf, 0.0), 1.0))
        self.p_inf_truncated = min(max(p_inf_truncated, 0.0), self.p_inf)
        # Set after the base class: truncated lattice laws are not treated as purely atomic.
        self.lattice = lattice
        self.tight = tight
        self._key = key
        # _sp[i] = sum_{j >= i} p_j (summed from the small end), _pp[i] = sum_{j < i} p_j.
        self._sp = np.concatenate((np.cumsum(self.p_mass[::-1])[::-1], [0.0]))
        self._sq = np.concatenate((np.cumsum(self.q_mass[::-1])[::-1], [0.0]))
        self._pp = np.concatenate(([0.0], np.cumsum(self.p_mass)))

    @property
    def key(self) -> tuple:
        return self._key

    def profile(self, eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        idx = np.searchsorted(self.values, eps, side="right")
        sp = self._sp[idx]
        sq = self._sq[idx]
        with np.errstate(over="ignore", invalid="ignore"):
            val = np.where(sq > 0, sp - np.exp(eps) * sq, sp)
        val = np.where(np.isfinite(val), val, 0.0)
        return np.clip(val, 0.0, None) + self.p_inf

    def quantile_range(self, eta: float) -> tuple[float, float]:
        n = len(self.values)
        i = int(np.searchsorted(self._pp, eta, side="right")) - 1
        i = min(max(i, 0), n - 1)
        j = int(np.argmax(self._sp[1:] <= eta))
        a, b = float(self.values[i]), float(self.values[j])
        return min(a, b), max(a, b)


def _atoms(lo: int, hi: int, fn: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
           max_atoms: int = MAX_ATOMS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Atoms (values, p_mass, q_mass) of the outcomes lo..hi, merged into at most ``max_atoms``.

    ``fn(i)`` returns (loss, log P-mass) of the integer outcomes ``i``, the
    loss nondecreasing in i. When there are too many outcomes, consecutive
    runs of B of them are merged into one atom carrying their total P-mass at
    the run's largest loss, with Q-mass P e^{-loss} (at most the run's true
    Q-mass). The true pair is a post-processing of the merged one (split each
    merged atom back in proportion to P, and send the Q-mass deficit, placed
    on an outcome P cannot produce, to the outcomes it came from), so the
    merged pair dominates it.
    """
    count = hi - lo + 1
    if count <= max_atoms:
        i = np.arange(lo, hi + 1, dtype=float)
        loss, logp = fn(i)
        return loss, np.exp(logp), np.exp(logp - loss)
    block = -(-count // max_atoms)
    vals, ps = [], []
    per_chunk = max(1, _CHUNK // block) * block
    for start in range(lo, hi + 1, per_chunk):
        stop = min(start + per_chunk - 1, hi)
        i = np.arange(start, stop + 1, dtype=float)
        loss, logp = fn(i)
        full = (len(i) // block) * block
        if full:
            vals.append(loss[block - 1:full:block])
            ps.append(special.logsumexp(logp[:full].reshape(-1, block), axis=1))
        if full < len(i):
            vals.append(loss[-1:])
            ps.append(np.array([special.logsumexp(logp[full:])]))
    values = np.concatenate(vals)
    logp_b = np.concatenate(ps)
    return values, np.exp(logp_b), np.exp(logp_b - values)


class BoundedRangeEnvelopeLoss(ContinuousLoss):
    """Loss of the pair dominating every ``eps``-bounded-range pair (see :class:`ExponentialMechanism`).

    Under P the loss L has density e^{(eps + l)/2} / (2 (e^eps - 1)) on
    [-eps, eps]; under Q, e^{(eps - l)/2} / (2 (e^eps - 1)).
    """

    #: The pair dominates the class but no eps-BR mechanism attains it, so a
    #: lower bound computed from it (especially after composition) need not be
    #: a lower bound for the mechanism.
    tight: bool = False

    def __init__(self, eps: float) -> None:
        self.eps = float(eps)
        self._log_norm = float(_log_expm1(np.array(self.eps)))

    @property
    def key(self) -> tuple:
        return ("bounded-range-envelope", self.eps)

    def _clip(self, x: np.ndarray) -> np.ndarray:
        return np.clip(np.asarray(x, dtype=float), -self.eps, self.eps)

    def _cdf(self, x: np.ndarray, under: str) -> np.ndarray:
        e = self.eps
        x = self._clip(x)
        log = _log_expm1((e + x) / 2.0) - self._log_norm
        if under == "Q":
            log = log + (e - x) / 2.0
        return np.exp(log)

    def _sf(self, x: np.ndarray, under: str) -> np.ndarray:
        e = self.eps
        x = self._clip(x)
        log = _log_expm1((e - x) / 2.0) - self._log_norm
        if under == "P":
            log = log + (e + x) / 2.0
        return np.exp(log)

    def quantile_range(self, eta: float) -> tuple[float, float]:
        return -self.eps, self.eps


# ----- exponential mechanism ---------------------------------------------------------------


def _log_sinh(x: np.ndarray) -> np.ndarray:
    """log sinh(x) for x > 0, without overflow."""
    x = np.asarray(x, dtype=float)
    return x + np.log(-np.expm1(-2.0 * x)) - math.log(2.0)


def bounded_range_rdp(eps: float, alpha: np.ndarray) -> np.ndarray:
    """Upper bound on the Renyi divergence of any ``eps``-bounded-range pair at order ``alpha``.

    The smaller of (a) the RDP of the envelope pair of :class:`BoundedRangeEnvelopeLoss`,
    log(sinh((2 alpha - 1) eps / 2) / ((2 alpha - 1) sinh(eps / 2))) / (alpha - 1), which
    dominates every eps-BR pair; (b) alpha eps^2 / 8, since eps-BR implies
    eps^2/8-zCDP (Cesar and Rogers 2021, "Bounding, concentrating, and
    truncating", Lemma 3.2); (c) eps (pure DP).
    """
    a = np.asarray(alpha, dtype=float)
    env = (_log_sinh((2.0 * a - 1.0) * eps / 2.0) - np.log(2.0 * a - 1.0)
           - _log_sinh(np.array(eps / 2.0))) / (a - 1.0)
    return np.minimum(np.minimum(env, a * eps * eps / 8.0), eps)


@dataclass(frozen=True, eq=False)
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
    :func:`bounded_range_rdp`, which beats the composed envelope for many
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
        """The binary counting-query exponential mechanism of seed 003, section 6.1.

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


@dataclass(frozen=True, eq=False)
class BinaryCountingExponential(Mechanism):
    """The exponential mechanism for a binary counting query, on one pair of datasets (seed 003, 6.1).

    Outcomes Y = {0, 1}; utility u(X, y) = #{x in X : x = y}; the mechanism
    outputs y with probability e^{eps_tilde u(X, y)} / sum_y' e^{eps_tilde u(X, y')}.
    X has n records, m of them equal to 0; its neighbour Y (relation ~_R:
    removal of one record) is X without one of its zeros (n - 1 records, m - 1
    zeros). With a = eps_tilde (2m - n), P[M(X) = 0] = expit(a) and
    P[M(Y) = 0] = expit(a - eps_tilde); the losses are

        s_0 = log(expit(a) / expit(a - eps_tilde)),   s_1 = log(expit(-a) / expit(eps_tilde - a)),

    with s_0 - s_1 = eps_tilde. The PLD is that of this exact pair
    (M(X), M(Y)), forward, and (M(Y), M(X)), backward: it describes these two
    datasets only, as in seed 003's experiment, not a worst case over all
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
        nn = _bounded_int("n", self.n)
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


# ----- binomial mechanism ------------------------------------------------------------------


def _binomial_range(n: int, p: float) -> tuple[int, int]:
    """Outcomes [i_lo, i_hi] outside which each tail of Bin(n, p) has mass <= TAIL_MASS.

    Chernoff: P(Bin >= n x) <= e^{-n KL(x || p)} for x > p (and symmetrically below p).
    """
    budget = math.log(1.0 / TAIL_MASS)

    def excess(x: float) -> float:
        return n * float(special.xlogy(x, x / p) + special.xlogy(1.0 - x, (1.0 - x) / (1.0 - p))) - budget

    i_hi = n if excess(1.0) <= 0 else min(n, int(math.ceil(n * optimize.brentq(excess, p, 1.0))))
    i_lo = 0 if excess(0.0) <= 0 else max(0, int(math.floor(n * optimize.brentq(excess, 0.0, p))))
    return i_lo, i_hi


def _binomial_losses(n: int, p: float, shift: int) -> tuple[PrivacyLoss, PrivacyLoss]:
    """Forward (Bin(n, p) + shift || Bin(n, p)) and backward loss laws, for 1 <= shift <= n."""
    dist = stats.binom(n, p)
    i_lo, i_hi = _binomial_range(n, p)
    safety = 1.0 + 1e-9

    def below(k: int) -> float:
        return float(dist.cdf(k - 1)) * safety if k > 0 else 0.0

    def above(k: int) -> float:
        return float(dist.sf(k)) * safety if k < n else 0.0

    # Forward: P = Bin + shift, Q = Bin. With i ~ Bin under P the outcome is
    # i + shift, finite loss for i <= n - shift, loss +inf beyond.
    f_lo = min(i_lo, n - shift)
    f_hi = min(i_hi, n - shift)

    def fwd_fn(i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lp = dist.logpmf(i)
        return lp - dist.logpmf(i + shift), lp

    vals, pm, qm = _atoms(f_lo, f_hi, fwd_fn)
    # Of the mass put at +inf only i > n - shift is genuinely there; the rest is truncation.
    fwd_inf = below(f_lo) + above(f_hi)
    fwd = AtomLoss(("binomial", n, p, shift, "forward", TAIL_MASS), vals, pm, qm,
                   p_inf=fwd_inf, q_ninf=below(shift),
                   p_inf_truncated=fwd_inf - float(dist.sf(n - shift)) * (1.0 - 1e-9),
                   tight=len(vals) == f_hi - f_lo + 1)

    # Backward: P = Bin, Q = Bin + shift; outcome k ~ Bin, finite loss for k >= shift.
    b_lo = max(i_lo, shift)
    b_hi = max(i_hi, shift)

    def bwd_fn(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lp = dist.logpmf(k)
        return lp - dist.logpmf(k - shift), lp

    vals, pm, qm = _atoms(b_lo, b_hi, bwd_fn)
    bwd_inf = below(b_lo) + above(b_hi)
    bwd = AtomLoss(("binomial", n, p, shift, "backward", TAIL_MASS), vals, pm, qm,
                   p_inf=bwd_inf, q_ninf=above(n - shift),
                   p_inf_truncated=bwd_inf - float(dist.cdf(shift - 1)) * (1.0 - 1e-9),
                   tight=len(vals) == b_hi - b_lo + 1)
    return fwd, bwd


@dataclass(frozen=True, eq=False)
class Binomial(Mechanism):
    """The binomial mechanism of Agarwal et al. (2018), seed 003 section 6.2, with Theorem 11.

    M(X) = f(X) + (Z - n p) s, with f valued in (sZ)^d and independent
    Z_i ~ Bin(n, p). For a pair of datasets X, Y whose difference
    f(X) - f(Y) = s (shift_1, ..., shift_d) is given in units of s (integers),
    the pair is (Bin(n, p) + shift, Bin(n, p)) per coordinate:

        f_X(t) = sum_i C(n, i) p^i (1-p)^{n-i} delta_{i + shift}(t),  f_Y(t) = same with delta_i,

    with loss L(t) = log(f_X(t) / f_Y(t)) = log(C(n, t - shift) / C(n, t) ((1-p)/p)^shift)
    at the outcomes shift <= t <= n (seed 003 prints the binomial ratio the other
    way up), and the atom at +inf of mass sum_{i > n - shift} C(n, i) p^i (1-p)^{n-i}. By
    seed 003's Theorem 11 the d-dimensional mechanism has the PLD of the
    composition of its d one-dimensional pairs (coordinates with equal shifts
    are composed by one spectrum power). As in seed 003 the guarantee is for
    the given difference vector (the worst-case pair of datasets, when it is
    known), in both orders (forward (f_X, f_Y), backward (f_Y, f_X)). A negative
    shift is the mirror image: shift -k with p is shift k with 1 - p.

    Renyi DP is +inf at every order (f_X has mass where f_Y has none); ``rdp``
    returns that true value.

    Parameters
    ----------
    n:
        Number of Bernoulli trials per coordinate, >= 1.
    p:
        Success probability, 0 < p < 1.
    shift:
        A nonzero integer, or a sequence of them, one per coordinate:
        (f(X) - f(Y))_i / s, with |shift_i| <= n.
    """

    n: int
    p: float = 0.5
    shift: int | tuple[int, ...] = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        nn = _bounded_int("n", self.n)
        pp = check.real("p", self.p, low=0.0, high=1.0, low_open=True, high_open=True)
        shift: Any = self.shift
        if isinstance(shift, (Sequence, np.ndarray)) and not isinstance(shift, str):
            if len(shift) == 0:
                raise ValueError("shift must not be empty")
            many = tuple(_nonzero_int(f"shift[{i}]", s) for i, s in enumerate(shift))
            labelled = [(f"shift[{i}]", s) for i, s in enumerate(many)]
            shifts: int | tuple[int, ...] = many
        else:
            one = _nonzero_int("shift", shift)
            labelled = [("shift", one)]
            shifts = one
        for lab, s in labelled:
            if abs(s) > nn:
                raise ValueError(f"{lab} must satisfy |{lab}| <= n = {nn}, got {s!r}")
        self._set(n=nn, p=pp, shift=shifts)

    def _counts(self) -> tuple[tuple[tuple[int, float], int], ...]:
        """((|shift|, p or 1 - p), number of coordinates) for each distinct coordinate pair."""
        shifts = self.shift if isinstance(self.shift, tuple) else (self.shift,)
        counts: dict[tuple[int, float], int] = {}
        for s in shifts:
            key = (abs(s), self.p if s > 0 else 1.0 - self.p)
            counts[key] = counts.get(key, 0) + 1
        return tuple(sorted(counts.items()))

    def loss_parts(self) -> list[LossPart]:
        return self.cached(("parts",), lambda: [LossPart(*_binomial_losses(self.n, p, s), k)
                                                for (s, p), k in self._counts()])

    def rdp_curve(self) -> PairRdp:
        return lambda alpha: np.full((2,) + np.shape(alpha), np.inf)


# ----- discrete Gaussian -------------------------------------------------------------------


def _dg_log_norm(sigma: float) -> float:
    """log sum_{x in Z} e^{-x^2 / (2 sigma^2)}: Poisson summation for sigma >= 1, direct below."""
    if sigma >= 1.0:
        k = np.arange(1, 8)
        return math.log(math.sqrt(2.0 * math.pi) * sigma) + math.log1p(
            2.0 * float(np.sum(np.exp(-2.0 * math.pi ** 2 * sigma ** 2 * k ** 2))))
    x = np.arange(-60, 61, dtype=float)
    return float(special.logsumexp(-x * x / (2.0 * sigma ** 2)))


def _dg_log_ratio(sigma: float, c: np.ndarray) -> np.ndarray:
    """log(Z(c) / Z(0)) <= 0 with Z(c) = sum_{x in Z} e^{-(x - c)^2 / (2 sigma^2)}."""
    c = np.asarray(c, dtype=float)
    frac = c - np.floor(c)
    if sigma >= 1.0:
        # Z(c) = sqrt(2 pi) sigma sum_k e^{-2 pi^2 sigma^2 k^2} cos(2 pi k c).
        k = np.arange(1, 8, dtype=float)
        w = np.exp(-2.0 * math.pi ** 2 * sigma ** 2 * k ** 2)
        den = 1.0 + 2.0 * float(w.sum())
        dip = 4.0 * np.sum(w * np.sin(math.pi * k * frac[..., None]) ** 2, axis=-1)
        return np.log1p(-dip / den)
    x = np.arange(-80, 81, dtype=float)
    lz0 = special.logsumexp(-x * x / (2.0 * sigma ** 2))
    lzc = special.logsumexp(-(x - frac[..., None]) ** 2 / (2.0 * sigma ** 2), axis=-1)
    return np.minimum(lzc - lz0, 0.0)


@dataclass(frozen=True, eq=False)
class DiscreteGaussian(Mechanism):
    """Discrete Gaussian mechanism (Canonne, Kamath and Steinke 2020).

    N_Z(mu, sigma^2) has mass e^{-(x - mu)^2 / (2 sigma^2)} / Z on the integers,
    Z = sum_{y in Z} e^{-y^2 / (2 sigma^2)}. For an integer query of
    sensitivity Delta (``sensitivity``) the dominating pair is
    (N_Z(Delta, sigma^2), N_Z(0, sigma^2)) with loss
    L(x) = (2 Delta x - Delta^2) / (2 sigma^2), on the lattice Delta / (2 sigma^2) Z
    (both orders of the pair have the same law, by x -> Delta - x). A smaller
    difference |f(D) - f(D')| < Delta gives a smaller profile (checked
    numerically in the tests; the shift Delta is the worst case).

    PLD: exact pmf on the integers, each tail beyond mass TAIL_MASS moved to
    L = +inf (bounded by the integral of the Gaussian density, so
    over-counted, never dropped); supports wider than MAX_ATOMS are merged
    soundly. RDP, exact: D_alpha = alpha Delta^2 / (2 sigma^2) +
    log(Z(alpha Delta) / Z(0)) / (alpha - 1), Z(c) = sum_x e^{-(x - c)^2 / (2 sigma^2)},
    which is at most alpha Delta^2 / (2 sigma^2) (equality at integer alpha Delta).

    Parameters
    ----------
    sigma:
        Scale sigma > 0 (for large sigma the standard deviation).
    sensitivity:
        Integer L1 = L2 sensitivity Delta >= 1 of the scalar integer query.
    """

    sigma: float
    sensitivity: int = field(default=1, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set(sigma=check.real("sigma", self.sigma, low=0.0, high=1e7, low_open=True),
                  sensitivity=_bounded_int("sensitivity", self.sensitivity, high=10 ** 6))

    def loss_parts(self) -> list[LossPart]:
        loss = self.cached(("loss",), self._loss)
        return [LossPart(loss, loss, 1)]

    def _loss(self) -> PrivacyLoss:
        s, d = self.sigma, self.sensitivity
        two_var = 2.0 * s * s
        log_z = _dg_log_norm(s)
        reach = math.sqrt(2.0 * math.log(1.0 / TAIL_MASS)) * s + 2.0
        r = int(math.ceil(reach))
        lo, hi = d - r, d + r
        # Values are multiples of the lattice: L(x) = (2x - d) * d / (2 sigma^2).
        step = 2.0 if d % 2 == 0 else 1.0
        lattice = step * d / two_var

        def fn(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            loss = ((2.0 * x - d) / step) * lattice
            return loss, -(x - d) ** 2 / two_var - log_z

        vals, pm, qm = _atoms(lo, hi, fn)
        # Each tail sum_{x > d + r} e^{-(x-d)^2/(2 s^2)} <= int_r^inf e^{-u^2/(2 s^2)} du.
        tail = s * math.sqrt(math.pi / 2.0) * math.exp(float(special.log_ndtr(-r / s))
                                                       + math.log(2.0)) / math.exp(log_z)
        # The lattice pins the grid spacing to it: worth it only while it is coarse
        # against the spread Delta / sigma of L (it then keeps every atom on a grid point).
        coarse = lattice >= 0.1 * d / s
        use_lattice = lattice if (coarse and len(vals) == hi - lo + 1) else None
        loss = AtomLoss(("discrete-gaussian", s, d, TAIL_MASS, MAX_ATOMS), vals, pm, qm,
                        p_inf=2.0 * tail * (1.0 + 1e-9), lattice=use_lattice,
                        p_inf_truncated=2.0 * tail * (1.0 + 1e-9), tight=len(vals) == hi - lo + 1)
        return loss

    def rdp_curve(self) -> PairRdp:
        def curve(alpha: np.ndarray) -> np.ndarray:
            a = np.asarray(alpha, dtype=float)
            d = self.sensitivity
            bound = a * d * d / (2.0 * self.sigma ** 2)
            v = bound + _dg_log_ratio(self.sigma, a * d) / (a - 1.0)
            v = np.minimum(np.maximum(v, 0.0), bound)
            return np.stack([v, v])
        return curve


# ----- discrete Laplace ----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class DiscreteLaplace(Mechanism):
    """Discrete Laplace (geometric) mechanism: mass (1 - r)/(1 + r) r^{|x|} on Z, r = e^{-1/t}.

    For an integer query of sensitivity Delta the dominating pair is
    (Lap_Z(Delta, t), Lap_Z(0, t)), with loss L(x) = (|x| - |x - Delta|) / t.
    Its law under P has Delta + 1 atoms (two, +-1/t, for Delta = 1; three,
    -2/t, 0, 2/t, for Delta = 2):

        L = +Delta/t       with P-mass 1/(1 + r)        (x >= Delta),
        L = (2j - Delta)/t with P-mass c r^{Delta - j}  (x = j, 0 < j < Delta; c = (1-r)/(1+r)),
        L = -Delta/t       with P-mass r^Delta/(1 + r)  (x <= 0),

    and Q-mass e^{-L} times the P-mass; both orders of the pair have this law
    (x -> Delta - x). The mechanism is (Delta / t)-DP. RDP is exact:
    log(sum_L P(L) e^{(alpha - 1) L}) / (alpha - 1).

    Parameters
    ----------
    t:
        Scale t > 0 (noise mass proportional to e^{-|x|/t}).
    sensitivity:
        Integer sensitivity Delta >= 1.
    """

    t: float
    sensitivity: int = field(default=1, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        tt = check.real("t", self.t, low=0.0, low_open=True)
        d = _bounded_int("sensitivity", self.sensitivity, high=10 ** 6)
        if d / tt > 700.0:
            raise ValueError(f"sensitivity / t must be at most 700, got t={self.t!r} "
                             f"(sensitivity {d})")
        self._set(t=tt, sensitivity=d)

    def _atoms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """(integer multiples m of the lattice, losses, log P-masses, lattice)."""
        t, d = self.t, self.sensitivity
        log_r = -1.0 / t
        log_1pr = math.log1p(math.exp(log_r))
        log_c = math.log(-math.expm1(log_r)) - log_1pr
        j = np.arange(0, d + 1, dtype=float)
        logp = log_c + (d - j) * log_r
        logp[0] = d * log_r - log_1pr
        logp[-1] = -log_1pr
        step = 2.0 if d % 2 == 0 else 1.0
        lattice = step / t
        m = (2.0 * j - d) / step
        return m, m * lattice, logp, lattice

    def loss_parts(self) -> list[LossPart]:
        _, vals, logp, lattice = self._atoms()
        loss = DiscreteLoss(vals, np.exp(logp), np.exp(logp - vals), lattice=lattice)
        return [LossPart(loss, loss, 1)]

    def rdp_curve(self) -> PairRdp:
        _, vals, logp, _ = self._atoms()
        eps = self.sensitivity / self.t

        def curve(alpha: np.ndarray) -> np.ndarray:
            a = np.asarray(alpha, dtype=float)
            v = special.logsumexp(logp + (a[..., None] - 1.0) * vals, axis=-1) / (a - 1.0)
            v = np.clip(v, 0.0, eps)
            return np.stack([v, v])
        return curve
