"""The mass that the windows of random allocation's epoch laws drop, bounded.

The epoch's laws (:mod:`autoacct.subsampling.allocation_pld`) are powers of one summand's
lattice vector, each partial sum of j summands kept on a window of lattice indices; what falls
outside is dropped. The upper laws count the dropped mass at +inf, the lower laws allow for it in
their likelihood ratios, so both need it bounded from above: here, by the union over every
window and every copy of it, each window bounded by what its product cut (read off the computed
product, ``allocation_pld._Vec.dropped``), by Chernoff's inequality on the vector itself or from
the summands' log-normal law, whichever is least.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from autoacct.exactness import MACHINE_EPSILON
from autoacct.subsampling.allocation_moments import central_moments, lower_tail_log_bound

_U = MACHINE_EPSILON
#: A window's side whose Chernoff bound is below this is not also bounded from the summands'
#: own law (:func:`dropped_mass`: the exact moments that bound takes cost 10-30 ms a window).
_NEGLIGIBLE_SIDE = 1e-25


def _log_mgf(masses: np.ndarray, thetas: np.ndarray) -> np.ndarray:
    """Upper bounds on log M(theta) = log sum_k masses_k e^{theta k} (lattice indices k = 0, 1, ...).

    A log-sum-exp about the largest exponent: each exponent theta k + log m_k is off by a few
    roundings of its magnitude, each exponential by its argument's rounding times its size, the
    sum of K terms by K roundings and the logarithm by one; (4 E + 2 K + 8) u, E the largest
    magnitude of an exponent, covers them."""
    ks = np.arange(len(masses), dtype=float)
    with np.errstate(divide="ignore"):
        log_m = np.log(masses)
    live = np.isfinite(log_m)
    ks, log_m = ks[live], log_m[live]
    out = np.empty(len(thetas))
    for i, theta in enumerate(thetas):
        e = log_m + theta * ks
        top = float(np.max(e))
        size = float(np.max(np.abs(log_m))) + abs(theta) * float(ks[-1]) + abs(top)
        out[i] = top + math.log(float(np.sum(np.exp(e - top)))) + (4.0 * size + 2.0 * len(ks) + 8.0) * _U
    return out


@lru_cache(maxsize=256)
def _central_moments(j: int, sigma: float) -> np.ndarray:
    """:func:`~autoacct.subsampling.allocation_moments.central_moments` up to order 16, kept for
    the windows that the lower and the upper laws share (read only)."""
    return central_moments(j, sigma, 16)


def _lognormal_side(j: int, b: float, sign: float, sigma: float, d: float, hats: bool) -> float:
    """A bound on mass{sign N_j >= b} from the summands' own law (no vector): a sum of j lattice
    indices, of cells (k_i d < l_i <= (k_i + 1) d) or of hats (one of the ends of l_i's cell),
    has N_j <= c only if S_j = sum l_i <= (c + j) d, and N_j >= a only if S_j > (a - j) d for
    hats, S_j > a d for cells. Below: :func:`~autoacct.subsampling.allocation_moments.
    lower_tail_log_bound` (the geometric mean's and Chernoff's bounds); above: Markov's
    inequality E[(S_j/j - 1)^2r] / (x - 1)^2r at S_j / j > x, r up to 8, on the exact central
    moments of the mean of j log-normals (:func:`~autoacct.subsampling.allocation_moments.central_moments`)."""
    if sign < 0:
        x = (j - b) * d / j
        return float(np.exp(lower_tail_log_bound(j, sigma, np.array([-math.log(x)]))[0])) if 0.0 < x < 1.0 else 1.0
    x = (b - (j if hats else 0)) * d / j
    if x <= 1.0:
        return 1.0
    mu = _central_moments(j, sigma)
    r = np.arange(1, 9)
    with np.errstate(over="ignore", divide="ignore"):
        log_bounds = np.log(mu[2 * r]) - 2 * r * math.log(x - 1.0)
    return float(np.exp(min(float(np.min(log_bounds)), 0.0)))


def dropped_mass(masses: np.ndarray, windows: list[tuple[int, int, float, int, float]], sigma: float | None,
                 d: float, hats: bool, total: tuple[np.ndarray, int, int, int, float] | None = None) -> float:
    """An upper bound on the mass that the windows (j, first, last, copies, cut) of the binary
    powering (``allocation_pld._power``) drop from a power of a one-summand vector whose true
    entries are at most ``masses`` (lattice indices 0, 1, ...; a sub-probability): cell masses
    m, or with ``hats`` the hat masses w (spacing ``d``, noise multiplier ``sigma``); and on the
    same event's P-mass where the powered vector is the record's other summands (Q-distributed
    under P too). ``total`` = (head, j, first, last, cut) adds the window of a sum of one draw
    from the masses (at most) ``head`` and j - 1 from ``masses``.

    The powered vector is the law of the sum restricted to the event that every copy of every
    partial sum of j summands stayed in its window, so the union bound counts each window
    ``copies`` times; in an order that puts each partial sum after its parts, the first window
    to fail is one whose parts all held, whose mass is the window's ``cut``: the bound on what
    its product dropped, read off the computed product and its error bounds (math.inf where
    there is none). That is the bound where the summands' heavy right tail decides, which the
    two bounds below miss by orders (two large summands: 8.8e-15 against about 3e-17 for a
    window of two at t = 1e4, sigma = 1). Each side of a window otherwise takes the lesser of
    two bounds: Chernoff's on the
    vector, for a sum N_j of j iid draws and every theta > 0 (Markov's inequality for
    e^{theta N_j}), mass{N_j >= a} <= M(theta)^j e^{-theta a} and mass{N_j <= c} <=
    M(-theta)^j e^{theta c}, M of :func:`_log_mgf` (with ``head``'s M for one factor); and the
    summands' own law's (:func:`_lognormal_side`, not for ``total``, nor where ``sigma`` is None:
    the vector alone), the better one where two large summands are what it takes (Chernoff's
    is poor against a heavy right tail). The thetas are a shared geometric grid (ratio 2) from
    1/64 of the least side's normal-approximation optimum |a - j mean| / (j var) (or 1/K,
    below) to twice the largest."""
    ks = np.arange(len(masses), dtype=float)
    mass = float(np.sum(masses))
    mean = float(np.sum(ks * masses)) / mass
    var = max(float(np.sum((ks - mean) ** 2 * masses)) / mass, 1e-300)
    # Each side as (j, b, sign, copies, head) for mass{sign N_j >= b}: N_j <= first - 1 or
    # N_j >= last + 1.
    marked = [(j, first, last, copies, cut, False) for j, first, last, copies, cut in windows]
    if total is not None:
        marked.append((total[1], total[2], total[3], 1, total[4], True))
    # Each window's sides as (j, b, sign, window) for mass{sign N_j >= b}: N_j <= first - 1 or
    # N_j >= last + 1.
    sides = []
    for i, (j, first, last, _, _, _) in enumerate(marked):
        if first > 0:
            sides.append((j, 1.0 - first, -1.0, i))
        if math.isfinite(last):
            sides.append((j, last + 1.0, 1.0, i))
    if not sides:
        return 0.0
    optimum = np.array([(b - j * sign * mean) / (j * var) for j, b, sign, _ in sides])
    # Down to 1/K (K the summand's last index) for the heavy right tail, where the summand's
    # largest values decide; past theta K = 1400 its last entry's e^{theta K} swamps any use.
    size = len(masses)
    useful = optimum[optimum > 0.0]
    lo = min(float(np.min(useful, initial=1.0)) / 64.0, 1.0 / size)
    hi = max(min(float(np.max(useful, initial=1.0)) * 2.0, 1400.0 / size), lo)
    thetas = lo * 2.0 ** np.arange(math.ceil(math.log2(hi / lo)) + 1)
    logs = {}
    for sign in {side[2] for side in sides}:
        logs[sign, False] = _log_mgf(masses, sign * thetas)
        if total is not None:
            logs[sign, True] = _log_mgf(total[0], sign * thetas)
    analytic = [0.0] * len(marked)
    for (j, b, sign, i), opt in zip(sides, optimum):
        head = marked[i][5]
        side = 1.0
        if opt > 0.0:
            log_m = logs[sign, False]
            head_log = logs[sign, True] if head else log_m
            log_mgf = head_log + (j - 1) * log_m
            size_of = np.abs(head_log) + (j - 1) * np.abs(log_m)
            exponents = log_mgf - thetas * b + 4.0 * _U * (size_of + thetas * abs(b))
            best = min(float(np.min(exponents)), 0.0)
            side = math.exp(best) * (1.0 + 4.0 * _U * (abs(best) + 1.0))
        if sigma is not None and not head and side > _NEGLIGIBLE_SIDE:
            side = min(side, _lognormal_side(j, b, sign, sigma, d, hats))
        analytic[i] += min(side, 1.0)
    bound = sum(copies * min(found, cut, 1.0) for found, (_, _, _, copies, cut, _) in zip(analytic, marked))
    return min(bound * (1.0 + 1e-9), 1.0)
