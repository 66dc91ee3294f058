"""The certified PLD laws of one epoch of random allocation (allocation_pld), against independent
computations of the epoch's pair (P, Q) = ((1/t) sum_j N(e_j, s^2 I), N(0, s^2 I)).

Independent sources: for t = 2 the profiles E_Q[(R - g)_+] and E_Q[(1 - g R)_+] by adaptive
quadrature of a one-dimensional integral (the second summand integrated in closed form,
the Black-Scholes formula for a log-normal); the moments E_Q[R^2] and E_Q[R^3] in closed form
(cumulants of the log-normal summands); seeded Monte Carlo of the t-dimensional pair, four
standard errors allowed; the Gaussian's closed form for the summed outputs (a lower end).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from property_checks import budget
from scipy import integrate, special

from autoacct import Composition, Gaussian, PoissonSubsample, RandomAllocation, SampleWithoutReplacement
from autoacct.subsampling.allocation_pld import AllocationLowerPair, epoch_laws


def _call(c: float, s: float) -> float:
    """E[(l - c)_+] for l = exp(Z / s - 1/(2 s^2)), Z ~ N(0, 1) (Black and Scholes 1973)."""
    if c <= 0.0:
        return 1.0 - c
    return float(special.ndtr(s * (1.0 / (2.0 * s * s) - math.log(c)))
                 - c * special.ndtr(s * (-1.0 / (2.0 * s * s) - math.log(c))))


def _put(c: float, s: float) -> float:
    """E[(c - l)_+] = c - 1 + E[(l - c)_+] (E l = 1)."""
    return 0.0 if c <= 0.0 else c - 1.0 + _call(c, s)


def _ell(z: float, s: float) -> float:
    return math.exp(z / s - 1.0 / (2.0 * s * s))


def _density(z: float) -> float:
    return math.exp(-z * z / 2) / math.sqrt(2 * math.pi)


def _two_step_forward(s: float, eps: float, epsabs: float = 1e-15) -> float:
    """E_Q[(R - g)_+] at t = 2, g = e^eps, R = (l_1 + l_2) / 2: the expectation over l_2 in
    closed form, over Z_1 by adaptive quadrature."""
    g = math.exp(eps)
    return integrate.quad(lambda z: 0.5 * _call(2.0 * g - _ell(z, s), s) * _density(z), -12.0, 14.0,
                          epsabs=epsabs, epsrel=1e-11, limit=400)[0]


def _two_step_profiles(s: float, eps: float) -> tuple[float, float]:
    """(E_Q[(R - g)_+], E_Q[(1 - g R)_+]) at t = 2 (:func:`_two_step_forward`; the second
    likewise)."""
    g = math.exp(eps)
    bwd = integrate.quad(lambda z: 0.5 * g * _put(2.0 / g - _ell(z, s), s) * _density(z), -12.0, 14.0,
                         epsabs=1e-15, epsrel=1e-11, limit=400)[0]
    return _two_step_forward(s, eps), bwd


@pytest.mark.parametrize("sigma", [0.9, 2.0])
def test_two_steps_profiles_bracket_quadrature(sigma: float) -> None:
    laws = epoch_laws(2, sigma)
    assert laws is not None
    for eps in (0.0, 0.3, 1.0, 2.0):
        fwd, bwd = _two_step_profiles(sigma, eps)
        e = np.array(eps)
        for (lo, up), ref, close in (((laws.forward_lower, laws.forward_upper), fwd, True),
                                     ((laws.backward_lower, laws.backward_upper), bwd, eps <= 0.3)):
            lo_v = float(lo.profile(e) - lo.profile_error(e))
            up_v = float(up.profile(e) + up.profile_error(e))
            # quadrature within 1e-11 relative (and 1e-15 absolute) of the truth
            assert lo_v <= ref * (1 + 1e-10) + 1e-15
            assert up_v >= ref * (1 - 1e-10) - 1e-15
            # Close where the lattice is fine against R: the forward direction (R large), and the
            # backward one at small eps (its tail lies at small R, where the spacing, 2% of a
            # summand's deviation, is coarse against R: 4% apart at eps 2).
            if close and ref > 1e-8:
                assert up_v - lo_v <= 3e-3 * ref


@pytest.mark.parametrize("steps,sigma", [(2, 1.5), (10, 1.0), (100, 1.1), (1000, 2.0), (1000, 20.0)])
def test_moments_of_the_laws_bracket_the_closed_forms(steps: int, sigma: float) -> None:
    # The upper laws are mean-preserving spreads (convex order): E_Q[R'^n] >= E_Q[R^n], from the
    # backward law (loss -log R' under Q) and the forward one (E_P[R'^(n-1)] = E_Q[R'^n]); the
    # forward lower law is a conditional expectation E[R | N] with masses and loss values
    # lowered: E_P[R^(n-1)] <= E_Q[R^n]. (The backward lower law's losses are lowered, its R
    # raised: its moments are not bounded.) n = 2, 3, where the lattice's truncation (mass
    # below 1e-13) is far below the gaps; at t = 1000 the sums' windows drop mass below them too.
    # E_Q[R^n] from the cumulants of the t iid log-normal summands: Var R = (e^{1/s^2} - 1) / t,
    # kappa_3 = (e^{3/s^2} - 3 e^{1/s^2} + 2) / t^2.
    laws = epoch_laws(steps, sigma)
    assert laws is not None
    a = 1.0 / (sigma * sigma)
    var = math.expm1(a) / steps
    exact = {2: 1.0 + var, 3: 1.0 + 3.0 * var + (math.exp(3 * a) - 3 * math.exp(a) + 2) / steps ** 2}

    def moment(law, power: float) -> float:
        return float(np.sum(law.p_mass * np.exp(power * law.values)))

    for n, ref in exact.items():
        upper_q = moment(laws.backward_upper, -n)
        upper_p = moment(laws.forward_upper, n - 1)
        lower_p = moment(laws.forward_lower, n - 1)
        assert lower_p <= ref * (1 + 1e-12)
        assert upper_q >= ref * (1 - 1e-9) and upper_p >= ref * (1 - 1e-9)
        assert max(upper_q, upper_p) - lower_p <= 1e-4 * ref


def test_one_epoch_profiles_against_monte_carlo() -> None:
    # t = 100, s = 1.1: E_P[(1 - g / R)_+] (forward) and E_Q[(1 - g R)_+] (backward) by 2e5 seeded
    # draws each; the bounds must lie on the right side of the estimate to within 4 standard errors.
    t, s = 100, 1.1
    laws = epoch_laws(t, s)
    assert laws is not None
    # The mass the upper laws put at +inf (overflow of the lattice and every rounding bound)
    # is far below the deltas asked of ten such epochs.
    assert laws.forward_upper.p_inf < 1e-9 and laws.backward_upper.p_inf < 1e-9
    rng = np.random.default_rng(20260226)
    z = rng.standard_normal((200_000, t))
    rq = np.mean(np.exp(z / s - 1.0 / (2 * s * s)), axis=1)
    z[:, 0] += 1.0 / s
    rp = np.mean(np.exp(z / s - 1.0 / (2 * s * s)), axis=1)
    for eps in (0.1, 0.3):
        g = math.exp(eps)
        for draws, lo, up in ((np.maximum(1 - g / rp, 0.0), laws.forward_lower, laws.forward_upper),
                              (np.maximum(1 - g * rq, 0.0), laws.backward_lower, laws.backward_upper)):
            est, se = float(draws.mean()), float(draws.std() / math.sqrt(draws.size))
            assert float(up.profile(np.array(eps))) >= est - 4 * se
            assert float(lo.profile(np.array(eps))) <= est + 4 * se


def test_composed_epochs_against_monte_carlo() -> None:
    # t = 10, s = 1, 2 epochs: the composed pair's delta(eps) = E[(1 - e^{eps - L})_+] under P with L
    # the sum of two epochs' losses log R, by 4e5 seeded draws (forward direction, the larger
    # here); the certified bounds bracket it to within 4 standard errors.
    t, s, epochs, n = 10, 1.0, 2, 400_000
    run = Composition()([RandomAllocation(t)(Gaussian(s))], [epochs])
    rng = np.random.default_rng(7)
    loss = np.zeros(n)
    for _ in range(epochs):
        z = rng.standard_normal((n, t))
        z[np.arange(n), rng.integers(0, t, n)] += 1.0 / s
        loss += np.log(np.mean(np.exp(z / s - 1.0 / (2 * s * s)), axis=1))
    for eps in (0.5, 1.0):
        draws = np.maximum(1.0 - np.exp(eps - loss), 0.0)
        est, se = float(draws.mean()), float(draws.std() / math.sqrt(n))
        lo, up = run.delta_bounds(eps)
        assert float(up) >= est - 4 * se
        assert float(lo) <= est + 4 * se
        assert float(lo) > 0.5 * est  # the lower end is the PLD's, not the summed outputs'


@pytest.mark.parametrize("sigma", [1.1, 1.0])
def test_ten_epochs_bracket_within_tol(sigma: float) -> None:
    # t = 100, 10 epochs, delta 1e-5 (Renyi DP alone gave [1.08, 1.77] at sigma 1.1 and
    # [1.199, 2.107] at sigma 1): the PLD route brackets eps within the default tol (1e-3), above
    # the summed outputs' Gaussian (noise multiplier 10 sigma, composed 10 times: closed form)
    # and below Renyi DP and Poisson subsampling at q = 1/t (PLD upper end).
    run = Composition()([RandomAllocation(100)(Gaussian(sigma))], [10])
    lower, upper = (float(v) for v in run.epsilon_bounds(1e-5))
    assert upper - lower <= 1e-3 * upper
    summed = float(Gaussian(10.0 * sigma / math.sqrt(10)).epsilon(1e-5))
    assert summed < lower
    assert upper < float(run.epsilon(1e-5, via="rdp"))
    poisson = Composition()([PoissonSubsample(0.01)(Gaussian(sigma))], [1000])
    assert upper < float(poisson.epsilon_bounds(1e-5)[0])


def test_one_epoch_is_bracketed_by_its_own_laws() -> None:
    # One epoch (t = 100, s = 1.1): the PLD route's lower ends come from the lower laws (the
    # routes read a run's attained pair where its own laws only dominate), within tol of the
    # upper ends; the delta bracket likewise (within 1%).
    m = RandomAllocation(100)(Gaussian(1.1))
    lo, up = (float(v) for v in m.epsilon_bounds(1e-5))
    assert 0.0 < lo <= up <= lo * (1 + 1e-3)
    assert lo > float(Gaussian(11.0).epsilon(1e-5))  # the summed outputs' Gaussian
    d_lo, d_up = (float(v) for v in m.delta_bounds(0.3))
    assert 0.0 < d_lo <= d_up <= d_lo * 1.01


def test_small_sigma_falls_back_to_renyi_dp() -> None:
    # sigma 0.3: the record's summand reaches e^{(1/s + 7.5)/s}, too far for the lattice: no PLD,
    # the Renyi-DP route answers, with the summed outputs as lower end.
    m = RandomAllocation(50)(Gaussian(0.3))
    assert epoch_laws(50, 0.3) is None and "pld" not in m.routes
    lower, upper = m.epsilon_bounds(1e-5)
    assert 0.0 < lower < upper < math.inf


def test_lower_pair_bad_input_names_the_parameter() -> None:
    for steps in (0, 1, -2):
        with pytest.raises(ValueError, match="steps"):
            AllocationLowerPair(steps, 1.0)
    for sigma in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="sigma"):
            AllocationLowerPair(10, sigma)
    with pytest.raises(TypeError, match="sigma"):
        AllocationLowerPair(10, "1")  # type: ignore[arg-type]


def test_two_steps_tail_profile_is_close_to_quadrature() -> None:
    # sigma = 2, eps = 3: the profile is 4.5e-14, of the order of the products' rounding bound
    # summed over all atoms (1.7e-14), which the upper law would carry at +inf from its computed
    # masses alone; its tail atoms carry their own relative bounds instead, and the mass at +inf
    # is the lattice's overflow (8e-16). The lower law lies within 1% below.
    laws = epoch_laws(2, 2.0)
    assert laws is not None
    fwd = _two_step_forward(2.0, 3.0, epsabs=1e-25)
    e = np.array(3.0)
    lo = float(laws.forward_lower.profile(e) - laws.forward_lower.profile_error(e))
    up = float(laws.forward_upper.profile(e) + laws.forward_upper.profile_error(e))
    assert 0.99 * fwd <= lo <= fwd * (1 + 1e-10) and fwd * (1 - 1e-10) <= up <= 1.03 * fwd
    assert laws.forward_upper.p_inf < 1e-15


@pytest.mark.parametrize("steps,sigma,most", [(10, 2.0, 2e-15), (100, 20.0, 1e-16),
                                              (1000, 2.0, 1e-16), (1000, 20.0, 1e-16),
                                              (100, 1.0, 2e-12), (1000, 1.0, 1e-11)])
def test_upper_laws_put_little_mass_at_infinity(steps: int, sigma: float, most: float) -> None:
    # At +inf: the overflow (t Phi(-span) for the lattice's span), the windows' dropped mass
    # and, where that is the lesser bound, the products' rounding bounds summed over all atoms
    # (1.5e-11 at t = 1000, sigma = 2, 20). At sigma = 1 the lattice stops at span 7 (its
    # points' limit): the record's summand beyond it, Phi(-7) = 1.3e-12, and the windows of
    # many summands, whose drops the products' error bounds decide, make most of it.
    laws = epoch_laws(steps, sigma)
    assert laws is not None
    assert 0.0 < laws.forward_upper.p_inf <= most and 0.0 < laws.backward_upper.p_inf <= most


def test_three_epochs_at_small_delta_are_answered_by_their_laws() -> None:
    # t = 100, sigma = 20, three epochs, delta = 1e-10: the laws' mass at +inf (3 x 1.3e-11)
    # is below delta, so the PLD brackets eps within 3% (0.04657 against 0.04576); before
    # (3 x 1.7e-10) the Renyi DP answered 0.05203. The summed outputs' Gaussian (noise
    # multiplier 20 sqrt(100 / 3), closed form) is an independent lower end.
    run = Composition()([RandomAllocation(100)(Gaussian(20.0))], [3])
    lo, up = (float(v) for v in run.epsilon_bounds(1e-10))
    summed = float(Gaussian(20.0 * math.sqrt(100.0 / 3.0)).epsilon(1e-10))
    assert summed <= lo <= up <= 1.03 * lo


def test_a_hundred_epochs_at_delta_1e_minus_7_within_tol() -> None:
    # t = 100, sigma = 1, 100 epochs (10,000 steps), delta = 1e-7: the laws' mass at +inf, 100
    # times 2.8e-12 per epoch, is far below delta, so the PLD brackets eps within the default
    # tol; before (100 x 3.0e-10) the Renyi DP answered, [7.3474, 7.4430] (1.3% wide). The
    # summed outputs' Gaussian (noise multiplier sigma sqrt(t / E) = 1, closed form) is an
    # independent lower end, the Renyi DP route an upper one.
    run = Composition()([RandomAllocation(100)(Gaussian(1.0))], [100])
    lo, up = (float(v) for v in run.epsilon_bounds(1e-7))
    assert up - lo <= 1e-3 * up
    assert float(Gaussian(1.0).epsilon(1e-7)) <= lo
    assert up <= float(run.epsilon(1e-7, via="rdp"))


def test_a_hundred_epochs_at_delta_1e_minus_10_say_they_miss_tol() -> None:
    # At delta = 1e-10 the laws' mass at +inf (100 x 2.8e-12) is above delta: the PLD route's
    # dominating laws give [inf, inf], which is no answer, and the Renyi DP answers about 10%
    # wide. That was returned without a warning (the route's bracket "met" tol at infinity).
    from autoacct import AccuracyWarning

    run = Composition()([RandomAllocation(100)(Gaussian(1.0))], [100])
    with pytest.warns(AccuracyWarning, match=r"eps\(1e-10\) bounds \[0, inf\]"):
        lo, up = (float(v) for v in run.epsilon_bounds(1e-10))
    assert float(Gaussian(1.0).epsilon(1e-10)) <= lo < up < math.inf
    assert up - lo > 1e-3 * up


def test_bounds_decided_by_the_laws_mass_at_infinity_are_not_silent() -> None:
    # t = 300, sigma = 1, delta = 1e-15: below the laws' mass at +inf (4.4e-12: the record's
    # summand beyond the lattice's end, Phi(-7) = 1.3e-12, and the mass the windows may drop),
    # so the PLD route's upper end is inf. It says so, and the auto answer (the Renyi DP upper
    # end) repeats it, as that bracket is wider than tol too.
    from autoacct import AccuracyWarning, routes

    laws = epoch_laws(300, 1.0)
    assert laws is not None and laws.forward_upper.p_inf > 1e-15
    with pytest.warns(AccuracyWarning, match="infinite loss"):
        lo, up = routes.epsilon_bounds(RandomAllocation(300)(Gaussian(1.0)), 1e-15, "pld", 1e-3)
    assert 0.0 < lo and up == math.inf
    with pytest.warns(AccuracyWarning, match=r"infinite loss.*the answer over all routes"):
        lo, up = (float(v) for v in RandomAllocation(300)(Gaussian(1.0)).epsilon_bounds(1e-15))
    assert 0.0 < lo < up < math.inf and up - lo > 1e-3 * up
    # delta = 1e-11: eps is finite, but the mass moves its upper end beyond tol.
    with pytest.warns(AccuracyWarning, match="infinite loss"):
        lo, up = routes.epsilon_bounds(RandomAllocation(300)(Gaussian(1.0)), 1e-11, "pld", 1e-3)
    assert 0.0 < lo < up < math.inf and up - lo > 1e-3 * up and laws.forward_upper.p_inf > 1e-3 * 1e-11
    # delta(2): the upper end holds that mass, the lower end (the summed outputs) lies below it.
    with pytest.warns(AccuracyWarning, match="infinite loss"):
        d_lo, d_up = (float(v) for v in RandomAllocation(300)(Gaussian(1.0)).delta_bounds(2.0))
    assert d_lo < laws.forward_upper.p_inf <= d_up and d_up - d_lo > 1e-3 * d_up


@pytest.mark.parametrize("steps,sigma", [(30, 5.0), (100, 1.0), (300, 0.8), (1000, 2.0)])
def test_lower_laws_floor_is_below_the_certified_mass_ratio_and_half_a_cell_above_the_old(
        steps: int, sigma: float) -> None:
    # log E_Q[R | N = n] is at least log(p_lo / q_hi) from the computed masses and their error
    # bounds; where Q(N = n) > 1e-4 these pin it to about 1e-9, and the floor (n d + t o) / t
    # of the lower laws must lie below them, within 1.5% of a cell (d), where n d / t lay about
    # half a cell lower.
    from autoacct.subsampling.allocation_cells import least_offset, summand_masses
    from autoacct.subsampling.allocation_pld import lattice
    from autoacct.subsampling.allocation_vectors import Vec, power, product

    grid = lattice(sigma, steps)
    assert grid is not None
    d = grid.spacing
    vec = summand_masses(sigma, d, grid.top + 1)
    rest = power(Vec.of(*vec["m"]), steps - 1, grid.window)
    p = product(Vec.of(*vec["mu"]), rest, grid.window(steps))
    q = product(Vec.of(*vec["m"]), rest, grid.window(steps))
    bulk = q.values > 1e-4
    n = p.indices[bulk]
    certified = np.log((p.values[bulk] - p.entry_error()) / (q.values[bulk] + q.entry_error()))
    floor = np.log((n * d + steps * least_offset(sigma, d)) / steps)
    assert bulk.sum() > 100
    assert np.all(floor <= certified) and np.all(certified - floor <= 0.015 * d)
    assert np.min(certified - np.log(n * d / steps)) > 0.3 * d
    # The lower laws' floor itself, from the offsets' convex minorant: below the certified
    # ratios too, never below the least offset's, and at sigma >= 2 (where the minorant near the
    # mode lies above the least offset) closer: at most 0.8 times the gap (0.0006 d against
    # 0.0044 d at sigma = 5).
    from autoacct.subsampling.allocation_cells import offset_minorant

    xs, ys = offset_minorant(sigma, d, grid.top + 1)
    closer = np.log((n * d + steps * np.interp(n * d / steps, xs, ys)) / steps)
    assert np.all(floor <= closer) and np.all(closer <= certified)
    if sigma >= 2.0:
        assert np.max(certified - closer) <= 0.8 * np.max(certified - floor)


def test_epochs_wider_than_tol_say_so_in_their_own_name() -> None:
    # An epoch's upper and lower laws bound its own pair: a bracket wider than tol is the
    # accountant's error and is reported, alone or composed (the single epoch's queries that
    # a composition makes for its lower end stay quiet: the warning names the composition).
    from autoacct import AccuracyWarning

    epoch = RandomAllocation(100)(Gaussian(2.0))
    assert epoch.brackets_own_pair()
    with pytest.warns(AccuracyWarning, match="bound its own pair") as caught:
        lo, up = (float(v) for v in epoch.epsilon_bounds(1e-5, tol=1e-5))
    assert len(caught) == 1 and up - lo > 1e-5 * up
    run = Composition()([RandomAllocation(100)(Gaussian(2.0))], [3])
    assert run.brackets_own_pair()
    with pytest.warns(AccuracyWarning) as caught:
        lo, up = (float(v) for v in run.epsilon_bounds(1e-11, tol=1e-5))
    assert up - lo > 1e-5 * up
    assert all("Compose" in str(w.message) for w in caught)
    # delta bounds likewise, within tol on the eps scale at the default tol (no warning), not
    # at 1e-5.
    eps = np.array([0.25, 0.3137])
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        Composition()([RandomAllocation(100)(Gaussian(2.0))], [3]).delta_bounds(eps)
    with pytest.warns(AccuracyWarning, match="Compose.*bound its own pair"):
        d_lo, d_up = Composition()([RandomAllocation(100)(Gaussian(2.0))], [3]).delta_bounds(eps, tol=1e-5)
    assert np.any(d_up - d_lo > 1e-5 * d_up)
    # Sampling without replacement: its dominating pair is not attained, no accuracy closes
    # that gap, and nothing is said of it.
    assert not Composition()([SampleWithoutReplacement(0.01)(Gaussian(1.0))], [10]).brackets_own_pair()


def test_lifted_upper_law_survival_is_above_both_bounds_minimum() -> None:
    # The true survival of an upper law's atoms lies below the old bound (1 less the computed
    # masses below plus twice their summed error) and below the new one (the independent mass
    # at +inf and the relative bound summed over the atoms above, with sqrt(n) |f'|_2). The
    # lifted law's survival, summed exactly, is at least the lesser of the two at every atom,
    # and its mass at +inf is the new bound.
    from fractions import Fraction

    import mpmath

    from autoacct.subsampling.allocation_pld import _lifted
    from autoacct.subsampling.allocation_vectors import Vec

    rng = np.random.default_rng(5)
    values = np.sort(rng.random(400))[::-1] ** 30 * 1e-3
    vec = Vec(values, 1, 0.0, 0.0, 0.0, rel=3e-8, dabs=1e-19, f2r=5e-14)
    old_inf, new_inf = 1.7e-10, 2e-17
    masses, p_inf = _lifted(values, vec, old_inf, new_inf)
    assert p_inf == new_inf and np.all(masses >= values)
    stored = Fraction(p_inf)
    old = Fraction(old_inf)
    with mpmath.workdps(40):
        new = mpmath.mpf(new_inf)
        for k in range(len(values) - 1, -1, -1):
            stored += Fraction(float(masses[k]))
            old += Fraction(float(values[k]))
            new += (mpmath.mpf(float(values[k])) + vec.dabs) / (1 - mpmath.mpf(vec.rel))
            count = len(values) - k
            new_k = new + mpmath.sqrt(count) * vec.f2r / (1 - mpmath.mpf(vec.rel))
            assert stored >= min(old, Fraction(str(new_k)))
    # Where the independent bound is not the lesser, nothing moves.
    same, inf_same = _lifted(values, vec, 1e-12, 2e-12)
    assert inf_same == 1e-12 and np.array_equal(same, values)


def test_suffix_lower_masses_stay_below_every_bound_on_the_true_sums() -> None:
    # The true entries x satisfy x^ - x = alpha x + a' + f' (|alpha| <= rel, |a'| <= dabs,
    # |f'|_2 <= f2r) and x^ - x = a + f (|a|_1 <= d1, |a| <= dinf, |f|_2 <= f2), x >= 0: the
    # true sum over any run of m entries is at least either model's worst case, and the sum from
    # an atom to the top at least that of any run inside it. The masses' exact sums from every
    # atom up stay below the best such bound (exact arithmetic), and in the tail (entries of
    # 2e-14 to 6e-14) they keep over 10 times what the entries lowered one by one keep (the FFT
    # bound taken per entry, 5e-14).
    from fractions import Fraction

    import mpmath

    from autoacct.subsampling.allocation_pld import _suffix_lower
    from autoacct.subsampling.allocation_vectors import Vec

    rng = np.random.default_rng(11)
    values = np.concatenate((np.geomspace(1e-3, 1e-9, 200) * rng.uniform(0.5, 1.5, 200),
                             rng.uniform(2e-14, 6e-14, 100)))
    vec = Vec(values, 0, d1=6e-11, dinf=1e-17, f2=5e-14, rel=3e-8, dabs=1e-19, f2r=5e-14)
    masses = _suffix_lower(values, vec)
    assert np.all(masses >= 0.0)
    n = len(values)
    ends = sorted({n} | {n - (1 << i) for i in range(n.bit_length()) if (1 << i) < n})
    with mpmath.workdps(40):
        x = [mpmath.mpf(float(v)) for v in values]
        best = [mpmath.mpf(0)] * (n + 1)
        for k in range(n - 1, -1, -1):
            run_best = mpmath.mpf(0)
            for end in ends:
                if end <= k:
                    continue
                m = end - k
                total = mpmath.fsum(x[k:end])
                relative = (total - m * vec.dabs - mpmath.sqrt(m) * vec.f2r) / (1 + mpmath.mpf(vec.rel))
                plain = total - min(vec.d1, m * vec.dinf) - mpmath.sqrt(m) * vec.f2
                run_best = max(run_best, relative, plain)
            best[k] = max(best[k + 1], run_best)
        stored = Fraction(0)
        for k in range(n - 1, -1, -1):
            stored += Fraction(float(masses[k]))
            assert stored <= Fraction(str(best[k]))
    tail = slice(200, n)
    assert float(np.sum(masses[tail])) > 10.0 * float(np.sum(np.maximum(vec.lower_values()[tail], 0.0))) > 0.0


def _drawn_entries(data, n: int) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """True entries x >= 0 (a bulk and a tail of small ones) and computed ones x^ >= 0 with
    errors of one of the two models (relative: x^ = (1 + alpha) x + a'; or FFT-like: x^ = x + f),
    with the model's bounds and the other model's made void."""
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    x = np.sort(np.exp(rng.uniform(math.log(1e-16), math.log(1e-3), n)))[::-1] * rng.uniform(0.5, 1.5, n)
    if data.draw(st.booleans()):
        rel, dabs = 10.0 ** data.draw(st.floats(-12, -6)), 10.0 ** data.draw(st.floats(-20, -13))
        a = rng.uniform(-1.0, 1.0, n) * dabs
        x_hat = np.maximum((1.0 + rng.uniform(-rel, rel, n)) * x + a, 0.0)
        bounds = {"rel": rel, "dabs": dabs, "f2r": 0.0, "d1": 1e300, "dinf": 1e300, "f2": 1e300}
    else:
        f2 = 10.0 ** data.draw(st.floats(-15, -11))
        f = rng.normal(size=n)
        f *= f2 / float(np.linalg.norm(f))
        x_hat = x + np.maximum(f, -x)  # (towards 0 where x^ would be negative: |f| only shrinks)
        bounds = {"rel": 0.0, "dabs": 0.0, "f2r": f2, "d1": 0.0, "dinf": 0.0, "f2": f2}
    return x, x_hat, bounds


@given(data=st.data(), n=st.integers(1, 120))
@budget(40)
def test_suffix_lower_never_exceeds_the_true_sums_above_any_atom(data, n: int) -> None:
    from fractions import Fraction

    from autoacct.subsampling.allocation_pld import _suffix_lower
    from autoacct.subsampling.allocation_vectors import Vec

    x, x_hat, b = _drawn_entries(data, n)
    vec = Vec(x_hat, 0, b["d1"], b["dinf"], b["f2"], b["rel"], b["dabs"], b["f2r"])
    masses = _suffix_lower(x_hat, vec)
    assert np.all(np.isfinite(masses)) and np.all(masses >= 0.0)
    stored, true = Fraction(0), Fraction(0)
    for k in range(n - 1, -1, -1):
        stored += Fraction(float(masses[k]))
        true += Fraction(float(x[k]))
        assert stored <= true


@given(data=st.data(), n=st.integers(1, 120), share=st.floats(0.0, 1.0))
@budget(40)
def test_lifted_survival_never_below_the_true_one(data, n: int, share: float) -> None:
    # True masses x (their sum below 0.2) and mass at +inf p_B = 1 - sum x; the old bound at
    # +inf as the upper laws form it (1 less the computed masses plus twice a bound on their
    # summed error), the new one anywhere from p_B up to it: the lifted law's mass above every
    # atom, +inf included, is at least the true law's.
    from fractions import Fraction

    from autoacct.subsampling.allocation_pld import _lifted
    from autoacct.subsampling.allocation_vectors import Vec

    x, x_hat, b = _drawn_entries(data, n)
    true_inf = Fraction(1) - sum((Fraction(float(v)) for v in x), Fraction(0))
    vec = Vec(x_hat, 0, b["d1"], b["dinf"], b["f2"], b["rel"], b["dabs"], b["f2r"])
    summed_error = min(b["rel"] * 1.01 + n * b["dabs"], b["d1"]) + math.sqrt(n) * b["f2"]
    old_inf = 1.0 - math.fsum(x_hat) + 2.0 * summed_error * (1.0 + 1e-9) + 4.0 * 2.0 ** -52
    floor = float(true_inf) * (1.0 + 2.0 ** -50)
    new_inf = floor + share * max(old_inf - floor, 0.0)
    masses, p_inf = _lifted(x_hat, vec, old_inf, new_inf)
    assert np.all(np.isfinite(masses)) and np.all(masses >= 0.0) and p_inf in (old_inf, new_inf)
    stored, true = Fraction(p_inf), true_inf
    for k in range(n - 1, -1, -1):
        stored += Fraction(float(masses[k]))
        true += Fraction(float(x[k]))
        assert stored >= true


def test_offset_shares_bracket_the_exact_mean_offset_given_the_cells_sum() -> None:
    # t = 2, sigma = 5: E_Q[off | N = n] / d, the two summands' mean offset in their cells given
    # their cells' sum, from 30-digit cell masses and offsets (differences of normal tails,
    # mpmath), over every pair of cells. The bounds bracket it wherever Q(N = n) > 1e-8, within
    # 1e-6 of a cell, where the offsets' convex minorant alone lies up to 1e-3 cells below.
    import mpmath

    from autoacct.subsampling.allocation_cells import offset_minorant, summand_masses
    from autoacct.subsampling.allocation_pld import _offset_shares, lattice
    from autoacct.subsampling.allocation_vectors import Vec, power, product

    sigma, t = 5.0, 2
    grid = lattice(sigma, t)
    assert grid is not None
    d = grid.spacing
    vec = summand_masses(sigma, d, grid.top + 1)
    rest = power(Vec.of(*vec["m"]), t - 1, grid.window)
    final = grid.window(t)
    q = product(Vec.of(*vec["m"]), rest, final)
    n = q.indices
    minorant = offset_minorant(sigma, d, grid.top + 1)
    low, high = _offset_shares(vec, rest, final, q, 0.0, sigma, d, minorant, n * d / t)
    s = mpmath.mpf(sigma)
    with mpmath.workdps(30):
        cells = range(grid.top)
        edges = [(mpmath.log(mpmath.mpf(k) * d) + 1 / (2 * s * s)) * s if k else -mpmath.inf
                 for k in range(grid.top + 1)]
        mass = [mpmath.ncdf(edges[k + 1]) - mpmath.ncdf(edges[k]) for k in cells]
        first = [mpmath.ncdf(edges[k + 1] - 1 / s) - mpmath.ncdf(edges[k] - 1 / s) for k in cells]
        share = [(first[k] / mass[k] - k * d) / d if mass[k] > 0 else mpmath.mpf(0) for k in cells]
        checked = 0
        for i in np.flatnonzero(q.values > 1e-8):
            total = int(n[i])
            pairs = [(k, total - k) for k in range(max(0, total - grid.top + 1), min(total, grid.top - 1) + 1)]
            weight = mpmath.fsum(mass[a] * mass[b] for a, b in pairs)
            ref = mpmath.fsum(mass[a] * mass[b] * (share[a] + share[b]) for a, b in pairs) / (2 * weight)
            assert low[i] <= ref <= high[i] and high[i] - low[i] <= 1e-6
            checked += 1
    assert checked > 100
    below = np.interp(n * d / t, *minorant) / d
    assert float(np.max(low[q.values > 1e-8] - below[q.values > 1e-8])) > 1e-4
