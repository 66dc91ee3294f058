"""The split of a rarely sampled law into bulk and tail (see :mod:`jumps`), as the FFT accountant
uses it: whether it applies and pays, the split law discretised, its profiles for an eps(delta)
query, and the scale of an answer that one large loss decides.

:class:`SplitDirections` is a mixin of :class:`~autoacct.pld.accountant.FFTAccountant`: it reads
the accountant's directions, memo and profiles made (the :class:`_Host` protocol) and keeps its
results in the same memo, under the keys "split", "tail-side", "heavy-side", "split-law",
"aligned" and "aligned-taken" (a law composed on a moved lattice, unsplit), and "hopeless" (one
lattice found bound to fail a law before it was composed).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, Protocol

import numpy as np

from autoacct.errors import BudgetExceeded
from autoacct.exactness import round_up
from autoacct.losses import PrivacyLoss
from autoacct.losses.restricted import restricted
from autoacct.pld import blocks, jumps, levels, terms
from autoacct.pld.chernoff import ChernoffProfile
from autoacct.pld.components import Component, LowerPld
from autoacct.pld.compose import max_window
from autoacct.pld.costs import afford_cells, lower_of
from autoacct.pld.cumulants import Components, Cumulant, chernoff_exponents, composed_inf_mass, least_rounding
from autoacct.pld.discretize import discretize, discretize_upper
from autoacct.pld.grid import choose_spacing, index_range
from autoacct.pld.lawcache import TAILS, law_key, log_mgf_up, round_up_quarter
from autoacct.pld.made import Made
from autoacct.pld.mixture import SUM_ULPS, MixtureProfile
from autoacct.pld.profiles import DiscreteProfile
from autoacct.pld.query import ROUNDING_SHARE, PldQuery, within


class _Host(Protocol):
    """What :class:`SplitDirections` reads of the accountant it is mixed into."""

    _directions: list[list[tuple[PrivacyLoss, int]]]
    _memo: dict[tuple, Any]
    _made: Made

    def _eta(self, log_eta: float) -> float: ...

    def eps_scale(self, delta: float) -> float: ...

    def _tail_side(self, d: int, log_eta: float) -> jumps.TailSide | None: ...

    def _best_upper(self, d: int, delta: float) -> float: ...

    def _heavy_side(self, d: int, log_eta: float, delta: float) -> jumps.TailSide | None: ...

    def _one_lattice_failed(self, d: int, delta: float, factor: float) -> bool: ...

    def _moved_at_once(self, d: int, comp: Component, offset: float, log_eta: float, query: PldQuery,
                       budget: float) -> tuple[MixtureProfile, MixtureProfile] | None: ...

    def _split_law(self, d: int, h: float, log_eta: float, scale: float, tol: float,
                   omitted: float, normal_scale: float, delta: float) -> jumps.SplitLaw | None: ...

    def _split_pays(self, d: int, side: jumps.TailSide | None, h: float, log_eta: float,
                    normal_scale: float) -> bool: ...

    def _plan(self, d: int, h: float, log_eta: float, query: PldQuery) -> levels.Plan | None: ...

    def components(self, h: float, log_eta: float, d: int, lower: LowerPld = LowerPld.NOW) -> Components: ...

    def _note_hopeless(self, d: int, h: float, log_eta: float, query: PldQuery) -> None: ...


class SplitDirections:
    """The accountant's methods for a direction whose one law is split (see the module docstring)."""

    def _split(self: _Host, d: int, h: float, log_eta: float, query: PldQuery, grid_tol: float
               ) -> tuple[MixtureProfile, MixtureProfile] | None:
        """Direction d's profiles for an eps(delta) query by splitting its one law into bulk
        and tail (see :mod:`jumps`), or None where the split does not apply or pay: a law
        without atoms composed more than once whose range at the accuracy of spacing h
        needs at least jumps.MIN_CELLS cells while all but a share jumps.TAIL_RATE / k of
        its mass lies in a small first (or last) share of that range (:func:`jumps.pays`)."""
        if query.delta is None or query.target is None or query.tol is None:
            return None
        key = ("split", h, log_eta, d, grid_tol, *query.tilt_key)
        if key not in self._memo:
            profs = None
            side = self._tail_side(d, log_eta)
            if side is None or not self._split_pays(d, side, h, log_eta, self.eps_scale(query.delta)):
                # No split at the strict rate: one lattice may be bound to fail (a heavy split).
                self._note_hopeless(d, h, log_eta, query)
            law = self._split_law(d, h, log_eta, query.target, grid_tol, query.tol * query.delta,
                                  self.eps_scale(query.delta), query.delta)
            if law is not None:
                (_, k), = self._directions[d]
                budget = query.log_rounding_budget
                assert budget is not None  # a query with a delta has one
                profs = terms.split_profiles(law, k, log_eta, query.target, budget,
                                             jumps.OMITTED_SHARE * query.tol * query.delta, query.tol)
                if profs is not None:
                    self._made.add(d, profs)
            self._memo[key] = profs
        return self._memo[key]

    def _split_chernoff(self: _Host, d: int, h: float, log_eta: float, query: PldQuery, grid_tol: float) -> None:
        """Make direction d's split law at the accuracy of spacing h (as :meth:`_split` would,
        kept), which adds its Chernoff profiles (:func:`split_chernoff`, no FFT) to the profiles
        made; nothing where the split does not apply or pay. A direction whose laws' Chernoff
        bound on one coarse lattice would span too many cells may be settled by it before its
        terms are composed: at q = 1e-5, sigma = 0.465, k = 1e6, delta = 1e-5 the add
        direction's split law bounds eps by 0.316 where the remove direction's lower bound is
        0.9925, and composing its terms on the fine lattice (0.49 s of a 1.3 s query) gave
        [0, 1.102]."""
        if query.delta is None or query.target is None or query.tol is None:
            return
        self._split_law(d, h, log_eta, query.target, grid_tol, query.tol * query.delta,
                        self.eps_scale(query.delta), query.delta)

    def _tail_side(self: _Host, d: int, log_eta: float) -> jumps.TailSide | None:
        """:func:`jumps.tail_side` of direction d's one law (None for several laws), for its
        count rounded up to the next ceil(2^(j/4)) (:func:`~autoacct.pld.lawcache.round_up_quarter`): the tail then
        holds at most a share rate / k all the same, and the answer, kept by value
        (:data:`~autoacct.pld.lawcache.TAILS`), holds while the count grows by up to 19%."""
        key = ("tail-side", log_eta, d)
        if key not in self._memo:
            parts = self._directions[d]
            side = None
            if len(parts) == 1:
                (loss, k), = parts
                k2, eta = round_up_quarter(k), self._eta(log_eta)
                side = TAILS.get(("tail-side", law_key(loss), k2, eta),
                                  lambda: jumps.tail_side(loss, k2, eta))
            self._memo[key] = side
        return self._memo[key]

    def _heavy_side(self: _Host, d: int, log_eta: float, delta: float) -> jumps.TailSide | None:
        """:func:`jumps.heavy_side` of direction d's one law, once one lattice has failed it:
        the profiles made for it (with a lower bound) bound eps(``delta``) no closer than a
        factor _FAILED, from a window of at least 1 / _FAILED_GROWTH of the grid's cap.
        Where one lattice serves, the heavy split's many terms cost more (see
        :func:`jumps.heavy_side`); a first pass with a lower bound of 0 on a window of 3e4-4e4
        points refines on one lattice within tol in a few tenths of a second (q = 1e-3,
        sigma = 0.25-0.3, k = 5e3-1e4), while at q = 1e-4, sigma = 0.25, k = 1e5 (1.4e5
        points) one lattice stops at [3.1, 53.6] and the heavy split reaches [53.48, 53.64],
        and at q = 1e-5, sigma = 0.23, k = 1e6 (6.2e5 points, cut to the cap when refined)
        [0, 49.94] becomes [49.48, 49.94]. None before that, and for several laws."""
        parts = self._directions[d]
        if len(parts) != 1:
            return None
        key = ("heavy-side", log_eta, d)
        if key not in self._memo:
            if not self._one_lattice_failed(d, delta, _FAILED):
                return None
            # (a law noted hopeless needs no window evidence: no lattice was composed for it)
            if not self._memo.get(("hopeless", d)) and not any(
                    isinstance(up, DiscreteProfile) and len(up.tilted) * _FAILED_GROWTH >= max_window()
                    for up, lo in self._made[d] if not isinstance(lo, ChernoffProfile)):
                return None
            # Kept once asked: the split's own bounds then no longer show the failure.
            (loss, k), = parts
            k2, eta = round_up_quarter(k), self._eta(log_eta)
            self._memo[key] = TAILS.get(("heavy-side", law_key(loss), k2, eta),
                                        lambda: jumps.heavy_side(loss, k2, eta))
        return self._memo[key]

    def _one_lattice_failed(self: _Host, d: int, delta: float, factor: float) -> bool:
        """Whether the profiles made for direction d with a lower bound bound eps(``delta``) no
        closer than ``factor`` (pairs whose lower profile is a Chernoff one composed no lower
        bound: no evidence), or one lattice was found bound to fail it before any was composed
        (:meth:`_note_hopeless`)."""
        if self._memo.get(("hopeless", d)):
            return True
        made = [lo for _, lo in self._made[d] if not isinstance(lo, ChernoffProfile)]
        return bool(made) and max(float(lo.epsilon(delta)) for lo in made) < factor * self._best_upper(d, delta)

    def _note_hopeless(self: _Host, d: int, h: float, log_eta: float, query: PldQuery) -> None:
        """Note (kept, as evidence for :meth:`_one_lattice_failed`) whether one lattice is bound to
        fail direction d's one law at the accuracy of spacing h before it is composed: on the
        lattice its composition would use (the finest of a levels plan), the law's lower PLD's
        mean falls short of the upper one's by more than _HOPELESS times the eps aimed at over
        its k copies, so that the composed lower bound is 0 and each refinement removes only
        its share of that first-order gap. The split or moved lattice is then taken at once.
        At q = 1e-5, sigma = 0.4, k = 1e7, delta = 1e-10 the gap is 25 times the aim (the first
        lattice answered [0, 10.51] in 1.5 s of a 2.3 s query before the heavy split answered
        [10.4998, 10.5055]); where one lattice does serve, at q = 1e-3, sigma = 0.217-0.3,
        k = 5e3-1e4, it is 0.45 to 0.53 times the aim."""
        parts = self._directions[d]
        if len(parts) != 1 or self._memo.get(("hopeless", d)) or query.target is None:
            return
        # A lower PLD falls short by about a cell a copy at most: below that no lower PLD is made
        # here (on the finest lattice of a levels plan, which may never read it, it took 0.2 s
        # at q = 1e-3, sigma = 0.217, k = 1e4, where k h is half the aim), nor a plan (a
        # plan's finest lattice is no coarser than h).
        if parts[0][1] * h <= _HOPELESS * query.target:
            return
        p = self._plan(d, h, log_eta, query)
        g = h if p is None else p.finest
        if parts[0][1] * g <= _HOPELESS * query.target:
            return
        comps = self.components(g, log_eta, d, LowerPld.NOW if p is None else LowerPld.KEPT)
        (c,) = comps
        # The first-order shortfall comes from a spike, a cell or two holding most of the mass:
        # a law spread over many cells (DP-SGD at sigma 12-14, k = 1.4e5-1.9e5, whose lower PLD
        # would cost 15 ms on the finest lattice) is not asked for its lower PLD.
        if c.count * g * float(c.upper.masses.max(initial=0.0)) <= _HOPELESS * query.target:
            return
        if c.count * (c.upper.moment - c.lower.moment) > _HOPELESS * query.target:
            self._memo[("hopeless", d)] = True

    def _deferred(self: _Host, d: int, first: int, delta: float) -> bool:
        """Whether direction d, not settled by its coarse bounds, waits for direction ``first``'s
        next profiles before its own fine composition: first's lattice has failed it
        (:meth:`_one_lattice_failed` by _MOVE_FAILED), so those come from a split or a moved
        lattice whose lower bound may settle d, and d's best upper bound is below first's (d
        cannot raise the answer's upper end). At q = 1e-5, sigma = 0.2306, k = 1e6, delta = 1e-5
        the remove direction's first lattice bounded eps by [0, 49.94] and the add direction,
        at most 5.89 on its coarse lattice, was composed on the fine one (0.2 s of 1.2 s) before
        the remove direction's heavy split answered [49.933, 49.939]."""
        below = self._best_upper(d, delta) < self._best_upper(first, delta)
        return below and self._one_lattice_failed(first, delta, _MOVE_FAILED)

    def _aligned(self: _Host, d: int, h: float, log_eta: float, query: PldQuery
                 ) -> tuple[MixtureProfile, MixtureProfile] | None:
        """Direction d's profiles for an eps(delta) query from its laws, each discretised on the
        lattice hZ moved by the offset :func:`jumps.aligned_bulk` chooses for it, once one
        lattice has failed it (:meth:`_one_lattice_failed` by the factor _MOVE_FAILED): one law
        composed as a split law's term of no tail copies (:func:`terms.moved_profiles`), several
        at once (:func:`terms.moved_composition`). None before that, for a law on a lattice of
        its own or whose lower PLD merges its atoms (``merged_lower``), and where the offset 0
        does best for every law (that is one lattice).

        A law whose mass sits in a spike narrower than a cell at its support's start
        log(1 - q), sampled too often to be split (its terms would be too many), has a lower PLD
        first-order short on hZ, and refining the lattice only shrinks the loss by the cell: at
        q = 1e-3, sigma = 0.217, k = 1e4, delta = 1e-5 one lattice answered [0, 137.25] and,
        refined 64 times, [136.94, 137.22] after 4.9 s (wider than tol); with the spike's loss
        on the lattice, the first lattice's. So too for a law whose atoms are read through its
        cells: the Poisson-subsampled Laplace mechanism's (b = 0.1, q = 1e-4, 1e6 runs) has half
        its mass in an atom near -q, and its eps(1e-6) stood at [102.05, 105.89] on the cap of
        one lattice; moved, [105.8802, 105.8901] in 0.15 s."""
        if query.delta is None or query.target is None or query.tol is None:
            return None
        key = ("aligned", h, log_eta, d, *query.tilt_key)
        if key not in self._memo:
            pair = None
            parts = self._directions[d]
            # A law on a lattice of its own keeps it, and one whose lower PLD merges its atoms
            # merges them onto any lattice (:mod:`merged`): neither is moved. Once taken, the
            # move is kept: the moved lattice's own bounds no longer show the failure.
            movable = not any(loss.merged_lower or loss.lattice is not None for loss, _ in parts)
            if movable and (self._memo.get(("aligned-taken", d))
                            or self._one_lattice_failed(d, query.delta, _MOVE_FAILED)):
                eta = self._eta(log_eta)
                # (each law's offset may move eps by its share of the allowance)
                allowance = _ALIGN * query.tol * query.target / len(parts)
                moved = [jumps.aligned_bulk(loss, h, k, query.target, allowance, eta,
                                            partial(_component_on, h=h, eta=eta, count=k, cost=loss.cell_cost))
                         for loss, k in parts]
                budget = query.log_rounding_budget
                assert budget is not None  # a query with a delta has one
                if len(parts) > 1 and any(offset != 0.0 for _, offset in moved):
                    # Several laws, each on its own moved lattice, compose at once.
                    pair = terms.moved_composition(moved, log_eta, query.target, budget)
                    self._made.add(d, pair)
                    self._memo[("aligned-taken", d)] = True
                (comp, offset), k = moved[0], parts[0][1]
                if len(parts) == 1 and offset != 0.0:
                    pair = terms.moved_profiles(comp, k, offset, log_eta, query.target, budget, query.tol)
                    self._made.add(d, pair)
                    self._memo[("aligned-taken", d)] = True
                    if not within(float(pair[1].epsilon(query.delta)), float(pair[0].epsilon(query.delta)),
                                  query.tol):
                        pair = self._moved_at_once(d, comp, offset, log_eta, query, budget) or pair
            self._memo[key] = pair
        return self._memo[key]

    def _moved_at_once(self: _Host, d: int, comp: Component, offset: float, log_eta: float, query: PldQuery,
                       budget: float) -> tuple[MixtureProfile, MixtureProfile] | None:
        """:meth:`_aligned`'s profiles from one fine composition of the moved law's copies, added
        to the profiles made; None where the time or memory budget will not have it (the
        refinement then goes on from the blocks' profiles).

        Blocks re-discretise each block's composition on a coarser lattice, where the composed
        spike (at a multiple of its lattice point) falls between points again: at q = 1e-4,
        sigma = 0.15, k = 1e6, delta = 1e-5 the blocks bounded eps within 1.3% and refining
        them took 4.6 s to [1885.30, 1887.09]; with one fine composition after the blocks the
        query answers [1886.971, 1886.972] in 1.2 s. Asked only where the blocks miss tol: one
        composition over a wide law's million copies can exceed the budget (q = 3e-4,
        sigma = 0.2, k = 3e6, where the blocks meet tol in 0.6 s)."""
        assert query.target is not None and query.tol is not None
        (_, k), = self._directions[d]
        try:
            pair = terms.moved_profiles(comp, k, offset, log_eta, query.target, budget, query.tol, in_blocks=False)
        except BudgetExceeded:
            return None
        self._made.add(d, pair)
        return pair

    def _split_law(self: _Host, d: int, h: float, log_eta: float, scale: float, tol: float,
                   omitted: float, normal_scale: float, delta: float) -> jumps.SplitLaw | None:
        """Direction d's one law split at its threshold (:meth:`_tail_side`, else
        :meth:`_heavy_side`) and discretised:
        the bulk on hZ, the tail on a lattice R h with R at least jumps.coarse_ratio(k) and
        such that the few tail copies the terms compose (as many as an omitted mass
        ``omitted`` leaves) meet ``tol`` at the answer's ``scale`` (:func:`choose_spacing`),
        rounded down to a multiple of blocks.block_ratio(k) where that is not 0.
        Whether the split pays is judged against the normal approximation's scale, which
        does not move as the query is aimed again.
        None when the law's range at the spacing h has fewer than jumps.MIN_CELLS cells (one
        lattice is cheap enough)."""
        side = self._tail_side(d, log_eta)
        if side is None or not self._split_pays(d, side, h, log_eta, normal_scale):
            side = self._heavy_side(d, log_eta, delta)
            if side is None or not self._split_pays(d, side, h, log_eta, normal_scale):
                return None
        (loss, k), = self._directions[d]
        eta = self._eta(log_eta)
        copies = min(jumps.terms_needed(side.rate, omitted) or jumps.MAX_TERMS, k) + 1
        bulk_law, tail_law = jumps.parts_at(loss, side.side, side.tau, side.low)
        # The bulk's own spread may call for a finer lattice than the whole law's: a spacing
        # above a few of its standard deviations leaves its lower PLD first-order short,
        # which k copies turn into a shift of the whole composition. At most _BULK_FINER
        # times finer: the bulk's error model aims at eps, which a bulk far below it never
        # reaches, and would ask for 20000 times finer (q = 1e-4, sigma = 0.1, k = 10).
        h = min(h, max(choose_spacing([(bulk_law, k)], scale, tol), h / _BULK_FINER))
        ratio = max(jumps.coarse_ratio(k), int(choose_spacing([(tail_law, copies)], scale, tol) / h))
        # A multiple of the bulk's block ratio, so that its blocks' lattice refines the coarse
        # one (a finer coarse lattice only tightens the tail's bounds).
        block = blocks.block_ratio(k)
        if block and ratio >= block:
            ratio -= ratio % block
        key = ("split-law", h, log_eta, d, ratio, side.rate)
        if key not in self._memo:
            coarse = ratio * h
            # The threshold on the coarse lattice (hence on the fine one): each lattice's cells
            # then hold only bulk or only tail.
            rounding = math.floor if side.side < 0 else math.ceil
            tau = rounding(side.tau / coarse) * coarse
            low = math.floor(side.low / coarse) * coarse if side.side == 0 else -math.inf
            if not jumps.cuttable(loss, (tau, low)):
                return None
            bulk, tail = jumps.parts_at(loss, side.side, tau, low)
            fine = partial(_component_on, h=h, eta=eta, count=k, cost=loss.cell_cost)
            # The fine lattice's offset: its lower PLD's mean and variance gaps may move eps of
            # the k copies by a share _ALIGN of tol (see jumps.aligned_bulk).
            bulk_fine, offset = jumps.aligned_bulk(bulk, h, k, scale, _ALIGN * tol * scale, eta, fine)
            c_lo, c_hi = index_range(bulk, coarse, eta)
            afford_cells(c_hi - c_lo, False, loss.cell_cost)
            bulk_coarse = Component(discretize_upper(bulk, coarse, c_lo, c_hi),
                                    partial(lower_of, bulk, coarse, c_lo, c_hi), k)
            t_lo, t_hi = index_range(tail, coarse, eta)
            afford_cells(t_hi - t_lo, True, loss.cell_cost)
            tail_coarse = Component(*discretize(tail, coarse, t_lo, t_hi), k)
            self._memo[key] = jumps.split_law(bulk_fine, bulk_coarse, tail_coarse, ratio, offset)
            self._made.add(d, split_chernoff(self._memo[key], k))
        law = self._memo[key]
        if side[0] > 0:
            # (the threshold as the tail was cut at it above)
            tau = math.ceil(side[1] / (ratio * h)) * (ratio * h)
            return _far_split(self._memo, key, law, loss, tau, k, scale, omitted, copies, eta)
        return law

    def _split_pays(self: _Host, d: int, side: jumps.TailSide | None, h: float, log_eta: float,
                    normal_scale: float) -> bool:
        """Whether direction d's one law, with a tail ``side``, is split at the accuracy of
        spacing h: its range needs jumps.MIN_CELLS cells or more and the split pays
        (:func:`jumps.pays`, against the normal approximation's scale)."""
        if side is None:
            return False
        (loss, k), = self._directions[d]
        a, b = loss.quantile_range(self._eta(log_eta))
        return b - a >= jumps.MIN_CELLS * h and jumps.pays(side, b - a, normal_scale, k, (b - a) / h, loss.has_atoms)

    def _jump_scale(self: _Host, delta: float, log_eta: float) -> float:
        """A rough eps(delta) where one large loss decides it: for a direction whose law has a
        right tail (:meth:`_tail_side`), the loss that one of its k runs exceeds with
        probability about delta (at most k times the law's tail beyond it), 0 otherwise.
        Sizes grids only: the normal approximation misses such answers by up to 1000 times."""
        out = 0.0
        for d, parts in enumerate(self._directions):
            side = self._tail_side(d, log_eta)
            # (a heavy tail, split at the loose rate, is not one large loss)
            if side is not None and side[0] > 0 and side[2] <= jumps.MAX_BULK_SHARE and side.rate <= jumps.TAIL_RATE:
                (loss, k), = parts
                # (for the count rounded up as for the tail side: kept by value)
                mass, eta = delta / round_up_quarter(k), self._eta(log_eta)

                def high(loss: PrivacyLoss = loss, mass: float = mass, eta: float = eta) -> float:
                    a, b = loss.quantile_range(eta)
                    return jumps.quantiles(loss, mass, a, b)[1]
                out = max(out, TAILS.get(("jump", law_key(loss), mass, eta), high))
        return out


