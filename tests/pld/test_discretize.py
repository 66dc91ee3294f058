"""The discretiser (autoacct/pld/discretize.py) on single laws, against their exact profiles.

Truth: each law's own hockey-stick profile H_{e^eps}(P || Q) in closed form
(Gaussian: Balle and Wang 2018; Poisson-subsampled pairs: q H_gamma of the base pair,
Balle et al. 2018; Laplace and randomized response: their two or three atoms and
segments). A discrete PLD with masses w_i at x_i and w_inf at +inf has profile
sum_i w_i (1 - e^{eps - x_i})_+ + w_inf, computed here from that definition.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoacct.losses import GaussianLoss, LaplaceLoss, randomized_response_loss
from autoacct.pld.discretize import discretize
from autoacct.pld.grid import index_range
from autoacct.subsampling.poisson import PoissonAddLoss, PoissonRemoveLoss

#: Relative slack for floating-point rounding in the profiles compared.
_ROUNDING = 1e-9


def _pld_profile(pld, eps: np.ndarray) -> np.ndarray:
    x = pld.losses
    terms = -np.expm1(np.minimum(eps[:, None] - x[None, :], 0.0))
    return terms @ pld.masses + pld.p_inf


def _laws():
    return {
        "gaussian mu=0.5": GaussianLoss(0.5),
        "gaussian mu=3": GaussianLoss(3.0),
        "remove q=0.01 sigma=1.5": PoissonRemoveLoss(GaussianLoss(1 / 1.5), 0.01),
        "add q=0.01 sigma=1.5": PoissonAddLoss(GaussianLoss(1 / 1.5), 0.01),
        "remove q=0.2 sigma=0.8": PoissonRemoveLoss(GaussianLoss(1 / 0.8), 0.2),
        "add q=0.001 sigma=0.6": PoissonAddLoss(GaussianLoss(1 / 0.6), 0.001),
        "laplace b=2": LaplaceLoss(2.0),
        "randomized response eps=1.3": randomized_response_loss(1.3),
    }


def _bounds(loss, h: float, eps: np.ndarray):
    j_lo, j_hi = index_range(loss, h, 1e-18)
    up, low = discretize(loss, h, j_lo, j_hi)
    truth = np.asarray(loss.profile(eps), dtype=float)
    return _pld_profile(up, eps) + up.deficit, truth, _pld_profile(low, eps) - low.deficit


@pytest.mark.parametrize("name", list(_laws()))
@pytest.mark.parametrize("h", [0.3, 0.05, 0.007, 0.0011])
def test_lower_and_upper_bracket_the_profile(name, h):
    loss = _laws()[name]
    a, b = loss.quantile_range(1e-12)
    eps = np.linspace(min(a, 0.0) - 0.5, b + 0.5, 601)
    upper, truth, lower = _bounds(loss, h, eps)
    assert np.all(upper >= truth * (1 - _ROUNDING))
    assert np.all(lower <= truth * (1 + _ROUNDING) + 1e-300)


@settings(max_examples=40, deadline=None)
@given(sigma=st.floats(0.4, 6.0), log_q=st.floats(-5.0, -0.05), log_h=st.floats(-3.5, -0.5),
       add=st.booleans())
def test_subsampled_gaussian_bracketed(sigma, log_q, log_h, add):
    loss = (PoissonAddLoss if add else PoissonRemoveLoss)(GaussianLoss(1 / sigma), 10 ** log_q)
    a, b = loss.quantile_range(1e-12)
    eps = np.linspace(min(a, 0.0) - 0.2, b + 0.2, 801)
    upper, truth, lower = _bounds(loss, 10 ** log_h, eps)
    assert np.all(upper >= truth * (1 - _ROUNDING))
    assert np.all(lower <= truth * (1 + _ROUNDING) + 1e-300)


@pytest.mark.parametrize("mu", [0.3, 1.0, 4.0])
def test_gaussian_lower_is_as_close_as_the_upper(mu):
    """The lower profile lies c D^2 / 8 below a Gaussian's profile at the grid points (c the
    curvature, D a cell's width in gamma), where it is furthest away; the upper chord lies as
    much above it at the cells' midpoints. So the largest errors match, up to the curvature's
    change over a cell (lowering at one end of each cell, as before, gave 4 times more)."""
    loss = GaussianLoss(mu)
    h = mu / 40
    eps = np.linspace(0.0, mu * mu / 2 + 3 * mu, 400)
    upper, truth, lower = _bounds(loss, h, eps)
    up_err = float(np.max(upper - truth))
    low_err = float(np.max(truth - lower))
    assert 0.0 < low_err <= 1.05 * up_err


@pytest.mark.parametrize("q, sigma, h", [(1e-3, 0.8, 1.026e-4), (1e-3, 0.8, 7.258e-5), (1e-6, 1.0, 7.09e-8),
                                         (0.01, 1.5, 2e-3), (0.0011761499954386263, 1.1369533043871098, 9.07e-6)])
def test_subsampled_gaussian_lower_keeps_its_mass(q, sigma, h):
    """Negative masses at the lower end of the support are moved onto their neighbours rather
    than clipped: a clipped mass c costs the lower bound (1 + c)^k - 1 after k steps, which at
    k = 1e6 and delta = 1e-12 must stay below delta / 10, so c < 1e-19. Clipping left 1.2e-13
    per step at q = 1e-3, h = 1e-4; clipping only the negatives below 1e-14 of the largest mass
    left 1.2e-17 in the last case (one point next to the bottom of the support), which at
    k = 6e5 and delta = 2.2e-12 held the lower eps at 6.85 against 7.02."""
    loss = PoissonRemoveLoss(GaussianLoss(1 / sigma), q)
    j_lo, j_hi = index_range(loss, h, 1e-18)
    _, low = discretize(loss, h, j_lo, j_hi)
    assert low.deficit < 1e-20
    assert np.all(low.masses >= 0.0)


def _rounds_of_lowering(monkeypatch) -> list:
    """A list that gains an item per round of the lower construction (:func:`_second_order`),
    with the cache of discretised laws emptied (a cached lower PLD takes no round)."""
    from autoacct.pld import discretize as disc
    from autoacct.pld import lawcache

    rounds: list = []
    inner = disc._second_order

    def spy(*args):
        rounds.append(1)
        return inner(*args)
    monkeypatch.setattr(disc, "_second_order", spy)
    lawcache.clear_caches()
    return rounds


def test_lower_construction_ends_when_a_round_would_repeat_the_last(monkeypatch):
    """Reproducer: DP-SGD at q = 1e-5, sigma = 0.487, k = 1e4, delta = 1e-5 discretises its
    remove law on 874,652 cells. With the convex minorant, the construction kept one negative
    mass next to the bottom of the support, whose cells were all rounded already, and ran the
    same round again until the query's time budget stopped it: eps in [0, 2.0] with a
    BudgetWarning (now [0.09344, 0.09352]; dp_accounting's pessimistic estimate at a 1e-4
    interval is 0.093632). A round that would repeat the last one ends that construction,
    as running out of rounds does; the lower PLD is then the other construction's, which
    stays below the law's profile."""
    rounds = _rounds_of_lowering(monkeypatch)
    loss = PoissonRemoveLoss(GaussianLoss(1 / 0.487), 1e-5)
    _, low = discretize(loss, 9.07293025972535e-06, -3, 874648)
    # Three rounds without the minorant, two with it and the one that would repeat them
    # stopped before it starts (63 before: three, then all 60 of the second).
    assert len(rounds) <= 6
    for eps in np.linspace(-1e-5, 2.0, 41):
        terms = -np.expm1(np.minimum(eps - low.losses, 0.0))
        bound = float(terms @ low.masses) + low.p_inf - low.deficit
        assert bound <= float(loss.profile(np.array([eps]))[0]) * (1 + _ROUNDING)


