"""Renyi DP of one epoch of random allocation: removal at orders in (1, 2], addition at every order.

The epoch's pair (module :mod:`autoacct.subsampling.allocation`) has likelihood ratio
R = dP/dQ = (1/t) sum_j l_j, l_j iid log-normal under Q with E_Q[l] = 1, and

    (alpha - 1) D_alpha(P || Q) = log E_Q[R^alpha],   (alpha - 1) D_alpha(Q || P) = log E_Q[R^{1-alpha}].

Between the integer orders 1 and 2 the convexity of alpha -> log E_Q[R^alpha] only gives the chord
D_alpha <= D_2, which at a large noise multiplier is twice the truth near order 1 (there
D_alpha ~ alpha Var(R) / 2: the divergence of two close distributions grows like alpha times
half the chi-square one, van Erven and Harremoes 2014), and at order 2 itself the tables of
integer orders lose Var(R) to rounding when it is far below 1e-12 (log E[S^2] ~ 2 log t
carries an absolute rounding error). Here both directions are bounded at each order directly,
by the Taylor expansion of f(x) = x^gamma at x = 1 with a remainder that decreases in x, the
device of the addition direction's integer orders
(:func:`~autoacct.subsampling.allocation_moments.add_log_moments_taylor`), which the exact central
moments of R and its lower tail complete.

For gamma in (1, 2] (removal, gamma = alpha) or gamma < 0 (addition, gamma = 1 - alpha, any
alpha > 1) and K >= 1, f^(2K)(x) = gamma (gamma - 1) ... (gamma - 2K + 1) x^{gamma - 2K} is non-negative (for
gamma in (1, 2] the factors gamma - 2, ..., gamma - 2K + 1 are 2K - 2 non-positive ones; for
gamma < 0 all 2K are negative) and non-increasing in x > 0, so with T the Taylor polynomial of
f at 1 of degree 2K - 1, the remainder

    f(x) - T(x) = (x - 1)^{2K} g(x),   g(x) = int_0^1 (1 - s)^{2K-1} f^(2K)(1 + s (x - 1)) ds / (2K - 1)!,

has g >= 0 non-increasing on x > 0. For a split point x0 in (0, 1), g0 = g(x0) and
p(x) = T(x) + g0 (x - 1)^{2K}: f <= p on [x0, inf). T's terms C(gamma, i) (x - 1)^i are >= 0
for i >= 2 and x < 1 (C(gamma, i) is 0 or has the sign (-1)^i for gamma in (1, 2], and for
gamma < 0),
so p(x) >= 1 + gamma (x - 1) on [0, 1). With mu_i = E_Q[(R - 1)^i] (mu_1 = 0) and B(x0) >= Q(R < x0):

* removal (gamma in (1, 2]): on R < x0, f(R) - p(R) = (1 - R)^{2K} (g(R) - g0) <= g(0+) - g0 <=
  gamma - 1, as g(0+) = f(0) - T(0) = (gamma - 1) - sum_{2 <= i < 2K} |C(gamma, i)| (g is continuous
  at 0, f^(2K) being integrable there for gamma > 1). Hence
  E_Q[R^gamma] <= 1 + sum_{2 <= i < 2K} C(gamma, i) mu_i + g0 mu_{2K} + (gamma - 1) B(x0).
* addition (gamma = -b, b > 0): p >= 0 on [0, 1) (every term of T is), so
  E[f(R) 1{R >= x0}] <= E[p(R)], and E[R^{-b} 1{R < x0}] <= E[G^{-b} 1{G < x0}], G the geometric
  mean of the l_j, R >= G (both factors grow when R is replaced by G); under Q, log G ~ N(m, v),
  m = -1/(2 sigma^2), v = 1/(t sigma^2), so E[G^{-b} 1{G < x0}] = e^{-b m + b^2 v / 2}
  Phi((log x0 - m + b v) / sqrt(v)). Hence
  E_Q[R^{-b}] <= 1 + sum_{2 <= i < 2K} C(-b, i) mu_i + g0 mu_{2K} + that closed form.

Every (K, x0) gives a valid bound; the least over :data:`TAYLOR_ORDERS` and :data:`SPLITS` is
kept. The 1 is kept apart and log E = log1p(the rest), so that the bound stays accurate
when Var(R) = (e^{1/sigma^2} - 1) / t is far below the rounding of 1 (long epochs at a large
noise multiplier, where only this route answers).

Rounding: the split points x0 = 1 - y, y = j / 1024, are exact, and so is y; each Taylor term is a
product of at most 2K + 2 rounded factors and g0's numerator f(x0) - T(x0) a sum of at most 2K
of them and an exponential (within (|argument| + 2) roundings, the argument below 710 or the
result inf), so each is within a few thousand roundings of the magnitudes summed; a
relative :data:`_REL` = 1e-10 of those magnitudes is allowed. The lower tail B(x0) of the
removal direction is read at s = -log x0 rounded down (B increases in x0 = e^{-s}); the closed
form of the addition direction's is evaluated at its argument raised by 8 roundings of its
terms' magnitudes (Phi increases), with a relative 1e-6 for scipy's log_ndtr and exp (as
:func:`~autoacct.subsampling.allocation_moments.add_log_moments_taylor`). The sum then takes one log1p
(a relative allowance of 4 machine epsilons, :func:`~autoacct.exactness.round_up`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from autoacct.exactness import MACHINE_EPSILON, round_up

#: Orders 2K of the Taylor remainder tried (central moments up to order 8 are needed).
TAYLOR_ORDERS = (2, 4, 6, 8)
#: Split points x0 = 1 - j / 1024 (exact floats), from 0.99 down to 0.01.
SPLITS = 1.0 - np.unique(np.round(np.geomspace(10.0, 1014.0, 40))) / 1024.0
#: Relative rounding allowance of each Taylor term's magnitude (see the module docstring).
_REL = 1e-10
_U = MACHINE_EPSILON


def tail_points() -> np.ndarray:
    """s = -log x0 at the split points, rounded down, where the removal direction reads its
    lower tail bound B(e^{-s}) >= Q(R < x0) (B is non-decreasing in e^{-s})."""
    return -np.log(SPLITS) * (1.0 - 4.0 * _U)


def _taylor(gamma: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(E[p(R)] - 1, a bound on its rounding error), indexed by (K, exponent, split point):
    K over :data:`TAYLOR_ORDERS`, the exponents ``gamma``, x0 over :data:`SPLITS`.

    ``mu``: mu_i = E_Q[(R - 1)^i], i = 0..8 (mu_1 = 0)."""
    g = gamma[:, None]
    y = (1.0 - SPLITS)[None, :]
    with np.errstate(over="ignore", invalid="ignore"):
        f_x0 = np.exp(g * np.log(SPLITS)[None, :])
        mains, errs = [], []
        for order in TAYLOR_ORDERS:
            coef = g.copy()  # C(gamma, 1)
            head = 1.0 - g * y  # T(x0) = sum_i C(gamma, i) (-y)^i
            head_size = 1.0 + np.abs(g) * y
            moments = np.zeros_like(g)  # sum_{2 <= i < 2K} C(gamma, i) mu_i
            size = np.zeros_like(g)
            for i in range(2, order):
                coef = coef * (g - i + 1.0) / i
                head = head + coef * (-y) ** i
                head_size = head_size + np.abs(coef) * y ** i
                moments = moments + coef * mu[i]
                size = size + np.abs(coef * mu[i])
            g0 = np.maximum((f_x0 - head) / y ** order, 0.0)  # g >= 0 (module docstring)
            mains.append(moments + g0 * mu[order])
            errs.append(_REL * (size + (f_x0 + head_size) / y ** order * mu[order]))
    return np.stack(mains), np.stack(errs)


