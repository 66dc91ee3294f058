"""Log-space numerics with running error bounds, and the interpolation of log-moments, shared by the
subsampled RDP bounds.

Notation. A Renyi divergence of order alpha > 1 is
D_alpha(P || Q) = log(E_Q[(dP/dQ)^alpha]) / (alpha - 1); we call
K(alpha) = (alpha - 1) D_alpha the log-moment. K is convex in alpha with
K(1) = 0 (Hoelder), which is what lets a bound known at the integers be
interpolated to fractional orders.

Soundness. Every truncated series carries a remainder bound, and every
floating-point evaluation carries a running error bound (``UNIT_ROUNDOFF`` per operation,
scaled by the magnitudes involved); the bound is added before the result is
rounded up. When double precision cannot resolve the answer to relative
``REL_TOL`` (the log-moment of the sampled Gaussian is then tiny against the
rounding of the terms that sum to it), the computation is redone in mpmath at a
precision chosen from that answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

import mpmath
import numpy as np

from autoacct.exactness import MACHINE_EPSILON, round_up

#: A float, or an array of them elementwise.
_Real = TypeVar("_Real", float, np.ndarray)
#: Bound on the relative error of one correctly rounded double operation (with slack).
UNIT_ROUNDOFF = MACHINE_EPSILON
#: Relative accuracy below which the double-precision result is accepted.
REL_TOL = 1e-10
#: Convergence base of the Cohen-Rodriguez Villegas-Zagier acceleration.
CRVZ_RHO = 3.0 + math.sqrt(8.0)


# ----------------------------------------------------------------------------------
# small numerical helpers
# ----------------------------------------------------------------------------------

def lse(x: np.ndarray) -> float:
    """log(sum(exp(x))) of a 1-d array, with -inf entries allowed; -inf when empty.

    Its rounding error is at most ``lse_err(x.size, m, result)``.
    """
    if x.size == 0:
        return -math.inf
    m = float(np.max(x))
    if not math.isfinite(m):
        return m
    with np.errstate(under="ignore"):
        return m + math.log(float(np.sum(np.exp(x - m))))


def lse_err(n: int, m: _Real, value: _Real) -> _Real:
    """Bound on the absolute rounding error of :func:`lse` on n terms with maximum m (also for
    arrays of maxima and values, one log-sum-exp each).

    The n exponentials and their sum cost a relative (n + 2) UNIT_ROUNDOFF, the logarithm and
    the final addition one rounding each of the magnitudes involved.
    """
    return (n + 2) * UNIT_ROUNDOFF + 2.0 * UNIT_ROUNDOFF * (abs(m) + abs(value))


def logaddexp_up(x: float, y: float) -> float:
    """An upper bound on log(e^x + e^y) computed in floating point."""
    if x < y:
        x, y = y, x
    if x == -math.inf:
        return x
    d = y - x
    t = math.log1p(math.exp(d))
    value = x + t
    err = 2.0 * UNIT_ROUNDOFF * (abs(x) + abs(value)) + 2.0 * UNIT_ROUNDOFF * (2.0 + abs(d)) * t
    return value + err


def log1p_q_expm1_up(q: float, x: float) -> float:
    """An upper bound on log(1 + q (e^x - 1)) for 0 < q <= 1 and 0 <= x <= inf: the loss x of
    a base after Poisson subsampling at rate q, and the amplified eps-DP of an eps-DP base
    (for x < 0, 1 + q expm1(x) cancels and the roundoffs below do not bound the error).

    Up to x = 700 as log1p(q expm1(x)), a few roundoffs relative to the result; past it, where
    e^x overflows, as x + log q + log1p((1 - q) e^{-x} / q), whose two large terms may nearly
    cancel: a few roundoffs of |x| + |log q|. Each is added (and 1e-300)."""
    if x <= _EXPM1_MAX:
        value = math.log1p(q * math.expm1(x))
        # (and 1e-300 for a product q (e^x - 1) among the subnormals, where roundoffs are absolute)
        return value + 4.0 * UNIT_ROUNDOFF * abs(value) + 1e-300
    if math.isinf(x):
        return x
    log_q = math.log(q)
    value = x + log_q + math.log1p((1.0 - q) * math.exp(-x) / q)
    return value + 4.0 * UNIT_ROUNDOFF * (abs(x) + abs(log_q) + abs(value))


#: Largest argument of math.expm1 that does not overflow (with a margin).
_EXPM1_MAX = 700.0


def log1pexp(x: float) -> float:
    """log(1 + e^x), without overflow for large x or loss for very negative x."""
    if x > 0.0:
        return x + math.log1p(math.exp(-x)) if math.isfinite(x) else x
    return math.log1p(math.exp(x))


def log_expm1(x: np.ndarray) -> np.ndarray:
    """log(e^x - 1) elementwise for x >= 0 (-inf at x = 0, x at x = inf).

    As x + log(1 - e^{-x}), with 1 - e^{-x} = -expm1(-x) to full relative precision at every
    x >= 0: off by a few roundings of |x| + |log(e^x - 1)|, with no branch (a branch on
    x > 1 indexed the array twice, the larger part of the cost on large arrays).
    """
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return x + np.log(-np.expm1(-x))


def mp_round_up(x: mpmath.mpf) -> float:
    """The smallest double that is >= the mpmath number x >= 0."""
    f = float(x)
    if mpmath.mpf(f) < x:
        f = float(np.nextafter(f, math.inf))
    return f


def log_binom_table(alpha: float, m: int) -> tuple[np.ndarray, np.ndarray]:
    """log|C(alpha, i)| for i = 0..m-1, and a bound on the absolute error of each.

    Built from log|C(alpha, i+1)| = log|C(alpha, i)| + log|alpha - i| - log(i + 1).
    ``alpha - i`` is computed with relative error at most one rounding, so each step
    costs at most 2 UNIT_ROUNDOFF (|log|alpha - i|| + log(i+1) + 1), and the running sum one
    rounding of its partial value.
    """
    k = np.arange(m - 1, dtype=float)
    with np.errstate(divide="ignore"):
        la = np.log(np.abs(alpha - k))
    step = la - np.log1p(k)
    logc = np.concatenate(([0.0], np.cumsum(step)))
    step_err = 2.0 * UNIT_ROUNDOFF * (np.abs(la) + np.log1p(k) + 1.0)
    err = np.concatenate(([0.0], np.cumsum(step_err + UNIT_ROUNDOFF * np.abs(logc[1:]))))
    return logc, err


def crvz_weights(n: int) -> tuple[np.ndarray, float]:
    """Weights w_k and d_n of the Cohen-Rodriguez Villegas-Zagier acceleration.

    For S = sum_{k>=0} (-1)^k a_k with a_k = int_0^1 t^k dnu(t), nu a positive
    measure, S_n = sum_{k<n} w_k a_k satisfies |S - S_n| <= S / d_n, with
    d_n = ((3 + sqrt 8)^n + (3 + sqrt 8)^-n) / 2 (their Proposition 1). The weights
    carry the alternating sign and lie in [-1, 1].
    """
    d = CRVZ_RHO ** n
    d = (d + 1.0 / d) / 2.0
    b, c = -1.0, -d
    w = np.empty(n)
    for k in range(n):
        c = b - c
        w[k] = c
        b = (k + n) * (k - n) * b / ((k + 0.5) * (k + 1.0))
    return w / d, d


def mp_crvz_weights(n: int) -> tuple[list[mpmath.mpf], mpmath.mpf]:
    """:func:`crvz_weights` at the current mpmath precision."""
    d = (3 + mpmath.sqrt(8)) ** n
    d = (d + 1 / d) / 2
    b, c = mpmath.mpf(-1), -d
    w = []
    for k in range(n):
        c = b - c
        w.append(c / d)
        b = (k + n) * (k - n) * b / ((k + mpmath.mpf(0.5)) * (k + 1))
    return w, d


def eval_rdp(rdp: Callable[[np.ndarray], np.ndarray], orders: np.ndarray) -> np.ndarray:
    """The base curve at the given orders, checked to be >= 0 (inf allowed)."""
    vals: np.ndarray | None
    try:
        vals = np.asarray(rdp(orders.copy()), dtype=float)
    except (TypeError, ValueError):
        vals = None
    if vals is None or vals.shape != orders.shape:
        vals = np.array([float(np.asarray(rdp(np.array(float(o))), dtype=float)) for o in orders])
    bad = np.isnan(vals) | (vals < 0.0)
    if np.any(bad):
        o = orders[np.flatnonzero(bad)[0]]
        raise ValueError(f"rdp must return a non-negative Renyi epsilon at every order, "
                         f"got {vals[np.flatnonzero(bad)[0]]!r} at alpha={o!r}")
    return vals


def interpolate_log_moments(log_moment: Callable[[int], float], a: np.ndarray) -> np.ndarray:
    """Renyi epsilon at orders ``a`` from upper bounds on K(n) = (n-1) eps(n) at integers.

    For n < alpha < n + 1 convexity of K with K(1) = 0 gives
    K(alpha) <= (n + 1 - alpha) K(n) + (alpha - n) K(n + 1). At alpha = 1 the Renyi epsilon is
    the KL divergence, the slope K'(1), which convexity bounds by the chord's, K(2) - K(1) = K(2)
    (the limit of the bound above as alpha falls to 1).
    """
    cache: dict[int, float] = {}

    def k_of(n: int) -> float:
        if n == 1:
            return 0.0
        if n not in cache:
            cache[n] = log_moment(n)
        return cache[n]

    out = np.empty(a.shape, dtype=float)
    for idx, x in np.ndenumerate(a):
        x = float(x)
        if x == 1.0:
            val = k_of(2)
        elif x.is_integer():
            val = k_of(int(x)) / (x - 1.0)
        else:
            n = math.floor(x)
            k_lo, k_hi = k_of(n), k_of(n + 1)
            val = ((n + 1 - x) * k_lo + (x - n) * k_hi) / (x - 1.0)
        out[idx] = round_up(val) if math.isfinite(val) else math.inf
    return out


def orders_needed(a: np.ndarray) -> np.ndarray:
    """Integer orders 2..max(ceil(alpha)) as floats."""
    top = max(2, math.ceil(float(np.max(a))))
    return np.arange(2, top + 1, dtype=float)


def convexity_log_moment(q: float, k_base: float) -> float:
    """log(1 + q (e^K - 1)): joint convexity of (P, Q) -> int p^alpha q^(1-alpha).

    Both subsampled pairs are q-mixtures of a pair bounded by the base curve with
    an identical pair, so their log-moment is at most this (and at most K).
    """
    if k_base == math.inf:
        return math.inf
    if k_base <= 0.0:
        return 0.0
    return log1pexp(math.log(q) + float(log_expm1(np.array([k_base]))[0]))