def test_lower_construction_widens_its_reach_where_bad_points_persist(monkeypatch):
    """Reproducer: the bulk of DP-SGD's remove law at q = 1e-5, sigma = 0.3, k = 1e7 (the
    heavy split's, below 0.4849, its lattice moved by 3.8e-6 onto the spike), 63,562 cells.
    Moving two cells on either side of each bad point per round, its lower PLD took 39 rounds
    over the whole law, and the query (delta = 1e-5) ended on the time budget at [0, 31.272].
    With the reach doubling every _GROW rounds it takes at most 16; the lower PLD still lies
    below the measure's profile, and away from the spike within 1e-4 of it."""
    from autoacct.losses.restricted import RestrictedLoss
    from autoacct.losses.shifted import ShiftedLoss
    rounds = _rounds_of_lowering(monkeypatch)
    bulk = RestrictedLoss(PoissonRemoveLoss(GaussianLoss(1 / 0.3), 1e-5), -math.inf, 0.4849090576171875)
    loss = ShiftedLoss(bulk, 3.814697265625e-06)
    up, low = discretize(loss, 7.62939453125e-06, -3, 63559)
    assert 2 <= len(rounds) <= 16
    eps = np.concatenate((np.linspace(-2e-5, 1e-5, 7), np.geomspace(1e-4, 0.45, 40)))
    truth = loss.profile(eps)

    def profile(pld, deficit):
        terms = -np.expm1(np.minimum(eps[:, None] - pld.losses[None, :], 0.0))
        return terms @ pld.masses + pld.p_inf - deficit
    lower, upper = profile(low, low.deficit), profile(up, 0.0)
    assert np.all(lower <= truth * (1 + _ROUNDING)) and np.all(upper >= truth * (1 - _ROUNDING))
    # Second order away from the spike (the rounding of every cell down would lose a cell's
    # width there): within 1e-4 of the profile from eps = 1e-4 on.
    far = eps >= 1e-4
    assert np.all(upper[far] - lower[far] <= 1e-4 * truth[far])


