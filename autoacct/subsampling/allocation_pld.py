"""Certified privacy-loss laws of one epoch of random allocation of a Gaussian, for the PLD route.

The epoch's dominating pair (module :mod:`autoacct.subsampling.allocation`): with sigma = s,
t steps and Z_j iid N(0, 1) under Q, l_j = exp(Z_j / s - 1/(2 s^2)) (E_Q l = 1),
T = l_1 + ... + l_t and R = T / t = dP/dQ. Both profiles are expectations of convex
functions of R under Q:

    H_g(P || Q) = E_Q[(R - g)_+],   H_g(Q || P) = E_Q[(1 - g R)_+],   g = e^eps >= 0.

Lattice: x_k = k d (d the spacing), cells C_k = (x_k, x_k+1], k < K, and the overflow event
B = {some l_j > x_K}. Masses of one summand under Q, in closed form (log l ~ N(-1/(2 s^2), 1/s^2)):
m_k = Q(l in C_k) and mu_k = E_Q[l; l in C_k] = P_1(l in C_k), P_1 the law with Z_1 ~ N(1/s, 1).

Upper laws (convex order). Send each l_j <= x_K to the two ends of its cell with the weights
that keep its mean (l'_j = x_k w.p. (x_k+1 - l_j) / d, x_k+1 otherwise): E[l'_j | l_j] = l_j,
so on B^c, T' = sum l'_j has E[T' | l] = T and, by Jensen's inequality, E f(T'/t) >= E f(R) for
every convex f: both profiles of the pair (R' Q, Q), R' = T'/t, dominate the true ones at
every g, which is what composition needs (Dong, Roth and Su 2022; the discretiser's
"connect the dots" of Doroshenko et al. 2022, here applied to each summand on the scale of
the likelihood ratio, where its cost is a variance of at most d^2 / 4 per summand instead of a
shift). T' lives on the lattice: its Q-law on B^c is w^{*t}, w the lattice masses of one l'
(hat functions: w_k = E_Q[(1 - |l/d - k|)_+; l <= x_K]), and its P'-law is
(x w) * w^{*(t-1)} (P'(T' = u) = E_Q[(T'/t) 1{T' = u}] = E_Q[l'_1 1{T' = u}] by symmetry).
H_g(P || Q) <= E_Q[(R - g)_+ 1_{B^c}] + P(B) (split any test set on B), and any mass moved to
+inf only raises a profile, so the forward law is the P'-masses at log(u / t) for u in the
lattice's window (:class:`Lattice`) and the rest of the P'-mass, which is 1 - sum of those
(E_Q[R' 1_{B^c}] = P(B^c)), at +inf; the backward law the Q-masses at -log(u / t), u > 0 in
the window, and the rest of the Q-mass at +inf. The rest is bounded from the computed masses
or, with the tail atoms raised by their own error bounds, by P(B) and a bound on what the
windows drop (:func:`_upper_laws`), whichever is less.

Lower laws (post-processing). N = sum_j k_j, k_j the cell of l_j (on B^c), is a function of
the output, so the pair of its laws (P_N, Q_N) is dominated by the epoch, and so are its
compositions. Q_N = m^{*t}, P_N = mu * m^{*(t-1)} (as above), and given N = n each l_j lies in
its cell, so the ratio P_N(n) / Q_N(n) = E_Q[R | N = n] = (n d + t E_Q[off | N = n]) / t, off
a summand's offset in its cell, between 0 and d: bounded more closely from the vectors
themselves and from a convex minorant of the cells' offsets (:func:`_offset_shares`). Leaving
out mass (B, N outside the window, entries below their error) and lowering loss values lowers a
profile, so the lower laws are the entries at the least loss value the bounds allow
(non-decreasing in n), with masses whose sum above every loss is at most the true one's
(:func:`_suffix_lower`: each profile of such a law, composed or not, is at most the true one's:
it is first-order stochastically smaller); as the windows drop mass from the partial sums
(:func:`_lower_laws`), the ratio's bounds also allow for a certified bound on that mass (module
:mod:`autoacct.subsampling.allocation_windows`).

Arithmetic. The sums' laws are products (convolutions) of vectors with error bounds, each kept
on its window (:mod:`autoacct.subsampling.allocation_vectors`); what falls outside is dropped,
and the upper laws count it at +inf.

The one-summand masses and their error bounds are :mod:`autoacct.subsampling.allocation_cells`'
(differences of normal tail functions, each taken on the side where it is small; the hat
weights (k + 1) m_k - mu_k / d cancel up to a factor k, which their bounds carry, and in the
bulk they are computed in mpmath and rounded once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import special

from autoacct import _validation as check
from autoacct.exactness import MACHINE_EPSILON
from autoacct.losses.atoms import AtomLoss
from autoacct.mechanism import LossPart, Mechanism, Neighboring
from autoacct.subsampling.allocation_cells import least_offset, offset_minorant, overflow_masses, summand_masses
from autoacct.subsampling.allocation_vectors import Vec, power, product
from autoacct.subsampling.allocation_windows import dropped_mass

_U = MACHINE_EPSILON
#: Lattice spacing as a fraction of the standard deviation of one summand, sqrt(e^{1/s^2} - 1).
SPACING = 0.02
#: Standard deviations of Z_1 ~ N(1/s, 1) (the summand that carries the record under P) above
#: its mean covered by the lattice (:func:`lattice`). The truncated summand's P-mass is
#: Phi(-span) and each other summand's Q-mass beyond is Phi(-span - 1/s), so an epoch of t steps
#: moves about t Phi(-span) to +inf: at span 7 alone that was 8e-10 at t = 1000, sigma = 20,
#: which kept the PLD from answering at delta = 1e-10.
_Z_SPANS = (7.0, 8.0, 9.0, 10.0)
#: Target for t Phi(-span): the first span of :data:`_Z_SPANS` that meets it is taken.
_OVERFLOW = 1e-14
#: Most points of one summand's lattice for a span above the first of :data:`_Z_SPANS` (a
#: longer lattice costs in every window, see :meth:`Lattice.window`).
_TOP_POINTS = 1 << 14
#: Standard deviations sqrt(k Var l) of a sum of k summands kept on each side of its mean.
_SUM_SPAN = 12.0
#: Most lattice points per law (a few seconds; larger epochs answer by Renyi DP only).
MAX_POINTS = 1 << 19


@dataclass(frozen=True)
class EpochLaws:
    """The four laws of one epoch: upper (dominating, not ``tight``) and lower (``tight``) laws
    of the forward loss log R under P and of the backward loss -log R under Q."""

    forward_upper: AtomLoss
    backward_upper: AtomLoss
    forward_lower: AtomLoss
    backward_lower: AtomLoss
    spacing: float
    points: int
    #: The lower laws as sub-pairs of (P_N, Q_N), both masses of each atom and its likelihood
    #: ratio at most the true ones (for the removal; for the addition the ratio at least),
    #: both as laws of log(dP/dQ): what Poisson subsampling keeps below the subsampled pair
    #: (:func:`~autoacct.subsampling.partial_epoch.subsampled_lower_laws`).
    sub_pairs: tuple[AtomLoss, AtomLoss]


@dataclass(frozen=True)
class Lattice:
    """The lattice x_k = k d of the summands and of their sums.

    One summand's points are 0..``top`` (to l at Z = 1/s + span, :data:`_Z_SPANS`: the
    record's summand beyond is the overflow B). A sum of k summands keeps the points of :meth:`window`: 12 standard
    deviations sqrt(k Var l) on each side of its mean k, and ``top`` more points above (the
    heavy tail of one large summand). What falls outside is counted as overflow (upper laws)
    or left out (lower laws), so the window is a choice of accuracy, not of soundness: the
    mass it loses is part of the upper laws' mass at +inf, which the tests bound."""

    spacing: float
    top: int
    #: The standard deviation of one summand, sqrt(e^{1/s^2} - 1).
    deviation: float

    def window(self, k: int) -> tuple[int, int]:
        """The first and last lattice index kept for a sum of k summands."""
        x = _SUM_SPAN * self.deviation * math.sqrt(k)
        d = self.spacing
        return max(0, math.floor((k - x) / d)), math.ceil((k + x) / d) + self.top

    def points(self, k: int) -> int:
        lo, hi = self.window(k)
        return hi - lo + 1