def _far_split(memo: dict[tuple, Any], key: tuple, law: jumps.SplitLaw, loss: PrivacyLoss, tau: float,
               count: int, scale: float, omitted: float, copies: int, eta: float) -> jumps.SplitLaw:
    """The split law ``law`` (kept in ``memo`` under ``key``) with its right tail (above ``tau``) split again
    above the answer (:func:`jumps.far_cut`) where its term of one tail copy could not meet
    its share of the rounding budget at any tilt at the eps ``scale`` (a delta of
    ``omitted`` / tol; the budget shared as :func:`terms.split_profiles` shares it): ``law``
    itself otherwise, and where no cut pays. The decision is kept for each scale, the law
    split again once: a query aimed first far above its answer (two steps at q = 1e-5,
    sigma = 1.05, delta = 1e-14: at 0.0103 for 0.0039) needs no cut there."""
    needed = ("far-needed", key, scale, omitted)
    if needed not in memo:
        log_budget = math.log(ROUNDING_SHARE * omitted) - math.log(copies + 1.0) - math.log(count)
        probe = [law.bulk_coarse.recounted(count - 1), law.tail_coarse.recounted(1)]
        memo[needed] = least_rounding(probe, scale) > log_budget
    if not memo[needed]:
        return law
    far_key = ("far-law", key)
    if far_key not in memo:
        memo[far_key] = law
        coarse = law.tail_coarse.upper.h
        tail = restricted(loss, tau, math.inf)
        top = index_range(tail, coarse, eta)[1] * coarse
        # (cut above twice the answer: the far part's terms then sit above it)
        cut = jumps.far_cut(loss, tau, count, jumps.FAR_SHARE * omitted, coarse, top, 2.0 * scale,
                             eta)
        if cut is not None:
            near, far = restricted(loss, tau, cut), restricted(loss, cut, math.inf)
            parts = []
            for part in (near, far):
                j_lo, j_hi = index_range(part, coarse, eta)
                afford_cells(j_hi - j_lo, True, loss.cell_cost)
                parts.append(Component(*discretize(part, coarse, j_lo, j_hi), count))
            memo[far_key] = jumps.split_law(law.bulk_fine, law.bulk_coarse, parts[0], law.ratio, law.offset,
                                            parts[1])
    return memo[far_key]