@pytest.mark.parametrize("h", [0.004645, 0.0032847516220848223, 0.002])
def test_steep_bottom_lower_stays_second_order(h):
    """A law whose mass sits within a few cells of its steep lower end (q = 0.0368,
    sigma = 0.605). At h = 0.00328 the midpoint and one-end constructions leave concave kinks
    in the bottom cells; rounding those cells down moved 52% of the mass to their left ends
    and put the lower PLD's mean 16% below the upper's. Lowered onto their convex minorant
    instead, the means differ by 0.04%; the bounds must still bracket the profile."""
    loss = PoissonRemoveLoss(GaussianLoss(1 / 0.6051024677650805), 0.036808270543033095)
    j_lo, j_hi = index_range(loss, h, 1e-18)
    up, low = discretize(loss, h, j_lo, j_hi)
    mean_up, mean_low = float(up.masses @ up.losses), float(low.masses @ low.losses)
    assert 0.0 <= mean_up - mean_low <= 2e-3 * mean_up
    a, b = loss.quantile_range(1e-12)
    eps = np.concatenate((np.linspace(a - h, a + 30 * h, 300), np.linspace(a, b, 600)))
    upper, truth, lower = _bounds(loss, h, eps)
    assert np.all(lower <= truth * (1 + _ROUNDING))
    assert np.all(upper >= truth * (1 - _ROUNDING))


@pytest.mark.parametrize("sigma, q, h", [(0.40974788397649226, 0.1526330584597961, 0.14034901047676962),
                                         (3.6072285098778716, 0.0017542439514418623, 0.0028017867373296337)])
def test_add_law_lower_is_zero_beyond_its_support(sigma, q, h):
    """The add law's loss never exceeds -log(1 - q): there the profile is exactly 0, and so must
    be the lower one, not a rounding residue (found by a random sweep: 1.4e-18 and 4.0e-18)."""
    loss = PoissonAddLoss(GaussianLoss(1 / sigma), q)
    eps = np.linspace(-math.log1p(-q), -math.log1p(-q) + 2 * h, 41)
    _, truth, lower = _bounds(loss, h, eps)
    assert np.all(truth == 0.0)
    assert np.all(lower <= 0.0)


