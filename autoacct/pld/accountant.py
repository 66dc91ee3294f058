"""The FFT accountant: orchestrates grid, discretiser and composer, and refines.

A mechanism hands over its PLD components: triples (forward law, backward law,
count). The forward laws are those of the pairs (M(D'), M(D)) and the backward
laws those of (M(D), M(D')) for the neighbouring relation's ordered pair
(D', D); delta(eps) of the mechanism is the larger of the two composed
profiles. Symmetric components (forward law equal to backward law) are
composed once.

An :class:`FFTAccountant` is built once per mechanism and caches every
composed PLD it makes, keyed by the grid, so a delta(eps) curve or a second
query at a nearby delta costs no new FFT. A direction that is one law composed
very often is composed by :mod:`levels` when that is cheaper than one lattice, and one
whose rare large losses decide eps is split into bulk and tail (:mod:`splitting`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property, partial
from typing import Any

import numpy as np

from autoacct.errors import BudgetExceeded
from autoacct.limits import afford, query_clock
from autoacct.losses import GaussianLoss, PrivacyLoss
from autoacct.pld import levels
from autoacct.pld.chernoff import chernoff_profiles, silent_lower
from autoacct.pld.components import Component, LowerPld
from autoacct.pld.compose import compose, max_window
from autoacct.pld.costs import (
    SharedCheck,
    afford_cells,
    afford_laws,
    lower_of,
    nbytes_of,
    shared_lower_of,
    warn_budget,
    warn_loose,
)
from autoacct.pld.cumulants import Components, choose_tilt, window_points
from autoacct.pld.discretize import DiscretePLD, discretize, discretize_lazy, discretize_upper
from autoacct.pld.grid import (
    choose_spacing,
    index_range,
    max_cells,
)
from autoacct.pld.inverted import DeltaThroughEpsilon
from autoacct.pld.lawcache import kept_law, round_up_pow2
from autoacct.pld.made import Composed, Made, Pair, Profile, best_curve, well_inside
from autoacct.pld.mixture import MixtureProfile
from autoacct.pld.profiles import DiscreteProfile
from autoacct.pld.query import PldQuery, log_eta_for, shrink, within
from autoacct.pld.reversal import inverse_tradeoff, reversed_chernoff, reverses_law_by_law
from autoacct.pld.splitting import SplitDirections

#: The query of an untilted composition (a delta curve or a tradeoff).
_UNAIMED = PldQuery()

#: Default relative accuracy of epsilon: the certified upper bound is within
#: 0.1% of the certified lower bound, hence of the truth.
DEFAULT_TOL = 1e-3
_MAX_REFINE = 4
#: Grid tolerance factor (spacing factor sqrt(16) = 4) of the first pass on a direction that
#: is likely not the larger one.
_COARSE = 16.0
#: Chernoff gap (in tol) below the first direction that earns a second one a coarse pass, and
#: the most cells a Chernoff bound over a whole law may take where it only weighs that pass or
#: a split law's terms would answer instead.
_COARSE_GAP = 4.0
_WEIGH_CELLS = 2 ** 18
#: The most cells a Chernoff bound that only orders the directions takes (see
#: :meth:`FFTAccountant._weighing_lattice`).
_WEIGH_CHEAP = 2 ** 15
#: How far above the first direction's lower bound a reversed bound from coarser PLDs may lie
#: for one from the finest PLDs to be tried (:meth:`FFTAccountant._reversed_may_settle`).
_REVERSED_GAIN = 0.01
#: Quarterings of the grid tolerance tried for a refinement that changes the grid.
_STALL = 8


class FFTAccountant(SplitDirections, DeltaThroughEpsilon):
    """Composed upper and lower PLD profiles of a list of (forward, backward, count) parts."""

    def __init__(self, parts: Sequence[tuple[PrivacyLoss, PrivacyLoss, int]]) -> None:
        merged: dict[tuple, list] = {}
        gauss_mu2 = 0.0
        for fwd, bwd, k in parts:
            if fwd.gdp_mu is not None and bwd.gdp_mu is not None and fwd.gdp_mu == bwd.gdp_mu:
                gauss_mu2 += k * fwd.gdp_mu ** 2
                continue
            key = (fwd.key, bwd.key, fwd.tight, bwd.tight)
            if key in merged:
                merged[key][2] += k
            else:
                merged[key] = [fwd, bwd, k]
        if gauss_mu2 > 0:
            g = GaussianLoss(math.sqrt(gauss_mu2))
            merged[(g.key, g.key, True, True)] = [g, g, 1]
        self._parts = [tuple(v) for v in merged.values()]
        #: Lower bounds are certified only when every pair is attained by its class.
        self.tight = all(f.tight and b.tight for f, b, _ in self._parts)
        symmetric = all(f.key == b.key for f, b, _ in self._parts)
        self._directions: list[list[tuple[PrivacyLoss, int]]] = [[(f, k) for f, _, k in self._parts]]
        if not symmetric:
            self._directions.append([(b, k) for _, b, k in self._parts])
        #: Everything derived from the parts, by a key whose first entry names it and whose
        #: rest is every argument it depends on (the parts never change):
        #: ("components", h, log_eta, d), ("tilt", h, log_eta, d, target, log budget),
        #: ("plan", h, log_eta, d, target, log budget), ("profiles", h, log_eta, lam, d, lower),
        #: ("chernoff", h, log_eta, d), ("chernoff-cells", h, log_eta, d), ("reversed", h, d),
        #: ("spacing", d, eps_scale, tol) and ("laws", d).
        self._memo: dict[tuple, Any] = {}
        # The composed profiles made and kept, per direction: answers take the best certified
        # value over them (within the budget; see :mod:`autoacct.pld.made`).
        # (told of a pair dropped through the memo alone: a bound method made a reference cycle)
        self._made = Made(len(self._directions), partial(_forget, self._memo))

    @property
    def distinct(self) -> int:
        """Number of distinct laws composed (equal parts merged, Gaussians into one)."""
        return len(self._parts)

    def components(self, h: float, log_eta: float, d: int, lower: LowerPld = LowerPld.NOW) -> Components:
        """Discretised components of direction ``d`` on the lattice hZ (cached). When not
        cached, ``lower`` says when each lower PLD is made (:class:`LowerPld`; KEPT only for a
        direction of one law, else NOW)."""
        key = ("components", h, log_eta, d)
        if key not in self._memo:
            eta = self._eta(log_eta)
            parts = self._directions[d]
            ranges = [index_range(loss, h, eta) for loss, _ in parts]
            cells, costs = [j_hi - j_lo for j_lo, j_hi in ranges], [loss.cell_cost for loss, _ in parts]
            afford_laws(cells, lower is not LowerPld.LAZY, costs)
            shared = SharedCheck(cells, costs) if len(parts) > 1 else None
            comps = []
            for (loss, k), (j_lo, j_hi) in zip(parts, ranges):
                atoms = loss.atoms if loss.merged_lower else None
                merged = loss.has_atoms and loss.lattice is None
                if lower is LowerPld.KEPT and len(parts) == 1:
                    comps.append(Component(*discretize_lazy(loss, h, j_lo, j_hi), k, atoms, merged_points=merged))
                elif lower is LowerPld.LAZY:
                    up = discretize_upper(loss, h, j_lo, j_hi)
                    make = (partial(lower_of, loss, h, j_lo, j_hi) if shared is None
                            else partial(shared_lower_of, shared, loss, h, j_lo, j_hi))
                    comps.append(Component(up, make, k, atoms, merged_points=merged))
                else:
                    comps.append(Component(*discretize(loss, h, j_lo, j_hi), k, atoms, merged_points=merged))
            self._memo[key] = Components(comps)
        return self._memo[key]

    def _upper_on(self, d: int, h: float, log_eta: float) -> DiscretePLD:
        """The upper discrete PLD of direction d's one law on the lattice hZ."""
        (loss, _), = self._directions[d]
        j_lo, j_hi = index_range(loss, h, self._eta(log_eta))
        afford_cells(j_hi - j_lo, False, loss.cell_cost)
        return discretize_upper(loss, h, j_lo, j_hi)

    def _eta(self, log_eta: float) -> float:
        """P-mass each law may leave outside its grid range on each side: a quarter of the
        mass allowed out of the composition, e^log_eta (at most 1e-12), shared by the runs.

        The number of runs is rounded up to a power of 2: a smaller eta only widens the
        ranges (the mass outside them is counted on the safe side either way), and the
        ranges then stay put while the count grows by up to a factor 2, so that a ledger
        asked again and again finds its laws discretised already (see
        :class:`~autoacct.pld.lawcache.LawCache`).
        """
        k_tot = sum(k for _, _, k in self._parts)
        return min(math.exp(log_eta), 1e-12) / (4.0 * round_up_pow2(k_tot))

    def profiles(self, h: float, log_eta: float, query: PldQuery = _UNAIMED,
                 directions: Sequence[int] | None = None,
                 lower: bool = True) -> list[tuple[DiscreteProfile, Composed]]:
        """(upper, lower) composed profiles of the given directions (default: all), tilted
        towards the query's target within its rounding budget (see :func:`choose_tilt`).
        Without ``lower`` only the upper PLDs are composed, and the lower profile is one
        that says nothing (eps >= 0)."""
        out = []
        for d in range(len(self._directions)) if directions is None else directions:
            # A law composed very often may be composed by levels, on the finest lattice of
            # their plan; the tilt and the window are chosen on the lattice used.
            p = self._plan(d, h, log_eta, query)
            g = h if p is None else p.finest
            comps = self.components(g, log_eta, d, LowerPld.LAZY if not lower else
                                    LowerPld.NOW if p is None else LowerPld.KEPT)
            lam = self._tilt(d, h, log_eta, query, comps)
            key = ("profiles", h, log_eta, lam, d, lower)
            if key not in self._memo:
                self._memo[key] = self._compose(comps, p, h, log_eta, lam, d, query, lower)
                self._made.add(d, self._memo[key])
            up, low = self._memo[key]
            assert isinstance(up, DiscreteProfile)  # composed profiles are discrete
            out.append((up, low))
        return out

    def aimed_profiles(self, h: float, log_eta: float, query: PldQuery, directions: Sequence[int],
                       grid_tol: float, lower: bool = True
                       ) -> list[tuple[DiscreteProfile | MixtureProfile, Profile]]:
        """The profiles of :meth:`profiles` for an eps(delta) query, where a direction's law is
        split into bulk and tail when that applies (:meth:`_split`, its tail's lattice sized
        for the accuracy ``grid_tol``; both profiles then)."""
        out: list[tuple[DiscreteProfile | MixtureProfile, Profile]] = []
        for d in directions:
            split = self._split(d, h, log_eta, query, grid_tol)
            if split is None and lower:
                split = self._aligned(d, h, log_eta, query)
            out.extend([split] if split is not None else self.profiles(h, log_eta, query, [d], lower))
        return out

    def _tilt(self, d: int, h: float, log_eta: float, query: PldQuery, comps: Components) -> float:
        """Direction d's tilt for the query at the accuracy of spacing h, chosen once: on the
        first components asked with it (those of the levels' probe when levels may apply)."""
        key = ("tilt", h, log_eta, d, *query.tilt_key)
        if key not in self._memo:
            self._memo[key] = choose_tilt(comps, query.target, h, log_eta, query.log_rounding_budget)
        return self._memo[key]

    def _plan(self, d: int, h: float, log_eta: float, query: PldQuery) -> levels.Plan | None:
        """The levels plan for direction d at the accuracy of spacing h, or None for one
        lattice (see :func:`levels.plan`).

        The windows it weighs come from the direction's law discretised (upper PLD only)
        on a lattice levels.PROBE times coarser than h, with its own tilt: a window's width
        in loss units barely depends on the spacing, and a law that one lattice composes
        more cheaply is then never discretised on the finer lattice of the levels.

        With the query's levels allowance, plans whose rounding would carry more than it
        are not taken, and the allowance (a share LEVELS_SHARE of tol * delta) also bounds
        the copies a one-level plan may compose on its top lattice: leaving them out of
        the lower bound moves eps by about their share of k, kept below a twentieth of tol.
        """
        if not levels.applies(self._directions[d]):
            return None
        key = ("plan", h, log_eta, d, *query.tilt_key)
        if key not in self._memo:
            coarse = h * levels.PROBE
            probe = self.components(coarse, log_eta, d, LowerPld.LAZY)
            # The tilt is chosen here, for the accuracy's spacing h, whichever lattice is used.
            lam = self._tilt(d, h, log_eta, query, probe)

            max_leak, max_extra = math.inf, 0
            count = probe[0].count
            allowance = query.levels_allowance
            if allowance is not None:
                assert query.target is not None and query.tol is not None
                k = probe.cumulant("upper", lam)
                log_k = float(k(np.array([k.index(lam)]))[0])
                max_leak = math.exp(min(math.log(allowance) + lam * query.target - log_k, 0.0))
                max_extra = int(count * query.tol / 20.0)
            widths = coarse * window_points(probe, levels.sample_counts(count), lam, log_eta)
            self._memo[key] = levels.plan(count, h, widths, max_leak, max_extra)
        return self._memo[key]

    def _chernoff(self, d: int, h: float, log_eta: float) -> None:
        """Add direction d's Chernoff profiles (no FFT; see :class:`ChernoffProfile`) to the
        profiles made, from its laws on the lattice that :meth:`profiles` would use."""
        key = ("chernoff", h, log_eta, d)
        if key not in self._memo:
            g = self._chernoff_lattice(d, h)
            self._memo[key] = chernoff_profiles(self.components(g, log_eta, d, LowerPld.LAZY), g)
            self._made.add(d, self._memo[key])

    def _reversed(self, d: int, first: int) -> Pair | None:
        """Direction d's Chernoff profiles bounded by direction ``first``'s finest upper PLDs
        made so far, where d's laws reverse first's (see :mod:`reversal`), added to the
        profiles made: d's own laws are not discretised. None where they do not reverse
        first's, or first has no PLDs yet."""
        made = [(key[1], comps) for key, comps in self._memo.items() if key[0] == "components" and key[3] == first]
        if not made:
            return None
        h, comps = min(made, key=lambda m: m[0])
        key = ("reversed", h, d)
        if key not in self._memo:
            pair = reversed_chernoff(comps, [loss for loss, _ in self._directions[d]],
                                     [loss for loss, _ in self._directions[first]])
            self._memo[key] = pair
            if pair is not None:
                self._made.add(d, pair)
        return self._memo[key]

    def _reversed_may_settle(self, d: int, first: int, delta: float) -> bool:
        """Whether direction d's bound from direction ``first``'s finest PLDs (:meth:`_reversed`)
        may settle it: not where one from coarser PLDs lies more than _REVERSED_GAIN above
        first's best lower bound. On benchmarks/sweep.py's cases the fine lattice lowered the
        coarse one's bound by at most 0.54% where the law was not split."""
        made = [pair[0] for key, pair in self._memo.items() if key[0] == "reversed" and key[2] == d and pair]
        if not made:
            return True
        lower = max((float(lo.epsilon(delta)) for _, lo in self._made[first]), default=0.0)
        return min(float(up.epsilon(delta)) for up in made) <= lower * (1.0 + _REVERSED_GAIN)

    def _chernoff_epsilon(self, d: int, h: float, log_eta: float, delta: float) -> float:
        """Direction d's Chernoff upper bound on eps(delta) at spacing h (made if not yet)."""
        self._chernoff(d, h, log_eta)
        return float(self._memo[("chernoff", h, log_eta, d)][0].epsilon(delta))

    def _chernoff_cells(self, d: int, h: float, log_eta: float) -> int:
        """The cells direction d's laws span on the lattice of its Chernoff bound at spacing h
        (kept: the ordering and the second direction's pass both ask)."""
        key = ("chernoff-cells", h, log_eta, d)
        if key not in self._memo:
            g, eta = self._chernoff_lattice(d, h), self._eta(log_eta)
            self._memo[key] = sum(hi - lo for loss, _ in self._directions[d] for lo, hi in [index_range(loss, g, eta)])
        return self._memo[key]

    def _chernoff_lattice(self, d: int, h: float) -> float:
        """The lattice of direction d's Chernoff profiles at spacing h: the finest one of a
        one-level plan when levels may compose the law (a later pass on the same grid then
        reuses its upper PLDs)."""
        return levels.finest(h) if levels.applies(self._directions[d]) else h

    def _compose(self, comps: Components, p: levels.Plan | None, h: float, log_eta: float, lam: float,
                 d: int, query: PldQuery, lower: bool = True) -> tuple[DiscreteProfile, Composed]:
        """Composed profiles of direction d at the accuracy of spacing h: by the levels plan
        ``p`` (see :mod:`levels`; ``comps`` are then on its finest lattice), else on the
        lattice hZ. Without ``lower``, the lower profile is :func:`silent_lower`'s,
        which says nothing (a Chernoff profile's, without its table).

        With the query's levels allowance, the errors the levels carry into the upper
        profile must not move eps(delta) by more than the allowance moves it as a share
        of delta, or one lattice is used; so too when the finest lattice's lower
        PLD is first-order short (see :meth:`Component.lower_short`).
        """
        allowance = query.levels_allowance
        if (p is not None and lower and allowance is not None and query.tol is not None
                and query.target is not None and comps[0].lower_short(query.tol, query.target)):
            p, comps = None, self.components(h, log_eta, d, LowerPld.NOW)
        if p is not None:
            parts = levels.self_compose(comps, p, log_eta, lam, lower)
            if parts is not None and p.extra:
                parts = Components([*parts, levels.extra_copies(self._upper_on(d, p.coarse, log_eta), p.extra)])
            if parts is not None:
                up, low = compose(parts, p.coarse, log_eta, lam, lower)
                if allowance is None:
                    return up, low if low is not None else silent_lower(comps)
                # delta falls about like e^{-lam eps} near the answer, so an error term that is
                # a share s of delta moves eps by about s / lam, i.e. s / (lam eps) relatively.
                assert query.delta is not None
                eps_up = float(up.epsilon(query.delta))
                scale = max(lam * eps_up, 1.0) if math.isfinite(eps_up) else 1.0
                if up.error_at(eps_up) <= allowance * scale:
                    return up, low if low is not None else silent_lower(comps)
            comps = self.components(h, log_eta, d, LowerPld.NOW if lower else LowerPld.LAZY)
        up, low = compose(comps, h, log_eta, lam, lower)
        return up, low if low is not None else silent_lower(comps)

    def _best_epsilon(self, delta: float) -> tuple[float, float]:
        """Best (lower, upper) eps(delta) over every profile kept.

        The lower value bounds the composed dominating pairs; it is a certified lower
        bound on the mechanism only when the accountant is ``tight``.
        """
        return self._made.epsilon(delta)

    def best_delta(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Certified (lower, upper) delta(eps) from the profiles made so far (no new FFT)."""
        lower, upper = self._best_delta(np.asarray(eps, dtype=float))
        return self._certified_lowers(lower), upper

    def _best_delta(self, eps: np.ndarray, fresh: Sequence[Pair] = ()) -> tuple[np.ndarray, np.ndarray]:
        """Best certified (lower, upper) delta(eps) over the profiles kept, the pairs ``fresh``
        (this pass's) always read (see :meth:`Made.delta`)."""
        return self._made.delta(eps, fresh)

    def spacing(self, eps_scale: float, tol: float, directions: Sequence[int] | None = None) -> float:
        """The grid spacing for an answer near ``eps_scale`` at relative accuracy ``tol``, the
        finest that the given directions (default: all) need.

        Rounded down to a power of 2^(1/4) before snapping to lattices, so that
        queries at nearby scales share one composed PLD.
        """
        chosen = range(len(self._directions)) if directions is None else directions
        h = min(self._spacing_of(d, eps_scale, tol) for d in chosen)
        # No single law may need more grid points than half the FFT may have, nor more than
        # the memory budget affords (see :func:`max_cells`): memory stays bounded (the bounds
        # stay valid; the accuracy check then reports what could not be reached).
        return max(h, self._widest / min(max_window() // 2, max_cells()))

    def _spacing_of(self, d: int, eps_scale: float, tol: float) -> float:
        """:func:`choose_spacing` for direction d (kept: a query asks for it on every pass)."""
        key = ("spacing", d, eps_scale, tol)
        if key not in self._memo:
            self._memo[key] = choose_spacing(self._laws_of(d), eps_scale, tol)
        return self._memo[key]

    def _laws_of(self, d: int) -> list[tuple[PrivacyLoss, int]]:
        """Direction d's (law, count) parts, each law replaced by the one kept for its value
        (:data:`~autoacct.pld.lawcache.LAWS_KEPT`): what sizes grids (moments, cumulants at the sizing tilts) is
        then computed once per law in the process, not once per mechanism that has it."""
        key = ("laws", d)
        if key not in self._memo:
            self._memo[key] = [(kept_law(loss), k) for loss, k in self._directions[d]]
        return self._memo[key]

    @cached_property
    def _widest(self) -> float:
        """The widest range any one law spans (up to P-mass 1e-16 in each tail)."""
        widths = [b - a for parts in map(self._laws_of, range(len(self._directions))) for loss, _ in parts
                  for a, b in [loss.quantile_range(1e-16)]]
        return max(widths, default=0.0)

    def _finer(self, eps_scale: float, old: float, new: float, directions: Sequence[int]) -> float:
        """A grid tolerance at most ``new`` whose spacing is finer than that of ``old`` for at
        least one of the directions, if one is within _STALL quarterings: a spacing held by
        a law's own scale (a few of its standard deviations) ignores the tolerance, and a
        pass on the same grid would repeat the last one."""
        before = [self.spacing(eps_scale, old, [d]) for d in directions]
        for _ in range(_STALL):
            if any(self.spacing(eps_scale, new, [d]) < b for d, b in zip(directions, before)):
                break
            new *= 0.25
        return new

    def _direction_scales(self, delta: float) -> list[float]:
        """A rough eps(delta) of each direction from a normal approximation; sizes grids only."""
        out = []
        for parts in map(self._laws_of, range(len(self._directions))):
            mean = sum(k * loss.moments[0] for loss, k in parts)
            var = sum(k * loss.moments[1] for loss, k in parts)
            out.append(mean + math.sqrt(2.0 * var * math.log(1.0 / delta)))
        return out

    def eps_scale(self, delta: float) -> float:
        """A rough eps(delta) from a normal approximation of the composed loss; sizes grids only."""
        return max(0.0, *self._direction_scales(delta))

    def _best_upper(self, d: int, delta: float) -> float:
        """Direction d's best upper eps(delta) over the profiles made (inf with none)."""
        return min((float(u.epsilon(delta)) for u, _ in self._made[d]), default=math.inf)

    def _settled(self, d: int, delta: float) -> bool:
        """Whether direction d's best upper eps is below another direction's best lower one:
        then it cannot be the larger of the two, and needs no finer grid."""
        up = self._best_upper(d, delta)
        others = [float(lo.epsilon(delta)) for e, made in enumerate(self._made) if e != d for _, lo in made]
        return up < max(others, default=-math.inf)

    def _larger_first(self, delta: float, eps_scale: float, tol: float, log_eta: float) -> list[int]:
        """The directions, the one likely to set eps(delta) first: by their Chernoff bounds
        (:meth:`_weighed`) where the coarse lattice spans at most _WEIGH_CELLS cells, else
        by the normal approximation. On the 24 cases of benchmarks/sweep.py whose two
        directions both needed the fine grid, the Chernoff bounds put the larger first on all
        24; the normal approximation, within 0.5% for both, put the smaller first on 17."""
        scales = self._direction_scales(delta)
        if len(scales) > 1:
            bounds = self._weighed(delta, eps_scale, tol, log_eta, max(range(len(scales)), key=lambda d: scales[d]))
            if bounds is not None and all(map(math.isfinite, bounds)):
                scales = bounds
        return sorted(range(len(scales)), key=lambda d: -scales[d])

    def _weighed(self, delta: float, eps_scale: float, tol: float, log_eta: float, a: int) -> list[float] | None:
        """Both directions' Chernoff bounds on eps(delta) for :meth:`_larger_first`, direction
        ``a``'s from its laws on its weighing lattice (:meth:`_weighing_lattice` of its coarse
        one); the other's from a's PLDs there where its laws reverse a's (:mod:`reversal`), else
        from its own laws on its weighing lattice. None where a coarse lattice would span more
        than _WEIGH_CELLS cells."""
        h = self._weighing_lattice(a, self.spacing(eps_scale, tol * _COARSE, [a]), log_eta)
        if h is None:
            return None
        out = [0.0, 0.0]
        out[a] = self._chernoff_epsilon(a, h, log_eta, delta)
        b = 1 - a
        reversed_pair = self._reversed(b, a)
        if reversed_pair is not None:
            out[b] = float(reversed_pair[0].epsilon(delta))
            return out
        h = self._weighing_lattice(b, self.spacing(eps_scale, tol * _COARSE, [b]), log_eta)
        if h is None:
            return None
        out[b] = self._chernoff_epsilon(b, h, log_eta, delta)
        return out

    def _weighing_lattice(self, d: int, h: float, log_eta: float) -> float | None:
        """The spacing of direction d's Chernoff bound that weighs it (:meth:`_weighed`): the
        coarse lattice h, doubled while its laws span more than _WEIGH_CHEAP cells (None
        where h spans more than _WEIGH_CELLS). Only the order of the two bounds is used, and
        a lattice twice as coarse moves each by about a cell."""
        if self._chernoff_cells(d, h, log_eta) > _WEIGH_CELLS:
            return None
        while self._chernoff_cells(d, h, log_eta) > _WEIGH_CHEAP:
            h *= 2.0
        return h

    def _coarse_may_settle(self, d: int, first: int, h: float, log_eta: float, delta: float, tol: float) -> bool:
        """Whether a coarse pass may settle direction d below direction ``first``: their Chernoff
        bounds on hZ (about equally loose for both) put d _COARSE_GAP * tol below. Closer, the
        coarse bound (about _COARSE * tol / 4 wide on benchmarks/sweep.py's DP-SGD cases) stays
        above the first one's lower bound. Not weighed where the first one's Chernoff bound
        would cost more than a coarse pass: its laws span over _WEIGH_CELLS cells."""
        if self._chernoff_cells(first, h, log_eta) > _WEIGH_CELLS:
            return True
        mine, theirs = (self._chernoff_epsilon(e, h, log_eta, delta) for e in (d, first))
        return not (math.isfinite(mine) and math.isfinite(theirs) and theirs > 0.0) or \
            mine < theirs * (1.0 - _COARSE_GAP * tol)

    def held_bytes(self) -> float:
        """Bytes of the arrays this accountant keeps (its discretised laws and composed
        profiles): every later step's memory estimate adds them (:func:`afford`)."""
        return float(sum(nbytes_of(v) for v in self._memo.values()))

    def epsilon(self, delta: float, eps_scale: float, tol: float = DEFAULT_TOL) -> tuple[float, float]:
        """Certified (lower, upper) bounds on eps(delta), within ``tol`` unless the resource
        budget (:mod:`autoacct.limits`) stops the refinement first: then the best bounds
        made so far, with a :class:`BudgetWarning` (every profile made is certified, so
        they remain valid; with none, [0, inf])."""
        with query_clock(self.held_bytes):
            try:
                return self._epsilon(delta, eps_scale, tol)
            except BudgetExceeded as exc:
                lower, upper = self._best_epsilon(delta)
                lower = self._certified_lower(lower)
                warn_budget(exc, f"eps({delta:g}) bounds [{lower:.6g}, {upper:.6g}]", tol)
                return lower, upper

    def _epsilon(self, delta: float, eps_scale: float, tol: float) -> tuple[float, float]:
        """Certified (lower, upper) bounds on eps(delta), refined until within ``tol``; laws that only
        dominate, at [inf, inf], have their own mass at +inf above delta: no answer, a warning.
        With two directions, the one likely to be larger (see :meth:`_larger_first` on the first
        pass, by its upper bound on later ones) is composed on the fine grid first. The other is
        first bounded by a Chernoff bound (from the first one's PLDs where its laws reverse the
        first one's, :meth:`_reversed`; else from its own laws), then composed on a grid 4 times
        coarser (its upper PLDs only: only its upper bound can settle it), then on the fine grid,
        each step only if its upper bound is not already below the first one's lower bound (a
        direction below the other cannot set eps). On the fine grid too its upper PLDs alone are
        composed, unless its upper bound then leads and the bracket misses tol."""
        log_eta = log_eta_for(delta, tol)
        eps_scale = max(eps_scale, self._jump_scale(delta, log_eta))
        query = PldQuery(eps_scale, delta, tol)
        order = self._larger_first(delta, eps_scale, tol, log_eta)
        grid_tol = tol

        def fine_profiles(query: PldQuery, directions: list[int], lower: set[int]
                          ) -> list[tuple[DiscreteProfile | MixtureProfile, Profile]]:
            # Each direction's grid is sized by its own laws at the answer's scale.
            return [self.aimed_profiles(self.spacing(eps_scale, grid_tol, [d]), log_eta, query, [d], grid_tol,
                                        d in lower)[0] for d in directions]

        for i in range(_MAX_REFINE + 1):
            if i:
                afford(0.0, 0.0, "another refinement pass")
                # The direction whose upper bound is the largest is refined first: it cannot be
                # settled, and the others then may be (the first pass's order, by Chernoff
                # bounds or a normal approximation, can put the smaller one first).
                order.sort(key=lambda d: -self._best_upper(d, delta))
            on_fine_grid, with_lower = [order[0]], {order[0]}
            deferred: list[int] = []
            fine_profiles(query, on_fine_grid, with_lower)
            for d in order[1:]:
                if self._settled(d, delta):
                    continue
                if self._reversed_may_settle(d, order[0], delta):
                    self._reversed(d, order[0])
                    if self._settled(d, delta):
                        continue
                coarse = self.spacing(eps_scale, grid_tol * _COARSE, [d])
                if self._chernoff_cells(d, coarse, log_eta) > _WEIGH_CELLS and self._split_pays(
                        d, self._tail_side(d, log_eta), self.spacing(eps_scale, grid_tol, [d]), log_eta,
                        self.eps_scale(delta)):
                    # Its split terms cost less than a Chernoff bound or a coarse pass over the
                    # whole law's lattice (2e6 cells, 0.5 s, at q = 1e-4, sigma = 0.1, k = 10);
                    # the split law's own Chernoff bound on the coarse lattice may settle it first.
                    self._split_chernoff(d, coarse, log_eta, query, grid_tol * _COARSE)
                else:
                    self._chernoff(d, coarse, log_eta)
                    if not self._settled(d, delta) and self._coarse_may_settle(d, order[0], coarse, log_eta, delta,
                                                                                 tol):
                        # Only its upper profile can settle it: the lower one is not composed.
                        self.aimed_profiles(coarse, log_eta, query, [d], grid_tol * _COARSE, lower=False)
                if not self._settled(d, delta):
                    (deferred if self._deferred(d, order[0], delta) else on_fine_grid).append(d)
            profs = fine_profiles(query, on_fine_grid, with_lower)
            lower, upper = self._best_epsilon(delta)
            lead = max(on_fine_grid, key=lambda d: self._best_upper(d, delta))
            if not within(lower, upper, tol) and lead not in with_lower:
                with_lower.add(lead)
                profs = fine_profiles(query, on_fine_grid, with_lower)
                lower, upper = self._best_epsilon(delta)
            # A direction settled below another cannot set eps: its tilt's aim does not matter.
            open_dirs = [d for d in on_fine_grid if not self._settled(d, delta)]
            aimed = [pair for d, pair in zip(on_fine_grid, profs) if d in open_dirs]
            if not within(lower, upper, tol) and math.isfinite(upper) and (deferred or not well_inside(aimed, upper)):
                # The tilt aimed away from the answer: aim at the answer found and retry. A
                # split law's grids are sized by the answer's scale too: the normal
                # approximation behind eps_scale can miss a tail-decided answer by 1000 times.
                # (Every profile is certified whatever its tilt: bounds already within tol
                # need no second aim.) A direction deferred waits for this retry: the first
                # direction's lattice failed it, and its split or moved lattice is taken now.
                query = query.aimed_at(upper)
                if any(isinstance(u, MixtureProfile) for u, _ in aimed):
                    eps_scale = upper
                profs = fine_profiles(query, open_dirs, with_lower)
                lower, upper = self._best_epsilon(delta)
            if within(lower, upper, tol) and (math.isfinite(upper) or self.tight):
                return self._certified_lower(lower), upper
            if not math.isfinite(upper):
                break
            grid_tol = self._finer(eps_scale, grid_tol, grid_tol * shrink(upper - lower, tol * upper), on_fine_grid)
        lower = self._certified_lower(lower)  # (as returned: 0 for laws that only dominate)
        warn_loose(f"eps({delta:g}) bounds [{lower if lower < upper else 0:.6g}, {upper:.6g}] are wider than "
                   f"tol={tol:g}")
        return lower, upper

    def delta(self, eps: np.ndarray, eps_scale: float, tol: float = DEFAULT_TOL,
              log_eta: float = math.log(1e-18)) -> tuple[np.ndarray, np.ndarray]:
        """Certified (lower, upper) bounds on delta(eps) for an array of eps, within ``tol``
        unless the resource budget stops the refinement first (as for :meth:`epsilon`; with
        no profile made, [0, 1])."""
        with query_clock(self.held_bytes):
            try:
                return self._delta(np.asarray(eps, dtype=float), eps_scale, tol, log_eta)
            except BudgetExceeded as exc:
                lower, upper = self._best_delta(np.asarray(eps, dtype=float))
                warn_budget(exc, "delta bounds", tol)
                return self._certified_lowers(lower), upper

    def _delta(self, eps: np.ndarray, eps_scale: float, tol: float, log_eta: float
               ) -> tuple[np.ndarray, np.ndarray]:
        """Certified (lower, upper) bounds on delta(eps) for an array of eps.

        Accuracy target: the upper bound at eps does not exceed the lower bound
        at eps (1 - tol), i.e. the answer is tol-accurate on the eps scale.
        """
        through = self._through_epsilon(eps, tol, log_eta)
        if through is not None:
            return self._certified_lowers(through[0]), through[1]
        scale = max(eps_scale, float(np.max(eps, initial=0.0)))
        grid_tol = tol
        target = float(eps.ravel()[0]) if eps.size == 1 else None
        for i in range(_MAX_REFINE + 1):
            if i:
                afford(0.0, 0.0, "another refinement pass")
            h = self.spacing(scale, grid_tol)
            profs = self.profiles(h, log_eta, PldQuery(target))
            lower, upper = self._best_delta(eps, profs)
            shrunk = self._best_delta(eps * (1 - tol), profs)[0]
            # Gaps made of rounding and truncation floors do not shrink with h.
            floor = np.max([u.floor(eps) + lo.floor(eps) for u, lo in profs], axis=0)
            gap = upper - lower
            within = (upper <= shrunk) | (gap <= tol * upper)
            ok = within | (gap <= 4.0 * floor + 1e3 * math.exp(log_eta))
            if np.all(ok):
                if target is None and not np.all(within):
                    # An untilted curve's floor is absolute: relative accuracy beyond it.
                    self._beyond_floor(eps, within, h, log_eta)
                    lower, upper = self._best_delta(eps)
                return self._certified_lowers(lower), upper
            worst = float(np.max(np.where(ok, 0.0, (upper - lower) / np.maximum(upper, 1e-300))))
            grid_tol *= shrink(worst, tol)
        warn_loose(f"delta bounds are wider than tol={tol:g}")
        return self._certified_lowers(lower), upper

    def _certified_lower(self, lower: float) -> float:
        """The lower bound if the pairs are attained (see ``tight``), else 0."""
        return lower if self.tight else 0.0

    def _certified_lowers(self, lower: np.ndarray) -> np.ndarray:
        """:meth:`_certified_lower` for an array of lower bounds."""
        return lower if self.tight else np.zeros_like(lower)

    def composed(self, eps_scale: float, tol: float = DEFAULT_TOL) -> list[tuple[DiscreteProfile, Composed]]:
        """The (upper, lower) composed profiles of each direction (forward first) on the grid
        :meth:`tradeoff` reads at this accuracy: the arrays behind its numbers, for export and
        for bounds derived from whole curves. Composed once, then cached; no number changes.
        Raises :class:`BudgetExceeded` when a step would pass the resource budget."""
        with query_clock(self.held_bytes):
            return self.profiles(self.spacing(eps_scale, tol), math.log(1e-18))

    @property
    def directions(self) -> int:
        """Number of directions composed: 1 when every part is symmetric, else 2 (forward, backward)."""
        return len(self._directions)

    def tradeoff(self, alpha: np.ndarray, eps_scale: float, tol: float = DEFAULT_TOL) -> np.ndarray:
        """Lower bound on the tradeoff function: the smaller of the directions' curves. Past the
        resource budget, a direction's best curve from the profiles made so far (0, a lower
        bound of any tradeoff curve, if none), with a :class:`BudgetWarning`; where the two
        directions reverse each other law by law, each also at least the other's inverse
        (:func:`inverse_tradeoff`): a direction the budget stopped is not left at 0."""
        with query_clock(self.held_bytes):
            try:
                profs = self.profiles(self.spacing(eps_scale, tol), math.log(1e-18), lower=False)
                return np.min([u.tradeoff(alpha) for u, _ in profs], axis=0)
            except BudgetExceeded as exc:
                warn_budget(exc, "the tradeoff curve", tol)
                a = np.asarray(alpha, dtype=float)
                best = [best_curve(made, a) for made in self._made]
                if reverses_law_by_law(self._directions):
                    best = [np.maximum(best[d], inverse_tradeoff(partial(best_curve, self._made[1 - d]), a))
                            for d in (0, 1)]
                return np.min(best, axis=0)


def _forget(memo: dict[tuple, Any], pair: Pair) -> None:
    """Drop ``memo``'s entries for a pair of profiles no longer kept (see :class:`Made`)."""
    for key in [k for k, v in memo.items() if v is pair]:
        del memo[key]