def _component_on(part: PrivacyLoss, h: float, eta: float, count: int, cost: float) -> Component:
    """``count`` copies of ``part`` discretised (upper and lower PLDs) on hZ up to P-mass eta in
    each tail, its cells asked of the budget at ``cost`` (the whole law's) each."""
    j_lo, j_hi = index_range(part, h, eta)
    afford_cells(j_hi - j_lo, True, cost)
    return Component(*discretize(part, h, j_lo, j_hi), count)


def split_chernoff(law: jumps.SplitLaw, count: int) -> tuple[ChernoffProfile, ChernoffProfile]:
    """The :class:`ChernoffProfile` pair of ``count`` copies of a split law's whole measure.

    The sum of the bulk's and the tail's upper PLDs (the bulk's on the fine lattice, its
    losses moved back by the lattice's offset) bounds the law's profile from above, profiles
    being linear in the measure; its MGF, the sum of theirs, then gives the Chernoff bound
    of the composition. No FFT and no window: it bounds the direction where the terms'
    tilts aim far above its answer. The add direction of q = 1e-5, sigma = 0.6, k = 1e6,
    delta = 1e-10 (eps at most 0.216 by this bound, the remove direction's 1.0773) had its
    terms aimed at 1.41 and said nothing below their windows, from 1.235: the query spent
    its time budget refining it and answered [1.0773, 1.2347]."""
    bulk, tail = law.bulk_fine.upper, law.tail_coarse.upper
    grid = chernoff_exponents(bulk.h)
    moved = grid * law.offset
    k_bulk, k_tail = log_mgf_up(bulk, grid) + moved, log_mgf_up(tail, grid)
    with np.errstate(invalid="ignore"):
        if law.far is not None:
            k_far = log_mgf_up(law.far.upper, grid)
            k_tail = np.logaddexp(k_tail, k_far) + SUM_ULPS * (np.abs(k_tail) + np.abs(k_far))
        per_copy = np.logaddexp(k_bulk, k_tail)
        # (rounded up: the sum, the move and the logarithm, a few ulps of the parts each)
        per_copy += SUM_ULPS * (np.abs(k_bulk) + np.abs(k_tail) + np.abs(moved))
    values = np.where(np.isnan(per_copy), np.inf, per_copy) * float(count)
    # (a table of the whole law's values: the Chernoff profile reads only them and the grid)
    k = Cumulant(Components([law.bulk_fine]), "upper", bulk.h, values=values, grid=grid)
    # (the parts' sum rounded up: two additions of positive terms)
    p_inf = round_up(bulk.p_inf + tail.p_inf + (0.0 if law.far is None else law.far.upper.p_inf))
    inf_mass = composed_inf_mass([(p_inf, count)], True)
    return ChernoffProfile(k, inf_mass, True), ChernoffProfile(k, inf_mass, False)