# ----- the cache of discretised laws and the ranges the accountant takes ------------------------

def test_law_cache_keeps_the_computed_values_and_stays_within_its_bytes():
    """A law from the cache is the one computed without it, bit for bit (upper and lower PLDs,
    and the log-MGF row kept with it); the cache holds at most its bytes (discrete PLDs and the
    cell masses kept for a lower PLD not yet made), dropping the least recently used laws."""
    from autoacct.pld import lawcache as module
    from autoacct.pld.discretize import _made_lazy, _made_upper, law_maker
    from autoacct.pld.lawcache import LawCache
    from autoacct.pld.mgf import log_mgfs_up

    loss = PoissonRemoveLoss(GaussianLoss(1 / 1.1), 0.01)
    cache = LawCache(max_bytes=1_000_000)
    spacings = 4e-3 * 0.5 ** (np.arange(16) / 16)
    for i, h in enumerate(spacings):
        j_lo, j_hi = index_range(loss, h, 1e-16)
        law = cache.law(loss, h, j_lo, j_hi, True, law_maker(loss, h, j_lo, j_hi, True))
        make = law_maker(loss, h, j_lo, j_hi, True)
        assert cache.law(loss, h, j_lo, j_hi, True, make) is law  # a hit: the same law
        if i in (0, len(spacings) - 1):
            up, lower = _made_lazy(loss, h, j_lo, j_hi)
            assert np.array_equal(law.upper.masses, up.masses) and law.upper.p_inf == up.p_inf
            low, made = law.lower(), lower()
            assert np.array_equal(low.masses, made.masses) and low.deficit == made.deficit
            only_up = cache.law(loss, h, j_lo, j_hi, False, law_maker(loss, h, j_lo, j_hi, False))
            assert np.array_equal(only_up.upper.masses, _made_upper(loss, h, j_lo, j_hi).masses)
        assert 0 < cache.nbytes <= cache.max_bytes
        assert cache.nbytes == sum(kept.nbytes for kept in cache._laws.values())
    # The first laws were dropped to make room; asking again computes the same values.
    assert len(cache) < len(spacings)
    j_lo, j_hi = index_range(loss, spacings[0], 1e-16)
    again = cache.law(loss, spacings[0], j_lo, j_hi, True, law_maker(loss, spacings[0], j_lo, j_hi, True))
    assert np.array_equal(again.upper.masses, _made_lazy(loss, spacings[0], j_lo, j_hi)[0].masses)

    theta = np.array([-2.0, 0.0, 0.5, 3.0])
    rng = index_range(loss, 2e-3, 1e-16)
    kept = module.law_cache().law(loss, 2e-3, *rng, True, law_maker(loss, 2e-3, *rng, True))
    row = module.log_mgf_up(kept.upper, theta)
    assert np.array_equal(row, log_mgfs_up([kept.upper], theta)[0])
    assert module.log_mgf_up(kept.upper, theta) is row


def test_law_cache_does_not_keep_a_law_larger_than_its_share():
    from autoacct.pld.discretize import law_maker
    from autoacct.pld.lawcache import LawCache

    loss = GaussianLoss(0.5)
    cache = LawCache(max_bytes=8 * 8 * 1000)
    j_lo, j_hi = index_range(loss, 1e-3, 1e-16)  # thousands of cells, more than 1000
    cache.law(loss, 1e-3, j_lo, j_hi, True, law_maker(loss, 1e-3, j_lo, j_hi, True))
    assert len(cache) == 0 and cache.nbytes == 0


