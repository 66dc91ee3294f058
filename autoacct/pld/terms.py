"""The terms of a split law's composition (see :mod:`jumps`) and their profiles.

A split law's k copies compose to sum_j C(k, j) b^{*(k - j)} * t^{*j}; here each term's
upper and lower profiles are made (:func:`split_profiles`), terms j >= 1 possibly sharing
one composition of the bulk (:func:`_shared_terms`, Jensen's inequality for the copies a
term gives up), and summed, with their weights and shifts rounded to each profile's side,
into a :class:`~autoacct.pld.mixture.MixtureProfile`. A law composed on a lattice moved
onto its spike (no tail) is read the same way (:func:`moved_profiles`,
:func:`moved_composition`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple, Protocol

import numpy as np

from autoacct.pld import blocks, jumps
from autoacct.pld.components import Component
from autoacct.pld.compose import LAW_REL, compose
from autoacct.pld.cumulants import Components, chernoff_bound, choose_tilt
from autoacct.pld.jumps import SplitLaw, omitted_mass, terms_needed
from autoacct.pld.mixture import SUM_ULPS, MixtureProfile
from autoacct.pld.profiles import DiscreteProfile


class _Term(NamedTuple):
    """A term's profiles: the lower one is e^log_scale delta(eps + jensen) for the profile
    delta it holds (Jensen's bound on the bulk copies it gives up, see :func:`_shared_terms`),
    and each holds fine bulk copies (``up_copies``, ``low_copies``) moved by -offset."""

    up: DiscreteProfile
    low: DiscreteProfile
    log_scale: float
    jensen: float
    up_copies: int
    low_copies: int


class _Tilt(Protocol):
    """A term's tilt for its components on the lattice of spacing h, moved by ``moved``."""

    def __call__(self, comps: Components, h: float, moved: float = 0.0) -> float: ...


def split_profiles(law: SplitLaw, count: int, log_eta: float, target: float,
                   log_budget: float, omitted_budget: float, tol: float = 0.0
                   ) -> tuple[MixtureProfile, MixtureProfile] | None:
    """(upper, lower) profiles of ``count`` copies of the split law (:mod:`jumps`), or
    None when a re-discretisation fails (a mass out of the floating-point range) or more
    than jumps.MAX_TERMS terms would be needed.

    ``log_budget`` is the log of the delta that FFT rounding may cost over all terms (each
    term's tilt is chosen for its share), ``omitted_budget`` the delta the terms left out
    may cost; with ``tol`` (the query's relative accuracy) the terms j >= 1 may share one
    composition of the bulk (:func:`shares`), and the bulk's copies may be composed in
    blocks (:func:`blocks.blocked`; never without ``tol``, which their first-order check needs).
    """
    terms = terms_needed(count * law.tail_mass, omitted_budget)
    if terms is None or terms >= count:
        if count > jumps.MAX_TERMS:
            return None
        # Every term: the expansion is exact and leaves nothing out.
        terms = count
    h_fine = law.bulk_fine.upper.h
    h_coarse = law.tail_coarse.upper.h
    fine = Components([law.bulk_fine])
    kt, kf = count * law.tail_mass, count * law.far_mass
    # The terms of one far copy and j < far_js tail copies (none without a far part, see
    # jumps.far_cut), composed as the others are; they take shares of the rounding budget too.
    far_js = 0
    if law.far is not None:
        needed = jumps.far_terms(kt, kf, omitted_budget, count)
        far_js = count if needed is None else needed + 1
    share = math.log(terms + 1.0 + far_js)
    weights: list[float] = []
    tilts: list[_Tilt] = []
    budgets: list[float] = []
    for j in [*range(terms + 1), *range(far_js)]:
        # C(k, j) (k C(k - 1, j) for a far term) exactly as an integer, rounded to the nearest
        # float: within half an ulp.
        try:
            weight = float(math.comb(count, j) if len(weights) <= terms else count * math.comb(count - 1, j))
        except OverflowError:
            return None  # beyond 1e308 (k near 1e9 and j near 40): one lattice then
        budget = log_budget - share - math.log(weight)

        def tilt(comps: Components, h: float, moved: float = 0.0, budget: float = budget) -> float:
            # (components moved by ``moved``, as the bulk's fine copies are: the target too)
            return choose_tilt(comps, target + moved, h, log_eta, budget)

        weights.append(weight)
        tilts.append(tilt)
        budgets.append(budget)
    jensen = _bulk_shift(law) if groups_share(count, terms, tol) else None
    made: list[_Term | None] = [None] * (terms + 1 + far_js)
    short = tol <= 0.0 or law.bulk_fine.lower_short(tol, target)
    made[0] = _term(law, fine, count, 0, h_fine, h_coarse, log_eta, tilts[0], target, budgets[0], short)
    if jensen is None:
        for j in range(1, terms + 1):
            made[j] = _term(law, fine, count, j, h_fine, h_coarse, log_eta, tilts[j], target, budgets[j], short)
    else:
        for lam, js in _sharing(law, count, terms, tol, h_coarse, tilts).items():
            got = _shared_terms(law, fine, count, js, h_coarse, log_eta, lam, *jensen, short)
            if got is None:
                return None
            for j, m in zip(js, got):
                made[j] = m
    for j in range(far_js):
        i = terms + 1 + j
        made[i] = _term(law, fine, count, j, h_fine, h_coarse, log_eta, tilts[i], target, budgets[i], short, law.far)
    done = [m for m in made if m is not None]
    if len(done) < len(made):
        return None
    ups = [m.up for m in done]
    lows = [m.low for m in done]
    # Each profile holds fine bulk copies moved by -offset: it is read at eps less their offsets.
    moved = tuple(term_shift(0.0, m.up_copies, law.offset, True) for m in done)
    shifts = tuple(term_shift(m.jensen, m.low_copies, law.offset, False) for m in done)
    weights_up = [w * (1.0 + SUM_ULPS) for w in weights]
    # A lower term read at a shifted eps also carries a factor at most 1 (its log scale).
    weights_low = [w * math.exp(m.log_scale) * (1.0 - SUM_ULPS) for w, m in zip(weights, done)]
    extra = omitted_mass(count * law.tail_mass, terms) if terms < count else 0.0
    # The bulk's discretised mass may exceed 1 by rounding: (1 - t)^(k - j) <= 1 then needs
    # its k-th power.
    bulk = max(law.bulk_mass, 1.0) ** count
    caps = [law.tail_mass ** j * bulk * (1.0 + SUM_ULPS) for j in range(terms + 1)]
    caps += [law.tail_mass ** j * law.far_mass * bulk * (1.0 + SUM_ULPS) for j in range(far_js)]
    if law.far is not None:
        # The terms with far copies not composed are left out (their mass added).
        extra += jumps.far_omitted(kt, kf, far_js - 1 if far_js < count else None) * (1.0 + SUM_ULPS)
    extra *= bulk
    return (MixtureProfile(tuple(weights_up), tuple(ups), extra, True, tuple(caps), target,
                           moved if any(moved) else ()),
            MixtureProfile(tuple(weights_low), tuple(lows), 0.0, False, tuple(caps), target,
                           shifts if any(shifts) else ()))


def groups_share(count: int, terms: int, tol: float) -> bool:
    """Whether terms j >= 1 may share compositions of the bulk (:func:`_shared_terms`): when
    the bulk copies whose spread a sharing term gives up, at most ``terms`` of ``count``, are
    at most a share SHARED_PER_TOL * tol of them."""
    return 0 < terms < count and terms <= SHARED_PER_TOL * tol * count


def shares(count: int, terms: int, tol: float, kt: float) -> bool:
    """Whether the terms j >= 1 all share one composition of the bulk, tilted for the term
    j = 1: where :func:`groups_share` allows it and the tail's weight ``kt`` (count times its
    P-mass) is at most twice jumps.TAIL_RATE. The term j = 1 then outweighs the others by 1 / kt
    or more; a heavier tail (jumps.LOOSE_TAIL_RATE) can put the answer on the terms j >= 2, whose
    tilted mass that tilt moves far above it (at q = 1e-5, sigma = 0.15, k = 1e4, delta =
    1e-5, eps = 50: term 3's window started at 80, and its upper bound, its whole mass, took
    eps to 80). Those terms are then grouped by their own tilts (:func:`_sharing`)."""
    return groups_share(count, terms, tol) and kt <= 2.0 * jumps.TAIL_RATE


def _sharing(law: SplitLaw, count: int, terms: int, tol: float, h_coarse: float,
             tilts: Sequence[_Tilt]) -> dict[float, list[int]]:
    """The terms j = 1..terms grouped by the tilt each shared composition of the bulk is
    made at: one group at the tilt of the term j = 1 where :func:`shares` holds, else each
    term's own tilt (that of :func:`_term`), the terms of one tilt in one group. A tilt is
    only a choice (any gives valid bounds); a group composes the bulk once, where the terms
    one by one compose it once each (at q = 1e-5, sigma = 0.3, k = 1e7, 78 terms took 8
    distinct tilts)."""
    if shares(count, terms, tol, count * law.tail_mass):
        return {tilts[1](_probe(law, count, 1), h_coarse): list(range(1, terms + 1))}
    groups: dict[float, list[int]] = {}
    for j in range(1, terms + 1):
        groups.setdefault(tilts[j](_probe(law, count, j), h_coarse), []).append(j)
    return groups


def _probe(law: SplitLaw, count: int, j: int) -> Components:
    """The components a term of j tail copies is tilted on: the bulk's and the tail's coarse
    discretisations (the tilt of the coarse composition; the fine composition of the bulk
    is tilted alike, as the leak it hands over must be)."""
    return Components([law.bulk_coarse.recounted(count - j), law.tail_coarse.recounted(j)])


def _bulk_shift(law: SplitLaw) -> tuple[float, float] | None:
    """(log m_P, c) for one copy of the bulk b: log m_P <= log of its P-mass, and c >= log of
    its Q-mass over its P-mass; None when the tail's masses leave no such bound.

    The law's P-mass is 1 and its finite Q-mass at most 1, so m_P >= 1 - t and
    m_Q <= 1 - Q(t), with t >= the P-mass of all but the bulk (law.tail_mass + law.far_mass)
    and Q(t) >= sum_i w_i e^{-x_i}
    over the tail's upper PLD (connect-the-dots keeps each cell's Q-mass, moves the mass
    below its grid up to its first point and the mass above it to +inf, both of which lower
    the Q-mass it represents)."""
    up = law.tail_coarse.upper
    pos = up.masses > 0.0
    # (a tail far below 0 overflows e^{-x}: no bound then)
    with np.errstate(over="ignore"):
        q_tail = float((up.masses[pos] * np.exp(-up.losses[pos])).sum()) * (1.0 - LAW_REL)
    # (the bulk's P-mass is 1 less the tail's and the other part's, whose sum rounds up by an ulp)
    tails = (law.tail_mass + law.far_mass) * (1.0 + SUM_ULPS)
    if not (tails < 1.0 and 0.0 <= q_tail < 1.0):
        return None
    log_p = math.log1p(-tails)
    log_q = math.log1p(-q_tail)
    return log_p * (1.0 + SUM_ULPS), (log_q - log_p) + SUM_ULPS * (abs(log_q) + abs(log_p))


def _shared_terms(law: SplitLaw, fine: Components, count: int, js: list[int], h_coarse: float,
                  log_eta: float, lam: float, log_p: float, c: float, short: bool = True
                  ) -> list[_Term] | None:
    """The :class:`_Term` (upper, lower, log scale, shift) of the terms b^{*(count - j)} * t^{*j} for j in ``js``
    (increasing; J the last), from one composition B of count - J bulk copies
    (:func:`blocks.on_lattice`, in blocks unless ``short``), all tilted by ``lam``: the lower
    profile of term j is e^{log scale} delta_j(eps + shift) for the profile delta_j of
    B * t^{*j}.

    Upper: B on the coarse lattice, composed with J - j copies of the bulk's coarse upper
    PLD and j tail copies (connect-the-dots bounds each copy from above).
    Lower (Jensen): for a measure nu of P-mass m_P and Q-mass m_Q and any measure mu,
    delta_{mu * nu}(eps) = int mu(ds) int nu(dr) (1 - e^{eps - s} e^{-r})_+
    >= int mu(ds) (m_P - e^{eps - s} m_Q)_+ = m_P delta_mu(eps + log(m_Q / m_P)), since
    u -> (1 - a u)_+ is convex. With nu = b^{*(J - j)} (P- and Q-masses the (J - j)-th
    powers of b's) and mu = B * t^{*j}: scale (J - j) log m_P and shift (J - j) c, with the
    bounds of :func:`_bulk_shift`. The J - j copies' spread is all it gives up, at most a
    share SHARED_PER_TOL * tol of the bulk's (:func:`groups_share`).
    """
    last = js[-1]
    bulk = blocks.on_lattice(fine, count - last, law.ratio, log_eta, lam, not short)
    if bulk is None:
        return None
    out = []
    for j in js:
        tails = law.tail_coarse.recounted(j)
        both = Components([*bulk, tails])
        up, low = compose(both, h_coarse, log_eta, lam)
        assert low is not None
        comps = both
        if j < last:
            comps = Components([*bulk, law.bulk_coarse.recounted(last - j), tails])
            up, _ = compose(comps, h_coarse, log_eta, lam, lower=False)
        out.append(_Term(_with_below(up, comps), low, (last - j) * log_p, (last - j) * c,
                         count - last, count - last))
    return out


def _narrow(law: SplitLaw, copies: int) -> bool:
    """Whether ``copies`` of the bulk spread over at most half a cell of the coarse lattice
    (standard deviation, from the fine upper PLD's variance), where :func:`_term` bounds them
    by Jensen's inequality rather than on that lattice.

    A composed bulk that narrow is a spike between two coarse points, whose lower PLD there
    is first-order short: at q = 1.8e-5, sigma = 0.337, k = 9, delta = 5.9e-6
    (benchmarks/sweep.py), the 8 copies' spike at -3e-5 (spread 6e-4) sat just below the
    point 0 of a lattice of 6.6e-3 and was rounded towards -6.6e-3, so the lower eps fell
    4% short and took three refinements to meet tol. Jensen gives up the copies' spread
    alone: its loss is second order in it, about half its variance times the profile's
    curvature, no more than the coarse lattice's own second-order loss on a smooth measure
    (the curvature times h^2 / 8, see :mod:`discretize`) while the spread is at most h / 2."""
    return copies * law.bulk_var <= 0.25 * law.tail_coarse.upper.h ** 2


def term_shift(jensen: float, copies: int, offset: float, upper: bool) -> float:
    """The shift at which a term is read, jensen - copies * offset, rounded to its profile's
    side: at most the exact value for an upper profile, at least it for a lower one. The
    rounding of the product and the sum is bounded by the parts' magnitudes, not the result's
    (the two parts may nearly cancel), and :func:`mixture._shifted` then only rounds eps + shift."""
    moved = copies * offset
    value = jensen - moved
    margin = SUM_ULPS * (abs(jensen) + abs(moved))
    return value - margin if upper else value + margin


#: The terms share one bulk composition when the copies whose spread it gives up are at most
#: this many times tol of them. Measured on benchmarks/sweep.py, a share s widened the
#: certified bracket by 0.03 s to 0.04 s relatively (q = 5.25e-4, sigma = 0.411, k = 3801,
#: delta = 2.9e-11: s = 1.05e-3, width 1.6e-6 -> 3.1e-5; q = 1e-4, sigma = 0.8, k = 1e4,
#: delta = 1e-9: s = 4e-4, width 6.2e-5 -> 7.7e-5), so by about 0.08 tol at most here.
SHARED_PER_TOL = 2.0


def _term(law: SplitLaw, fine: Components, count: int, j: int, h_fine: float, h_coarse: float,
          log_eta: float, tilt: _Tilt, target: float = 0.0, budget: float = math.inf, short: bool = True,
          far: Component | None = None) -> _Term | None:
    """Profiles of b^{*(n)} * t^{*j} (not weighted by C(count, j)), n = count - j, or with a
    ``far`` copy b^{*(n)} * t^{*j} * f, n = count - j - 1 (not weighted by k C(count - 1, j)).

    The bulk's copies are composed in blocks (:mod:`blocks`) where they cost less than
    one fine composition, unless the bulk's lower PLD is ``short`` (see
    :meth:`Component.lower_short`: the blocks would carry its first-order loss through
    each re-discretisation); for the term of the bulk alone also unless the blocks'
    rounding, read at the ``target`` eps, exceeds the term's share e^budget of delta (its
    own fine composition then). Where the bulk's n > 0 copies are :func:`_narrow` beside
    others, the lower profile is that of the others alone by Jensen's inequality (as in
    :func:`_shared_terms`, giving up all n copies)."""
    n = count - j - (far is not None)
    if n == count:
        lam = tilt(fine.recounted(count), h_fine, -count * law.offset)
        return _Term(*bulk_term(fine, count, law.offset, log_eta, lam, target, budget, short), 0.0, 0.0,
                     count, count)
    others = ([law.tail_coarse.recounted(j)] if j else []) + ([far.recounted(1)] if far is not None else [])
    if n == 0:
        comps = Components(others)
        lam = tilt(comps, h_coarse)
        up, low = compose(comps, h_coarse, log_eta, lam)
        assert low is not None
        return _Term(_with_below(up, comps), low, 0.0, 0.0, 0, 0)
    lam = tilt(Components([law.bulk_coarse.recounted(n), *others]), h_coarse)
    bulk = blocks.on_lattice(fine, n, law.ratio, log_eta, lam, not short)
    if bulk is None:
        return None
    comps = Components([*bulk, *others])
    jensen = _bulk_shift(law) if _narrow(law, n) else None
    if jensen is not None:
        up, _ = compose(comps, h_coarse, log_eta, lam, lower=False)
        _, low = compose(Components(others), h_coarse, log_eta, lam)
        assert low is not None
        return _Term(_with_below(up, comps), low, n * jensen[0], n * jensen[1], n, 0)
    up, low = compose(comps, h_coarse, log_eta, lam)
    assert low is not None
    return _Term(_with_below(up, comps), low, 0.0, 0.0, n, n)


def bulk_term(fine: Components, count: int, offset: float, log_eta: float, lam: float,
              target: float, budget: float, short: bool) -> tuple[DiscreteProfile, DiscreteProfile]:
    """Profiles of ``count`` copies of the one measure of ``fine`` (on its lattice, each copy
    moved by -``offset``), tilted by lam: in blocks (:mod:`blocks`) where they cost less than
    one composition, unless its lower PLD is ``short`` (the blocks would carry its first-order
    loss through each re-discretisation) or the blocks' rounding, read at the ``target`` eps,
    exceeds e^budget of delta (one composition then)."""
    h = fine[0].upper.h
    if not short:
        blocked = blocks.blocked(fine, count, log_eta, lam, blocks.spread(blocks.max_ratio(count)))
        if blocked is not None:
            ratio, parts = blocked
            up, low = compose(parts, ratio * h, log_eta, lam)
            if up.error_at(target - count * offset) <= math.exp(budget):
                assert low is not None
                return up, low
    up, low = compose(fine.recounted(count), h, log_eta, lam)
    assert low is not None
    return up, low


def moved_profiles(comp: Component, count: int, offset: float, log_eta: float, target: float,
                   log_budget: float, tol: float, in_blocks: bool = True) -> tuple[MixtureProfile, MixtureProfile]:
    """(upper, lower) profiles of ``count`` copies of a law from its component ``comp`` on the
    lattice moved by ``offset`` (the measure of L - offset discretised on hZ, see
    :func:`jumps.aligned_bulk`): a split law's term j = 0 with no tail, composed as
    :func:`bulk_term` composes it (without ``in_blocks``, in one fine composition) and read
    at eps - count offset, its weight and shift rounded to each profile's side. The whole
    law's mass at +inf is in its PLDs, so nothing is left out."""
    fine = Components([comp])
    lam = choose_tilt(fine.recounted(count), target - count * offset, comp.upper.h, log_eta, log_budget)
    short = not in_blocks or tol <= 0.0 or comp.lower_short(tol, target)
    up, low = bulk_term(fine, count, offset, log_eta, lam, target, log_budget, short)
    # The discretised mass may exceed 1 by rounding: its count-th power bounds the composition's.
    caps = (max(comp.upper.total * (1.0 + SUM_ULPS), 1.0) ** count * (1.0 + SUM_ULPS),)
    return (MixtureProfile((1.0 + SUM_ULPS,), (up,), 0.0, True, caps, target,
                           (term_shift(0.0, count, offset, True),)),
            MixtureProfile((1.0 - SUM_ULPS,), (low,), 0.0, False, caps, target,
                           (term_shift(0.0, count, offset, False),)))


def moved_composition(parts: Sequence[tuple[Component, float]], log_eta: float, target: float,
                      log_budget: float) -> tuple[MixtureProfile, MixtureProfile]:
    """(upper, lower) profiles of the composition of several laws, each from its component (with
    its count) on the lattice moved by its own offset d_i (:func:`jumps.aligned_bulk`): the measures
    of L_i - d_i composed on hZ at once, read at eps - sum_i k_i d_i. The offsets are >= 0, so
    the sum, taken exactly rounded, is off by at most one rounding of each product and of
    itself, within the margin :func:`term_shift` gives it."""
    comps = Components([c for c, _ in parts])
    h = parts[0][0].upper.h
    moved = math.fsum(c.count * d for c, d in parts)
    lam = choose_tilt(comps, target - moved, h, log_eta, log_budget)
    up, low = compose(comps, h, log_eta, lam)
    assert low is not None
    # Each discretised mass may exceed 1 by rounding; the product of the powers rounds once a factor.
    caps = (math.prod(max(c.upper.total * (1.0 + SUM_ULPS), 1.0) ** c.count for c, _ in parts)
            * (1.0 + SUM_ULPS) ** (len(parts) + 1),)
    return (MixtureProfile((1.0 + SUM_ULPS,), (up,), 0.0, True, caps, target, (term_shift(0.0, 1, moved, True),)),
            MixtureProfile((1.0 - SUM_ULPS,), (low,), 0.0, False, caps, target, (term_shift(0.0, 1, moved, False),)))


def _with_below(up: DiscreteProfile, comps: Components) -> DiscreteProfile:
    """The upper profile of a term with a bound on its composed mass below the window (a
    Chernoff bound on the components' exact discrete moment generating functions, untilted):
    a term of j tail copies has nearly all its mass above j tau, and eps below its window
    is where its profile matters once the term's mass is near delta."""
    bottom = (up.start - 1) * up.h
    log_below = chernoff_bound(comps.cumulant("upper", up.lam), 0.0, 0.0, bottom, above=False)
    return replace(up, below_mass=min(math.exp(log_below) * (1.0 + SUM_ULPS), 1.0))