#: A direction's profiles bounding eps within this factor (lower / upper) have not failed it,
#: nor have they on a window below 1 / _FAILED_GROWTH of the grid's cap (two refinements of
#: the spacing by 8 reach the cap from there): the heavy split is not asked (see
#: :meth:`SplitDirections._heavy_side`).
_FAILED = 0.5
_FAILED_GROWTH = 64
#: One lattice is bound to fail a law whose lower PLD falls short of its upper one, over its
#: copies, by this many times the eps aimed at (see :meth:`SplitDirections._note_hopeless`).
_HOPELESS = 2.0
#: A direction's profiles bounding eps within this factor have not failed it for
#: :meth:`SplitDirections._aligned`, which costs one discretisation where the lattice needs no
#: moving. At q = 1e-2, sigma = 0.15, k = 1e3, delta = 1e-5 one lattice's first pass bounded
#: eps within 0.72 and, refined 600 times finer, stopped at the time budget at [463.7, 475.6]
#: (the spike's first-order loss shrinks with the cell, the composed window grows);
#: on the moved lattice the first pass answers [475.5719, 475.5721] in 0.45 s.
_MOVE_FAILED = 0.9
#: A split law's bulk lattice is at most this many times finer than the whole law's.
_BULK_FINER = 8.0
#: Share of tol * eps the split bulk's lower PLD may lose over its k copies before its lattice
#: is moved (see :func:`jumps.aligned_bulk`).
_ALIGN = 0.25