@pytest.mark.parametrize("k", [3, 5, 100, 1000])
def test_range_for_a_count_rounded_up_still_certifies_gaussians(k):
    """The accountant leaves each law's tails beyond a range for the count rounded up to a
    power of 2 (a smaller mass, a wider range): k runs of a Gaussian pair, given as a law the
    accountant does not compose in closed form, are still bracketed around the exact
    Gaussian eps(delta) with mu = sqrt(k) mu_1 (Balle and Wang 2018)."""
    from closed_forms import gaussian_eps_closed

    from autoacct.losses.restricted import RestrictedLoss
    from autoacct.pld.accountant import FFTAccountant

    mu = 0.5
    law = RestrictedLoss(GaussianLoss(mu), -math.inf, math.inf)  # the Gaussian law, no gdp_mu
    acc = FFTAccountant([(law, law, k)])
    pow2 = 1 << (k - 1).bit_length()
    tails = math.exp(math.log(1e-15))
    assert acc._eta(math.log(1e-15)) == tails / (4.0 * pow2) <= tails / (4.0 * k)
    lower, upper = acc.epsilon(1e-6, acc.eps_scale(1e-6))
    truth = gaussian_eps_closed(mu * math.sqrt(k), 1e-6)
    assert lower <= truth <= upper
    assert upper - lower <= 1e-3 * upper


def test_a_cached_lower_pld_charges_the_query_budget_as_when_made():
    """Making a lower PLD charges the running query's time budget for its extra rounds (a law
    with a steep support end takes several); read again from the cache it charges the same,
    so that a query's budget, hence its answer, does not depend on what is cached."""
    from autoacct.limits import _QUERY, query_clock
    from autoacct.pld.discretize import law_maker
    from autoacct.pld.lawcache import LawCache

    loss = PoissonAddLoss(GaussianLoss(1 / 0.6), 0.001)
    h = 0.01
    j_lo, j_hi = index_range(loss, h, 1e-16)
    cache = LawCache()

    def spent() -> float:
        with query_clock(lambda: 0.0):
            cache.law(loss, h, j_lo, j_hi, True, law_maker(loss, h, j_lo, j_hi, True)).lower()
            query = _QUERY.get()
            assert query is not None
            return query.spent

    made = spent()
    assert made > 0.0 and spent() == made and len(cache) == 1


@settings(max_examples=30, deadline=None, derandomize=True)
@given(n=st.integers(8, 400), seed=st.integers(0, 2**32 - 1), nbad=st.integers(1, 60))
def test_convex_minorant_near_kinks(n, seed, nbad):
    # The lower construction's repair of concave kinks (discretize._convex_near), against its
    # contract: it never raises a value, changes only the points within _HULL_REACH of a
    # kink (between points 1 and top, which stay), and leaves each changed stretch convex in
    # gamma. Kinks can be many (764,803 of 2,097,153 points for an exponential mechanism
    # composed 708 times at delta 1e-300), so their reaches are marked at once.
    from autoacct.pld import discretize as disc

    rng = np.random.default_rng(seed)
    gam = np.cumsum(rng.uniform(0.5, 1.5, n))
    v = np.cumsum(np.cumsum(rng.uniform(-1.0, 1.0, n)))  # kinks of both signs
    top = n - 1 - int(rng.integers(0, 3))
    bad = np.unique(rng.integers(1, top + 1, nbad))
    w = disc._convex_near(gam, v, bad, top)
    reach = disc._HULL_REACH
    near = np.zeros(n, dtype=bool)
    for j in bad:
        near[max(j - reach, 1):min(j + reach, top) + 1] = True
    near[1] = near[top] = False
    assert np.all(w <= v)
    assert np.array_equal(w[~near], v[~near])
    edges = np.flatnonzero(np.diff(near.astype(np.int8)))
    for a, b in zip(edges[::2], edges[1::2] + 1):
        s = np.diff(w[a:b + 1]) / np.diff(gam[a:b + 1])
        assert np.all(np.diff(s) >= -1e-9 * (1.0 + np.abs(s[1:])))


def _two_rr_delta(a: float, k_a: int, b: float, k_b: int, eps: float) -> float:
    """delta(eps) of k_a runs of randomized response with log-odds a and k_b with log-odds b
    (PureDP's pairs), by the binomial sums over both counts in 60-digit mpmath."""
    import mpmath

    with mpmath.workdps(60):
        ma, mb, e = mpmath.mpf(a), mpmath.mpf(b), mpmath.mpf(eps)
        pa, pb = 1 / (1 + mpmath.exp(-ma)), 1 / (1 + mpmath.exp(-mb))
        total = mpmath.mpf(0)
        for i in range(k_a + 1):
            for j in range(k_b + 1):
                x = (2 * i - k_a) * ma + (2 * j - k_b) * mb
                if x > e:
                    total += (mpmath.binomial(k_a, i) * pa ** i * (1 - pa) ** (k_a - i)
                              * mpmath.binomial(k_b, j) * pb ** j * (1 - pb) ** (k_b - j) * -mpmath.expm1(e - x))
        return float(total)