def lattice(sigma: float, steps: int = 2) -> Lattice | None:
    """The lattice for noise multiplier ``sigma`` and epochs of ``steps`` steps: spacing
    d = 0.02 sqrt(e^{1/s^2} - 1) (see :data:`SPACING`), the top at Z_1 = 1/s + span, span the
    first of :data:`_Z_SPANS` with steps Phi(-span) <= :data:`_OVERFLOW`, or the last whose
    summand fits in :data:`_TOP_POINTS` points and whose epoch's window in :data:`MAX_POINTS`
    (at least the first); None where e^{1/s^2} overflows."""
    s = sigma
    if 1.0 / (s * s) > 700.0:
        return None
    d = SPACING * math.sqrt(math.expm1(1.0 / (s * s)))
    if not (math.isfinite(d) and d > 0.0):
        return None
    grid: Lattice | None = None
    for span in _Z_SPANS:
        top = math.exp(min((1.0 / s + span) / s - 1.0 / (2.0 * s * s), 700.0))
        wider = Lattice(d, int(math.ceil(min(top / d, 2.0 * MAX_POINTS))) + 1, d / SPACING)
        if grid is not None and (top / d > _TOP_POINTS or wider.points(steps) > MAX_POINTS):
            break
        grid = wider
        if steps * special.ndtr(-span) <= _OVERFLOW:
            break
    return grid if grid is not None and grid.top <= MAX_POINTS + 1 else None


