"""Grid: the lattice spacing h and each component's range, chosen from the mechanism.

The user never picks h or the domain. Connect-the-dots moves each step's loss
by a mean-preserving (in e^{-L}) split across one cell: a bias of at most h^2/8
and an added variance of at most h^2/4 per step. Adding variance v to the
composed loss moves eps by about v (1 + lam) / 2, where lam is the rate at which
-log delta grows near eps: for K discretised steps about K h^2 (1 + lam) / 8.
For the normal approximation of the composed loss (mean m, variance V) lam is
z / sqrt(V) at eps = m + z sqrt(V). For laws without atoms the exponent
minimising K(lam) - lam eps of their cumulant generating function is taken
instead where it is smaller: for subsampled laws, whose right tails are heavy,
it is a few times smaller. Light tails keep the normal rate, which errs
towards coarse grids. The rate is kept above a quarter of the normal one: where
they differ more (few steps, small eps) the grid would get coarse enough for
the lower bound's error, which this model does not describe (it comes from the
right tail), to take over. h is chosen so that the error is half of the
tolerance when no law has atoms: the lower bound (see :mod:`discretize`) then
moves by about as much again, so the certified gap stays below the tolerance.
Atoms between grid points cost the lower bound a first-order term, so with
atoms the share is a quarter (and lam the normal one). The
accountant checks the result afterwards against its certified lower bound and
refines h if the model was optimistic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from autoacct.limits import max_points
from autoacct.losses import SIZING_TILTS, PrivacyLoss


def choose_spacing(parts: Sequence[tuple[PrivacyLoss, int]], eps_scale: float, tol: float) -> float:
    """Lattice spacing h for composing ``parts`` (law, count) to relative accuracy ``tol``.

    When every part is a discrete law on one common lattice, that lattice is the
    grid: the discrete PLDs are then exact and no finer grid can help.
    """
    common = _common_lattice(parts)
    if common is not None:
        return common
    step_sds = [math.sqrt(loss.moments[1]) for loss, _ in parts if loss.moments[1] > 0]
    if not step_sds:
        # Every law is a point mass: no grid resolves anything finer than another.
        return _snap(parts, _MAX_SPACING)
    k_tot = sum(k for _, k in parts)
    mean = sum(k * loss.moments[0] for loss, k in parts)
    var = sum(k * loss.moments[1] for loss, k in parts)
    sd = math.sqrt(var)
    scale = max(eps_scale, 0.05 * sd, 1e-6)
    # The rate at which delta falls near the answer: the normal approximation's (at least
    # that at one sd above the mean), or for laws without atoms the cumulants' when smaller,
    # but not below a quarter of it (see the module docstring).
    rate = max(scale - mean, sd) / var
    atoms = any(loss.has_atoms for loss, _ in parts)
    if not atoms:
        heavy = decay_rate(np.asarray(sum(k * loss.sizing_cgf for loss, k in parts)), scale, rate)
        rate = max(min(rate, max(heavy, rate / 4.0)), 1.0 / sd)
    share = 0.25 if atoms else 0.5
    h = math.sqrt(8.0 * share * tol * scale / (k_tot * (1.0 + rate)))
    h = max(min(h, 2.0 * min(step_sds), _MAX_SPACING), _MIN_SPACING)
    h = 2.0 ** (math.floor(4.0 * math.log2(h)) / 4.0)
    if any(loss.merged_lower for loss, _ in parts):
        # The atoms' weights are tilted at the rate of the laws' own cumulants, which for
        # subsampled laws is a few times below the normal one.
        cgf = np.asarray(sum(k * loss.sizing_cgf for loss, k in parts))
        merged = _merged_spacing(parts, h, tol * scale, min(rate, decay_rate(cgf, scale, rate)))
        if merged < h:
            return merged
    return _snap(parts, h)


def _merged_spacing(parts: Sequence[tuple[PrivacyLoss, int]], h: float, budget: float, rate: float) -> float:
    """The coarsest spacing, at most h, at which merging the atoms of the ``merged_lower`` parts
    onto the lattice (:mod:`~autoacct.pld.merged`) costs the lower bound at most
    _MERGED_SHARE of ``budget`` (tol times the answer's scale).

    A lower law whose log moment generating function at the rate lam falls short of the
    law's by D moves eps by about D / lam a step (delta falls like e^{-lam eps} near the
    answer). Merging moves an atom at v down to the lattice point g at or below it, by
    d = v - g, and shares of the atoms below g up to g, those that keep E_P[e^{-L}]
    (Taylor-expanded, the two moves' first-order terms cancel and D is about lam^2 / 2 times
    the mean of d times the distance the shares move): :func:`_merge_shortfall` costs each
    atom so. For a law of a few heavy atoms the cost changes widely between spacings a few
    per cent apart, so _MERGED_CANDIDATES spacings from h down to that at which rounding every
    atom down would meet the budget are tried, on the heaviest atoms.
    """
    merged = [(loss, k) for loss, k in parts if loss.merged_lower]
    target = _MERGED_SHARE * budget
    # Rounding down costs at most the spacing a step: below this no candidate is needed.
    finest = max(min(h, target / sum(k for _, k in merged)), _MIN_SPACING)
    candidates = h * (finest / h) ** (np.arange(_MERGED_CANDIDATES + 1) / _MERGED_CANDIDATES)
    lam = max(min(rate, _MAX_TILT), 1e-6)
    cost = np.zeros(candidates.size)
    for loss, k in merged:
        v, p = loss.atoms
        if len(v) == 0:
            continue
        v = np.asarray(v, dtype=float) - loss.value_error
        w = p * np.exp(lam * (v - float(v.max())))
        if len(v) > _MAX_MERGED_ATOMS:
            heavy = np.argsort(w)[-_MAX_MERGED_ATOMS:]
            v, p = v[heavy], p[heavy]
        order = np.argsort(-v)
        cost += k * _merge_shortfall(v[order], p[order], candidates[:, None], lam) / lam
    ok = np.flatnonzero(cost <= target)
    return float(candidates[ok[0]] if ok.size else candidates[-1])


def _merge_shortfall(v: np.ndarray, p: np.ndarray, h: np.ndarray, lam: float) -> np.ndarray:
    """-log of the ratio of the merged law's moment generating function at lam to the law's,
    per spacing of the column h, for atoms at v (decreasing) with P-masses p; see
    :func:`_merged_spacing`.

    Atom i, moved down to g by d, needs the moment p_i (1 - e^{-d}) in the variable
    e^{g - L} - 1 from below g; it takes the atoms below g nearest first (prefix sums give
    each span's moment and its gain in the moment generating function at lam, and a bisection
    the span). Each atom takes them as if alone, which for atoms dense in a cell understates
    how far down their run reaches. An atom that all the atoms below g cannot bring down (the
    lowest) is lifted instead to g + h by a share of the atom next above, where that atom
    suffices (:func:`~autoacct.pld.merged._place_last`): the atom gains, the share loses.
    """
    top = float(v[0])
    g = np.floor(v / h) * h
    d = v - g
    n = v.size
    with np.errstate(over="ignore", invalid="ignore"):
        e_v = np.exp(lam * (v - top))
        e_g = np.exp(lam * (g - top))
        # Prefix sums over atoms 0..j-1: P-mass, Q-mass relative to e^{-top}, and tilted mass.
        pre_p = np.concatenate(([0.0], np.cumsum(p)))
        pre_q = np.concatenate(([0.0], np.cumsum(p * np.exp(top - v))))
        pre_w = np.concatenate(([0.0], np.cumsum(p * e_v)))
        first = np.searchsorted(-v, -g.ravel(), side="right").reshape(g.shape)
        need = p[None, :] * -np.expm1(-d)
        scale = np.exp(g - top)

        def moment(j: np.ndarray) -> np.ndarray:
            return scale * (pre_q[j] - pre_q[first]) - (pre_p[j] - pre_p[first])
        lo, hi = first, np.full(g.shape, n)
        # The smallest j with moment(j) >= need (n where all atoms below g fall short).
        for _ in range(max(int(n).bit_length(), 1)):
            mid = (lo + hi) // 2
            short = moment(mid) < need
            lo = np.where(short, mid + 1, lo)
            hi = np.where(short, hi, mid)
        j = np.minimum(hi, n)
        whole = np.maximum(j - 1, first)
        gain = e_g * (pre_p[whole] - pre_p[first]) - (pre_w[whole] - pre_w[first])
        # The last atom taken gives only the part of its mass the moment still needs.
        last = np.minimum(whole, n - 1)
        rest = need - moment(whole)
        unit = np.expm1(g - v[last])
        part = np.where((j > first) & (j <= n) & (unit > 0), np.clip(rest / unit, 0.0, p[last]), 0.0)
        gain = gain + part * (e_g - e_v[last])
        term = p[None, :] * (e_v - e_g) - gain
        # Lifted to g + h by the share s of the atom above (at v_a > g + h) that keeps E_P[e^{-L}]:
        # in X = e^{top - L}, s (X(g + h) - X(v_a)) = p_i (X(v_i) - X(g + h)).
        up = g + h
        above = np.concatenate(([np.nan], v[:-1]))
        x_v, x_up, x_a = np.exp(top - v), np.exp(top - up), np.exp(top - above)
        share = p[None, :] * (x_v - x_up) / (x_up - x_a)
        lifted = share * (np.exp(lam * (above - top)) - np.exp(lam * (up - top))) - p[None, :] * (
            np.exp(lam * (up - top)) - e_v)
        short = moment(np.full(g.shape, n)) < need
        lift = short & (above > up) & (share <= np.concatenate(([0.0], p[:-1]))[None, :])
        term = np.where(lift, np.maximum(lifted, 0.0), term)
        change = term.sum(axis=1) / max(float(pre_w[-1]), 1e-300)
    change = np.where(np.isfinite(change), change, 1.0)
    return -np.log1p(-np.clip(change, 0.0, 1.0 - 1e-16))


def decay_rate(cgf: np.ndarray, eps: float, normal_rate: float) -> float:
    """The exponent lam >= 0 minimising K(lam) - lam eps, from K tabulated at
    :data:`~autoacct.losses.SIZING_TILTS` (the vertex of the parabola through the
    smallest value and its neighbours). Near eps, -log delta(eps) grows at about this
    rate. Past the table's last exponent, ``normal_rate`` (that of the normal
    approximation) is taken if it is larger.
    """
    f = np.asarray(cgf, dtype=float) - SIZING_TILTS * eps
    if not np.all(np.isfinite(f)):
        return max(normal_rate, 0.0)
    i = int(np.argmin(f))
    if i == 0:
        return 0.0
    if i == f.size - 1:
        return max(float(SIZING_TILTS[i]), normal_rate)
    x, y = SIZING_TILTS[i - 1:i + 2], f[i - 1:i + 2]
    d1 = (y[1] - y[0]) / (x[1] - x[0])
    d2 = (y[2] - y[1]) / (x[2] - x[1])
    curv = (d2 - d1) / (x[2] - x[0])
    vertex = 0.5 * (x[0] + x[1]) - d1 / (2.0 * curv) if curv > 0 else x[1]
    return float(min(max(vertex, x[0]), x[2]))


def _common_lattice(parts: Sequence[tuple[PrivacyLoss, int]]) -> float | None:
    """The lattice shared by all parts when all are purely atomic on one lattice."""
    lattices = {loss.lattice for loss, _ in parts}
    if len(lattices) != 1 or None in lattices:
        return None
    if not all(getattr(loss, "purely_atomic", False) for loss, _ in parts):
        return None
    (lattice,) = lattices
    return None if lattice is None else float(lattice)


def _snap(parts: Sequence[tuple[PrivacyLoss, int]], h: float) -> float:
    """A spacing at most h that puts the parts' atoms on or near grid points.

    With a lattice part, the candidates are its divisors ell/m (the most-composed
    lattice part lies exactly on the grid); otherwise spacings just below h. Among
    the candidates the one that leaves the least atom mass, weighted by count and by
    distance to the nearest grid point, is chosen: an atom between grid points
    costs the lower bound a first-order term.
    """
    # (a lattice far coarser than h, a law whose atoms stand farther apart than floats count
    # cells, is no help: its divisors are not tried)
    lattice_parts = [(k, loss.lattice) for loss, k in parts if loss.lattice and loss.lattice / h < _MAX_DIVISOR]
    if lattice_parts:
        _, ell = max(lattice_parts)
        # (at least 1: a lattice finer than h is itself the coarsest spacing that holds its atoms)
        m0 = max(math.ceil(ell / h - 1e-9), 1)
        candidates = ell / (m0 + np.arange(min(2 * m0, _MAX_CANDIDATES) + 1))
    else:
        candidates = h * (1.0 - np.arange(0, 120) / 240.0)
    values, weights = [], []
    for loss, k in parts:
        v, w = loss.atoms
        # (an atom of negligible mass, such as the Poisson remove pair's at log(1 - q) where
        # the base's mass at -inf is a truncation's 1e-30, moves no bound: it chooses nothing)
        heavy = k * w > _NEGLIGIBLE_ATOM
        if 0 < len(v) <= _MAX_ATOMS and np.any(heavy):
            values.append(v[heavy])
            weights.append(k * w[heavy])
    if not values:
        return float(candidates[0])
    v = np.concatenate(values)
    w = np.concatenate(weights)
    r = v[None, :] / candidates[:, None]
    cost = (np.abs(r - np.round(r)) * w[None, :]).sum(axis=1) * candidates
    best = float(np.min(cost, initial=math.inf, where=np.isfinite(cost)))
    if not math.isfinite(best):
        # Atoms whose weights or positions leave the floating-point range: none is near a point.
        return float(candidates[0])
    # The coarsest candidate within a whisker of the best: coarser grids are cheaper.
    return float(candidates[np.flatnonzero(cost <= best * 1.05 + 1e-300)[0]])


#: Atoms whose P-mass times their count is at most this are not snapped to (see :func:`_snap`).
_NEGLIGIBLE_ATOM = 1e-20
#: Share of the tolerance the merged atoms may take from the lower bound (the upper bound's
#: error, second order, is far smaller at the spacings this gives).
_MERGED_SHARE = 0.6
#: Spacings tried for laws whose atoms are merged, and the heaviest atoms weighed.
_MERGED_CANDIDATES = 128
_MAX_MERGED_ATOMS = 256
#: Largest tilt applied to the atoms' weights (beyond it the normal rate is not a guide).
_MAX_TILT = 200.0
#: Lattices at most this many times h are snapped to (a divisor of them is the grid).
_MAX_DIVISOR = 2.0 ** 40
#: Coarsest and finest spacings ever used (the finest only matters for nearly
#: degenerate laws, whose loss barely varies).
_MAX_SPACING = 0.05
_MIN_SPACING = 1e-12
#: Most lattice divisors compared when snapping.
_MAX_CANDIDATES = 240
#: Laws with more atoms than this are treated as continuous when snapping.
_MAX_ATOMS = 64


#: Most cells one law is discretised on: memory stays bounded whatever the query.
MAX_CELLS = 1 << 22
#: Working bytes and seconds per cell of discretising a law (upper and lower PLDs; the
#: upper one alone). The bytes: measured with tracemalloc at 2^18 to 2^20 cells (212 and 72
#: bytes), rounded up. The seconds, for a Poisson-subsampled Gaussian on a 2-core AMD EPYC
#: with three other workers beside it: 108 to 205 ns (both PLDs, the lower one's first round
#: included) and 32 to 69 ns (upper) per cell from 2^10 to 2^20 cells; 144 ns over the
#: 3,000 laws of a heterogeneous schedule (benchmarks/hetero.py). Rounded up to twice the
#: worst, as the FFT's rates (:mod:`autoacct.pld.compose`), so that a prediction stays
#: above the step's own time. (At 2 and 0.6 microseconds, measured on an older machine,
#: predictions ran 9 to 14 times these steps' time here, and the default budget stopped
#: the exact composition of 2,000 distinct DP-SGD steps, 1.6 s of CPU, before it began.)
#: They size the grid to the memory budget and predict a step's time (see
#: :mod:`autoacct.limits`). A law costing more per cell than a closed-form one (the
#: sampled-without-replacement mixture, 3 times) says so by its ``cell_cost``, which
#: multiplies these.
CELL_BYTES = 224.0
CELL_SECONDS = 4e-7
UPPER_CELL_BYTES = 80.0
UPPER_CELL_SECONDS = 1.2e-7


def max_cells() -> int:
    """Most cells one law may be discretised on: MAX_CELLS, or fewer when the memory budget
    affords fewer (see :func:`autoacct.limits.max_points`)."""
    return max_points(CELL_BYTES, MAX_CELLS)


def index_range(loss: PrivacyLoss, h: float, eta: float) -> tuple[int, int]:
    """Grid indices covering ``loss`` up to P-mass ``eta`` on each side, with one spare cell each side.

    At most :func:`max_cells` cells, centred on the bulk of the law (its range at P-mass 1e-16 per
    side): a law whose bulk is one atom while its far tails are wide (a discrete Gaussian
    with sigma well below 1) would otherwise ask for petabytes. The discretisers count the
    mass outside the range on the safe side (the upper PLD at +inf, the lower one not at
    all), so the bounds stay valid; the accuracy check reports what this costs.

    The centre of the bulk's range is not where its mass is: where the centred window leaves
    more than ``eta`` of P-mass above it, the window ends at the range's top instead, unless that
    leaves more below. Mass above goes to +inf in the upper PLD, raising delta at every eps by
    it; mass below only moves up to the window's first point, which changes delta only below
    that point. (BinaryCountingExponential(5, 20, 8)'s backward law, atoms at -5 with mass
    1.4e-11 and at 2e-9 with mass 1 - 1.4e-11, needed 3 cells beyond the cap: the centred
    window stopped at 0, its upper profile was 1 on all of [-5, 0] and its tradeoff curve 0.)
    """
    a, b = loss.quantile_range(eta)
    j_lo = _to_index(a, h, math.floor) - 1
    j_hi = max(_to_index(b, h, math.ceil) + 1, j_lo + 2)
    cap = max_cells()
    if j_hi - j_lo > cap:
        bulk_a, bulk_b = loss.quantile_range(1e-16)
        centre = _to_index(0.5 * (bulk_a + bulk_b), h, math.floor)
        lo_c = max(j_lo, centre - cap // 2)
        hi_c = min(j_hi, lo_c + cap)
        if hi_c < j_hi:
            above = _p_mass_split(loss, hi_c * h)[1]
            if above > eta and _p_mass_split(loss, (j_hi - cap) * h)[0] < above:
                return j_hi - cap, j_hi
        return lo_c, hi_c
    return j_lo, j_hi


def _p_mass_split(loss: PrivacyLoss, x: float) -> tuple[float, float]:
    """The finite part's P-masses at or below ``x`` and above it."""
    m_p, _ = loss.cell_masses(np.array([-np.inf, x, np.inf]))
    return float(m_p[0]), float(m_p[1])


def _to_index(x: float, h: float, rounding: Callable[[float], float]) -> int:
    r = x / h
    nearest = round(r)
    if abs(r - nearest) < 1e-9 * max(1.0, abs(r)):
        return int(nearest)
    return int(rounding(r))