@pytest.mark.parametrize(("rel", "k_a"), [(1e-11, 7), (1e-11, 3), (-1e-11, 3)])
@pytest.mark.parametrize("below", [1e-9, 1e-6])
def test_atoms_of_a_lattice_close_to_the_grid_keep_their_side(rel, k_a, below):
    # RandomizedResponse(1 +- 1e-11) composed with RandomizedResponse(1) on the grid of the
    # more composed one: the other's atoms lie 1e-11 off grid points. Counted as on them (a
    # lattice within 1e-9 of the grid's was), the upper delta 1e-6 below the top atom was
    # 2.33027e-08 < the exact 2.33038e-08 (1 + 1e-11, k_a = 7) and the lower 8.15884e-08 >
    # 8.15863e-08 (k_a = 3).
    from autoacct import routes
    from autoacct.zoo import Composition, PureDP

    a, b, k_b = 1.0, 1.0 + rel, 5
    eps = k_a * a + k_b * b - below
    lo, up = routes.delta_bounds(Composition()([PureDP(a), PureDP(b)], [k_a, k_b]), np.array([eps]), "pld", 1e-3)
    exact = _two_rr_delta(a, k_a, b, k_b, eps)
    assert float(lo[0]) <= exact <= float(up[0]), (float(lo[0]), exact, float(up[0]))


def test_an_atom_just_off_its_lattice_point_keeps_the_lower_pld_below_the_law():
    # An atom at 1 + 5e-10 on the lattice 1 was accepted as purely atomic (within 1e-9 of a
    # multiple): the lower PLD was the connect-the-dots split, which sends 8e-10 of its mass to
    # the grid point 2, and the lower delta at eps in (1 + 5e-10, 2) was positive (2.2e-10 at
    # 1.5) where the law's is 0 (no loss above eps, no mass at +inf).
    from autoacct.losses import DiscreteLoss
    from autoacct.pld.components import Component
    from autoacct.pld.compose import compose

    values = np.array([-1.0, 1.0 + 5e-10])
    p = np.array([0.3, 0.7])
    loss = DiscreteLoss(values, p, p * np.exp(-values), lattice=1.0)
    up, low = discretize(loss, 1.0, -3, 3)
    _, lower = compose([Component(up, low, 1)], 1.0, math.log(1e-18))
    assert np.all(lower.delta(np.array([1.0 + 1e-9, 1.5, 1.9])) == 0.0)


def test_discrete_gaussian_upper_pld_is_above_its_atoms_profile_at_every_grid_point():
    # DiscreteGaussian(100)'s law (2,719 atoms on the lattice 5e-5, 8 to a cell) on the grid the
    # accountant takes for 10 runs, against the atoms' exact profile (their float masses summed
    # at 40 digits): with its cells' plain float sums the upper PLD fell 4.1e-19 below it at
    # eps -> -inf (its total mass), which k compositions multiply by k.
    import mpmath as mp

    from autoacct.zoo import DiscreteGaussian

    loss = DiscreteGaussian(100.0).loss_parts()[0].forward
    upper, _ = discretize(loss, 0.0004105939527606028, -226, 226)
    with mp.workdps(40):
        def suffix(weights, losses):
            """sum_{i >= j} w_i and sum_{i >= j} w_i e^{-x_i} for every j, at 40 digits."""
            w = [mp.mpf(float(a)) for a in weights]
            x = [mp.mpf(float(a)) for a in losses]
            s0, s1 = [mp.mpf(0)] * (len(w) + 1), [mp.mpf(0)] * (len(w) + 1)
            for i in range(len(w) - 1, -1, -1):
                s0[i], s1[i] = s0[i + 1] + w[i], s1[i + 1] + w[i] * mp.exp(-x[i])
            return s0, s1

        zeros = np.zeros(loss.values.size)
        law_p, law_q = suffix(loss.p_mass, zeros)[0], suffix(loss.q_mass, zeros)[0]
        up0, up1 = suffix(upper.masses, upper.losses)
        for eps in np.concatenate(([-40.0, -5.0], upper.losses[:-1])):
            e = mp.mpf(float(eps))
            k = int(np.searchsorted(loss.values, eps, side="right"))
            i = int(np.searchsorted(upper.losses, eps, side="right"))
            assert up0[i] - mp.exp(e) * up1[i] + mp.mpf(float(upper.p_inf)) >= law_p[k] - mp.exp(e) * law_q[k], eps