def _up(x: np.ndarray) -> np.ndarray:
    """x raised past the rounding of a logarithm of a product or quotient (a few ulps of |x| + 1)."""
    return np.nextafter(x + 8.0 * _U * (np.abs(x) + 1.0), np.inf)


def _down(x: np.ndarray) -> np.ndarray:
    return np.nextafter(x - 8.0 * _U * (np.abs(x) + 1.0), -np.inf)


def _lifted(values: np.ndarray, vec: Vec, old_inf: float, new_inf: float) -> tuple[np.ndarray, float]:
    """Masses and the mass at +inf of an upper law whose atoms, by increasing loss, carry the
    computed entries ``values`` of ``vec`` (a subset of its entries, in any order), given two
    bounds on the true mass at +inf: ``old_inf``, 1 less the computed finite masses plus twice
    their summed error bound, and ``new_inf``, an independent bound.

    What an upper law needs is a survival function S(v) (its mass at losses above v, +inf
    included) at least the true one's at every v: then every profile, also after composition
    with other laws, is at least the true one (the hockey-stick integrand is non-decreasing in
    the loss). The computed masses with ``old_inf`` at +inf have one: above the k-th atom, 1 less
    the computed masses up to it plus the error bound they share. The other: ``new_inf`` and,
    above the k-th atom, the entries' relative bound summed over the n_k atoms from it up,
    (x^ + dabs + |f'|) / (1 - rel) (|alpha| <= rel), whose FFT parts sum to at most
    sqrt(n_k) |f'|_2 (Cauchy and Schwarz), a sum of the per-atom shares
    f2r (sqrt(n_k) - sqrt(n_k - 1)). The second is the lower from the top down to some atom c
    (their difference grows down the atoms): there the atoms take their lifted masses, the atom
    below c takes the difference of the two at c, and the rest keep theirs; where
    ``new_inf`` is not the lower, the first is kept whole. It matters in the tail, where a
    small delta is decided: at t = 1e4, s = 2 the first puts 1.7e-10 at +inf (the products'
    rounding bound summed over all 1.3e5 atoms), the second 1.2e-17."""
    budget = (old_inf - new_inf) * (1.0 - 4.0 * _U)
    n = len(values)
    if budget <= 0.0 or n == 0:
        return values, old_inf
    count = np.arange(n, 0, -1, dtype=float)
    share = vec.f2r / (np.sqrt(count) + np.sqrt(count - 1.0)) * (1.0 + 8.0 * _U)
    lifted = (values + vec.dabs + share) / (1.0 - vec.rel) * (1.0 + 8.0 * _U)
    # Suffix sums of the lifts, above and below their rounding (n additions of positive terms).
    suffix = np.cumsum((lifted - values)[::-1])[::-1]
    grow = 2.0 * (n + 2) * _U
    excess_up, excess_down = suffix * (1.0 + grow), suffix * (1.0 - grow)
    fits = np.flatnonzero(excess_up <= budget)
    if fits.size == 0:
        return values, old_inf
    c = int(fits[0])
    masses = values.copy()
    masses[c:] = lifted[c:]
    if c > 0:
        gap = (old_inf - new_inf - float(excess_down[c])) * (1.0 + 4.0 * _U)
        masses[c - 1] = (masses[c - 1] + max(gap, 0.0)) * (1.0 + 2.0 * _U)
    return masses, new_inf