def _least(main: np.ndarray, err: np.ndarray, tail: np.ndarray) -> np.ndarray:
    """log E <= log1p of the least bound over K and x0: ``main`` and ``err`` from :func:`_taylor`
    (K, order, split point), ``tail`` the bound below x0 (order, split point); inf where none
    is finite."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = main + err + tail[None, :, :]
        total = np.where(np.isfinite(total), total, np.inf)
        best = np.min(total, axis=(0, 2))
        k = np.log1p(np.maximum(best, 0.0))
    return np.where(np.isfinite(k), round_up(k), np.inf)


def remove_log_moments_fractional(alpha: np.ndarray, mu: np.ndarray, log_tail: np.ndarray) -> np.ndarray:
    """Upper bounds on (alpha - 1) D_alpha(P || Q) = log E_Q[R^alpha] at orders alpha in (1, 2].

    ``mu``: the central moments E_Q[(R - 1)^i], i = 0..8; ``log_tail``: upper bounds on
    log Q(R < x0) at the split points (:func:`tail_points`). See the module docstring."""
    a = np.asarray(alpha, dtype=float)
    main, err = _taylor(a, mu)
    tail = (a - 1.0)[:, None] * np.exp(log_tail)[None, :] * (1.0 + 4.0 * _U)
    return _least(main, err, tail)


def add_log_moments_fractional(alpha: np.ndarray, mu: np.ndarray, steps: int, sigma: float) -> np.ndarray:
    """Upper bounds on (alpha - 1) D_alpha(Q || P) = log E_Q[R^{1-alpha}] at orders alpha > 1
    of an epoch of ``steps`` = t steps at noise multiplier ``sigma``; ``mu`` as in
    :func:`remove_log_moments_fractional`. See the module docstring."""
    a = np.asarray(alpha, dtype=float)
    main, err = _taylor(1.0 - a, mu)
    b = (a - 1.0)[:, None]
    m, v = -1.0 / (2.0 * sigma * sigma), 1.0 / (steps * sigma * sigma)
    w = tail_points()[None, :]  # at most -log x0: the closed form increases in x0
    sd = math.sqrt(v)
    with np.errstate(over="ignore", under="ignore"):
        z = (-w - m + b * v) / sd
        z = z + 8.0 * _U * ((w + abs(m) + b * v) / sd + np.abs(z))
        log_tail = -b * m + b * b * v / 2.0 + special.log_ndtr(z)
        tail = np.exp(log_tail) * (1.0 + 1e-6) + 1e-300
    return _least(main, err, tail)