def test_discrete_gaussian_lower_pld_is_below_its_atoms_profile_at_every_grid_point():
    # The law and grid above. The lower construction reads the upper PLD's split, whose ratio
    # is lowered by RATIO_ULPS roundoffs (mass sent right): its profile stood up to
    # 16 u gamma Q(L > eps) above the cells', and the lower PLD 4.8e-14 relatively above the
    # atoms' profile at 73 of the 453 grid points (eps = -0.069).
    import mpmath as mp

    from autoacct.zoo import DiscreteGaussian

    loss = DiscreteGaussian(100.0).loss_parts()[0].forward
    _, lower = discretize(loss, 0.0004105939527606028, -226, 226)
    with mp.workdps(40):
        p = [mp.mpf(float(a)) for a in loss.p_mass]
        q = [mp.mpf(float(a)) for a in loss.q_mass]
        w = [mp.mpf(float(a)) for a in lower.masses]
        e_x = [mp.exp(-mp.mpf(float(a))) for a in lower.losses]
        for eps in lower.losses[:-1]:
            e = mp.mpf(float(eps))
            k = int(np.searchsorted(loss.values, eps, side="right"))
            i = int(np.searchsorted(lower.losses, eps, side="right"))
            value = mp.fsum(w[i:]) - mp.exp(e) * mp.fsum(a * b for a, b in zip(w[i:], e_x[i:]))
            assert value <= mp.fsum(p[k:]) - mp.exp(e) * mp.fsum(q[k:]), eps


def test_subsampled_gaussian_lower_pld_is_below_its_profile_near_the_kink():
    # Poisson-subsampled Gaussian (removal, q = 0.01, sigma = 1.5) on the grid DP-SGD's queries take
    # (h = 4.1e-4): near eps = log(1 - q), where the profile is 1 - e^eps exactly, the lower PLD
    # stood 3.5e-13 relatively above it (the upper PLD's split, read by the lower construction).
    # Truth: the closed form through the normal distribution, at 30 digits.
    import mpmath as mp

    q, mu, h = 0.01, 1.0 / 1.5, 0.0004105939527606028
    _, lower = discretize(PoissonRemoveLoss(GaussianLoss(mu), q), h, -26, 3648)
    with mp.workdps(30):
        w = [mp.mpf(float(a)) for a in lower.masses]
        e_x = [mp.exp(-mp.mpf(float(a))) for a in lower.losses]
        for i in range(0, 60):
            e = mp.mpf(float(lower.losses[i]))
            if e <= mp.log(1 - mp.mpf(q)):
                truth = 1 - mp.exp(e)
            else:
                t = (mp.log((mp.exp(e) - 1 + mp.mpf(q)) / mp.mpf(q)) + mp.mpf(mu) ** 2 / 2) / mp.mpf(mu)
                truth = (1 - q) * mp.ncdf(-t) + q * mp.ncdf(mp.mpf(mu) - t) - mp.exp(e) * mp.ncdf(-t)
            value = mp.fsum(w[i + 1:]) - mp.exp(e) * mp.fsum(a * b for a, b in zip(w[i + 1:], e_x[i + 1:]))
            assert value - mp.mpf(lower.deficit) <= truth, float(e)