def _suffix_lower(values: np.ndarray, vec: Vec) -> np.ndarray:
    """Masses for atoms (by increasing loss) that carry the computed entries ``values`` of ``vec``
    (a subset of its entries, in any order), whose sum over the atoms from any one up is at most
    the true entries' sum there.

    A lower law needs no more: at loss values at most the true ones and non-decreasing along
    the atoms, such masses make its survival function (its mass above each loss) at most the
    true one's, so every profile, also after composition with other laws, at most the true one
    (the hockey-stick integrand is non-decreasing in the loss). The true sum over m atoms
    (those from the k-th up, or a run of them below the top: every true entry is non-negative)
    is at least their sum x^ less m dabs and sqrt(m) |f'|_2, over (1 + rel) (Cauchy and
    Schwarz on the FFT part), and at least sum x^ less min(|a|_1, m |a|_inf) and sqrt(m) |f|_2:
    the FFT's part grows with the square root of the atoms, where entry by entry it grows with
    their number (5.3e-14 an entry at t = 1e4, s = 2, against tail entries of 1e-12 and less).
    Runs that stop short of the top by 2^i atoms leave out the top's many near-empty ones. The
    best bound at each atom, then their running maximum from the top (each is below the true
    sum from its own atom up, so below every longer one), is the survival function; the masses
    are its steps, rounded down."""
    n = len(values)
    if n == 0:
        return values
    # Sums from each atom to the top (and 0 past it), below and above their rounding (n
    # additions of non-negative terms each): a run's sum is the difference of two.
    tops = np.append(np.cumsum(values[::-1])[::-1], 0.0)
    grow = 2.0 * (n + 2) * _U
    down, up = tops * (1.0 - grow), tops * (1.0 + grow)
    index = np.arange(n)
    bound = np.zeros(n)
    for end in sorted({n} | {n - (1 << i) for i in range(n.bit_length()) if (1 << i) < n}):
        count = (end - index[:end]).astype(float)
        total = down[:end] - up[end]
        roots = np.sqrt(count) * (1.0 + 2.0 * _U)
        relative = (total - (count * vec.dabs + roots * vec.f2r) * (1.0 + 4.0 * _U)) / (1.0 + vec.rel)
        plain = total - (np.minimum(vec.d1, count * vec.dinf) + roots * vec.f2) * (1.0 + 4.0 * _U)
        bound[:end] = np.maximum(bound[:end], np.maximum(relative, plain) * (1.0 - 4.0 * _U))
    survival = np.maximum.accumulate(bound[::-1])[::-1]
    return (survival - np.append(survival[1:], 0.0)) * (1.0 - 2.0 * _U)


def _sums(summand: Vec, record: Vec, t: int, grid: Lattice
          ) -> tuple[Vec, Vec, Vec, list[tuple[int, int, float, int, float]], tuple[int, int]]:
    """The epoch's sums on the lattice: the record's summand (masses ``record``, its P-side
    vector) with the t - 1 others (``summand`` powered, Q-distributed), and t of ``summand``,
    both kept on the total's window; and the others' sum, the windows its powering applied
    (:func:`~autoacct.subsampling.allocation_vectors.power`) and the total's window."""
    windows: list[tuple[int, int, float, int, float]] = []
    rest = power(summand, t - 1, grid.window, windows)
    final = grid.window(t)
    return product(record, rest, final), product(summand, rest, final), rest, windows, final


def _upper_laws(t: int, sigma: float, grid: Lattice,
                vec: dict[str, tuple[np.ndarray, np.ndarray]]) -> tuple[AtomLoss, AtomLoss]:
    """The upper laws (module docstring), their mass at +inf the lesser of two bounds
    (:func:`_lifted`): 1 less the computed finite masses plus their errors, or the mass that
    overflow B and the windows drop, bounded on its own. The latter: Q(B) <= t Q(l > x_K) and
    P(B) <= P_1(l > x_K) + (t - 1) Q(l > x_K) (:func:`~autoacct.subsampling.allocation_cells.
    overflow_masses`); and what the windows drop (`allocation_windows.dropped_mass`): those of
    the other summands' partial sums (Q-distributed under P' too) and the total's, a sum of the
    record's summand (under P' the masses x w, under Q the masses w) and the t - 1 others."""
    d = grid.spacing
    p, q, _, windows, final = _sums(Vec.of(*vec["w"]), Vec.of(*vec["xw"]), t, grid)
    w_up = vec["w"][0] + vec["w"][1]
    # (the others' windows are both directions': bounded once, the totals' windows each)
    others = dropped_mass(w_up, windows, sigma, d, True)
    dropped = {name: others + dropped_mass(w_up, [], sigma, d, True, (head[0] + head[1], t, final[0], final[1], cut))
               for name, head, cut in (("forward", vec["xw"], p.dropped), ("backward", vec["w"], q.dropped))}
    q_over, p_over = overflow_masses(sigma, d, grid.top)
    key = ("random allocation epoch", t, sigma, d, grid.top)
    # Forward: P'-masses at log(u / t), u > 0; the rest of the P'-mass (B, sums outside the
    # windows) at +inf, bounded either by 1 less the finite masses and their summed error twice
    # (once for the finite masses, once for the total) or by f_new, the tail atoms then lifted
    # by their own error bounds (:func:`_lifted`). (The discretiser's sums of these atoms are
    # rounded outward by the law itself, not tight: AtomLoss.cell_masses.)
    live = p.indices > 0
    fv = _up(np.log(p.indices[live] * d / t))
    f_inf = 1.0 - math.fsum(p.values[live]) + 2.0 * p.sum_error() + 2.0 * _U  # (two roundings)
    f_new = (p_over + (t - 1) * q_over + dropped["forward"]) * (1.0 + 4.0 * _U)
    fp, f_inf = _lifted(p.values[live], p, f_inf, f_new)
    forward = AtomLoss(key + ("forward upper",), fv, fp, fp * np.exp(-fv), p_inf=f_inf, tight=False)
    # Backward: Q-masses at -log(u / t), u > 0, sorted by loss; T' = 0 has loss +inf.
    live = q.indices > 0
    bv = _up(-np.log(q.indices[live] * d / t))[::-1]
    bq = q.values[live][::-1]
    b_inf = 1.0 - math.fsum(bq) + 2.0 * q.sum_error() + 2.0 * _U
    at_zero = float(np.sum(q.upper_values()[~live]))
    b_new = (t * q_over + dropped["backward"] + at_zero) * (1.0 + 4.0 * _U)
    bq, b_inf = _lifted(bq, q, b_inf, b_new)
    backward = AtomLoss(key + ("backward upper",), bv, bq, bq * np.exp(-bv), p_inf=b_inf, tight=False)
    return forward, backward


def _offset_shares(vec: dict[str, tuple[np.ndarray, np.ndarray]], rest: Vec, final: tuple[int, int], q: Vec,
                   missing: float, sigma: float, d: float, minorant: tuple[np.ndarray, np.ndarray],
                   mean: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds on E_Q[off | N = n] / d, the summands' mean offset in their cells
    (in cells) given N = n, ``mean`` the cells' mean left end n d / t: the lower laws' a priori
    bounds on E_Q[R | N = n] = (n d + t E[off | N = n]) / t.

    Given N = n the summands are exchangeable, so the mean offset is the first summand's,
    (c_F(n) + c'(n)) / (q_F(n) + q'(n)): c_F = right * rest (the first summand's cell offset
    masses, ``vec["right"]``, against the others' sums kept in their windows, event F), q_F = q,
    and c', q' the same off F, with q' <= D (``missing``) and o q' <= c' <= d q', o the least
    offset (:func:`~autoacct.subsampling.allocation_cells.least_offset`, noise multiplier
    ``sigma``). That is monotone in q', so between its values at q' = 0 and q' = D, each read off
    the computed vectors' bounds: c_F / q_F and (c_F + D o) / (q_F + D) below,
    (c_F + D d) / (q_F + D) above. Where the masses are well above their errors and D this is
    the summands' own mean offset, near d/2; elsewhere the offsets' convex minorant L
    (``minorant``, Jensen's inequality) and d are the fallback. At t = 1e4, sigma = 1, L is the
    least offset, 0.4964 d, against mean offsets near d/2: on L alone the lower laws' losses lie
    9e-5 below the truth there, 2.3% of delta at eps = 0.037."""
    c = product(Vec.of(*vec["right"]), rest, final)
    assert c.start == q.start and len(c.values) == len(q.values)
    xs, ys = minorant
    least = least_offset(sigma, d) / d * (1.0 - 4.0 * _U)
    c_lo, c_hi = c.lower_values(), c.upper_values()
    q_lo, q_hi = q.lower_values(), q.upper_values()
    with np.errstate(divide="ignore", invalid="ignore"):
        below = np.minimum(c_lo / q_hi, (c_lo + missing * least) / (q_hi + missing))
        above = np.maximum(c_hi / q_lo, (c_hi + missing) / (q_lo + missing))
    below = np.where(q_hi > 0.0, below, -np.inf) * (1.0 - 1e-12)
    above = np.where(q_lo > 0.0, above, np.inf) * (1.0 + 1e-12)
    # (each a bound at each n on its own: the minorant's by Jensen's inequality, the least offset's)
    low = np.fmax(below, np.maximum(np.interp(mean, xs, ys) * (1.0 - 1e-12), least_offset(sigma, d)) / d)
    return low, np.fmin(above, 1.0)


def _lower_laws(t: int, sigma: float, grid: Lattice, vec: dict[str, tuple[np.ndarray, np.ndarray]]
                ) -> tuple[AtomLoss, AtomLoss, tuple[AtomLoss, AtomLoss]]:
    """The lower laws (module docstring). The computed vectors approximate P^w(n) = E_Q[l_1; N = n, F]
    and Q^w(n) = Q(N = n, F), F the event that the partial sums of the other summands' cells
    (and the total) stayed in their windows: below P_N(n) and Q_N(n), which exceed them by at
    most the mass D dropped (`allocation_windows.dropped_mass`), so each ratio P_N(n) / Q_N(n) is
    within [p_lo / (q_hi + D), (p_hi + D) / q_lo] and the bounds of :func:`_offset_shares`."""
    d = grid.spacing
    p, q, rest, windows, final = _sums(Vec.of(*vec["m"]), Vec.of(*vec["mu"]), t, grid)
    assert p.start == q.start and len(p.values) == len(q.values)
    # The total's window (only its lower end drops a sum that a kept n could have had: above
    # it, no n is kept): its cells' sum is at least the other summands' (t - 1 of them).
    windows.append((t - 1, final[0], math.inf, 1, math.inf))
    missing = dropped_mass(vec["m"][0] + vec["m"][1], windows, sigma, d, False)
    n = p.indices
    p_lo, p_hi = p.lower_values(), p.upper_values()
    q_lo, q_hi = q.lower_values(), q.upper_values()
    key = ("random allocation epoch", t, sigma, d, grid.top)
    low, high = _offset_shares(vec, rest, final, q, missing, sigma, d, offset_minorant(sigma, d, grid.top + 1),
                               n * d / t)
    with np.errstate(divide="ignore", invalid="ignore"):
        # E_Q[R | N = n] = (n d + t E[off | N = n]) / t, the mean offset within its bounds, and
        # within the masses' bounds.
        floor = np.log((n * d + t * d * low) / t)
        ceiling = np.log((n * d + t * d * high) / t)
        # (fmax and fmin pass over the NaN of a bound whose mass bound is not positive)
        v_lo = _down(np.fmax(np.log(p_lo / (q_hi + missing)), floor))
        v_hi = _up(np.fmin(np.log((p_hi + missing) / q_lo), ceiling))
    # Forward: along n, the loss values' running minimum from the top (each at most its own
    # bound, so at most the true loss, and non-decreasing) and masses bounded over every
    # suffix (:func:`_suffix_lower`); atoms at -inf (no mass above any loss) left out.
    fv = np.minimum.accumulate(v_lo[::-1])[::-1]
    fp = _suffix_lower(p.values, p)
    keep = (fp > 0.0) & np.isfinite(fv)
    forward = AtomLoss(key + ("forward lower",), fv[keep], fp[keep], fp[keep] * np.exp(-fv[keep]), tight=True)
    # Backward: the loss -log ratio, increasing as n decreases; likewise along decreasing n.
    bv = np.minimum.accumulate(-v_hi)
    bq = _suffix_lower(q.values[::-1], q)[::-1]
    keep = (bq > 0.0) & np.isfinite(bv)
    bv, bq = bv[keep][::-1], bq[keep][::-1]
    backward = AtomLoss(key + ("backward lower",), bv, bq, bq * np.exp(-bv), tight=True)
    return forward, backward, _sub_pairs(key, p_lo, q_lo, v_lo, v_hi)


def _sub_pairs(key: tuple, p_lo: np.ndarray, q_lo: np.ndarray, v_lo: np.ndarray, v_hi: np.ndarray
               ) -> tuple[AtomLoss, AtomLoss]:
    """Atoms (p', q') below (P_N(n), Q_N(n)) with log(p'/q') = v_lo (removal) or v_hi (addition).

    Removal: p' = min(p_lo, q_lo e^v_lo), q' = p' e^-v_lo <= q_lo; addition: q' = min(q_lo,
    p_lo e^-v_hi), p' = q' e^v_hi <= p_lo. Each is lowered by 8 u more, so that the product
    formed from it stays below the bound it was capped by. With both masses at most the true
    ones and the ratio on the side of the direction, every term of the profiles of the pair and
    of its Poisson subsampling is at most the true cell's (partial_epoch's docstring)."""
    laws = []
    for name, v, first in (("removal", v_lo, True), ("addition", v_hi, False)):
        with np.errstate(over="ignore", invalid="ignore"):
            if first:
                p = np.minimum(p_lo, q_lo * np.exp(v)) * (1.0 - 8.0 * _U)
                q = p * np.exp(-v)
            else:
                q = np.minimum(q_lo, p_lo * np.exp(-v)) * (1.0 - 8.0 * _U)
                p = q * np.exp(v)
        keep = (p > 0.0) & (q > 0.0) & np.isfinite(v) & np.isfinite(p)
        order = np.argsort(v[keep], kind="stable")
        laws.append(AtomLoss(key + (name + " sub-pair",), v[keep][order], p[keep][order], q[keep][order], tight=True))
    return laws[0], laws[1]


@lru_cache(maxsize=2)
def epoch_laws(steps: int, sigma: float) -> EpochLaws | None:
    """The certified upper and lower laws of one epoch of ``steps`` >= 2 steps of a Gaussian with
    noise multiplier ``sigma`` (see the module docstring); None when a window of the lattice
    would hold more than :data:`MAX_POINTS` points (a small sigma, whose record's summand is
    too heavy-tailed, or a very long epoch)."""
    grid = lattice(sigma, steps)
    if grid is None or grid.points(steps) > MAX_POINTS:
        return None
    vec = summand_masses(sigma, grid.spacing, grid.top + 1)
    fu, bu = _upper_laws(steps, sigma, grid, vec)
    fl, bl, subs = _lower_laws(steps, sigma, grid, vec)
    return EpochLaws(fu, bu, fl, bl, grid.spacing, grid.points(steps), subs)


@dataclass(frozen=True, eq=False, repr=False)
class AllocationLowerPair(Mechanism):
    """A pair below one epoch of random allocation (for its lower ends): the epoch's attained
    pair seen through N = sum_j k_j, the sum of the cells of its summands (a post-processing),
    with the loss values of :func:`epoch_laws`' lower laws lowered by their error bounds and
    their masses bounded so that each direction's loss is first-order stochastically below the
    true one's; its laws are ``tight`` (every lower bound on a profile read off them, also
    under composition, is one of the epoch).

    Add/remove relation. Parameters: ``steps`` t >= 2 and ``sigma`` s > 0 of the epoch
    (:class:`~autoacct.subsampling.RandomAllocatedMechanism`).
    """

    steps: int
    sigma: float

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set(steps=check.positive_int("steps", self.steps),
                  sigma=check.real("sigma", self.sigma, low=0.0, low_open=True))
        if self.steps < 2:
            raise ValueError(f"steps must be at least 2, got {self.steps!r}")
        if self.neighboring is None:
            self._set(neighboring=Neighboring.ADD_REMOVE)

    def loss_parts(self) -> list[LossPart] | None:
        laws = epoch_laws(self.steps, self.sigma)
        return None if laws is None else [LossPart(laws.forward_lower, laws.backward_lower, 1)]
