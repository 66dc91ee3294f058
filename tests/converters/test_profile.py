"""Profile <-> eps(delta) <-> tradeoff (autoacct/converters/profile.py) on the analytic Gaussian."""

from __future__ import annotations

import numpy as np
import pytest
from closed_forms import gaussian_delta_closed, gaussian_eps_closed
from scipy import stats

from autoacct.converters.profile import epsilon_from_profile, tradeoff_from_profile


@pytest.mark.parametrize("mu, delta", [(0.5, 1e-5), (1.0, 1e-3), (3.0, 1e-8)])
def test_inversion_is_safe_on_both_sides(mu, delta):
    """With upper=True the answer's delta is at most the target; with upper=False the answer
    is at most the root. Both are within 1e-9 of the root found by Brent's method."""
    def fn(e: float) -> float:
        return gaussian_delta_closed(mu, e)
    root = gaussian_eps_closed(mu, delta)
    up = epsilon_from_profile(fn, delta, 1.0, upper=True)
    low = epsilon_from_profile(fn, delta, 1.0, upper=False)
    assert fn(up) <= delta and low <= root * (1 + 1e-12)
    assert up == pytest.approx(root, rel=1e-9) and low == pytest.approx(root, rel=1e-9)


@pytest.mark.parametrize("mu, delta", [(0.5, 1e-5), (1.0, 1e-3), (3.0, 1e-8), (0.01, 0.5), (20.0, 1e-300)])
def test_vectorised_inversion_takes_the_bisection_steps(mu, delta):
    """A profile evaluated on the tree of the next bisection midpoints gives the very answer of
    the scalar bisection (the same midpoints, the same decisions), in fewer calls; both are
    within 1e-9 of the analytic Gaussian's root (scipy's normal CDF, vectorised)."""
    calls = {"scalar": 0, "vector": 0}

    def fn(e, kind="scalar"):
        calls[kind] += 1
        e = np.asarray(e, dtype=float)
        # In log space: e^e overflows before its factor underflows at mu = 20, delta 1e-300.
        return stats.norm.cdf(-e / mu + mu / 2) - np.exp(e + stats.norm.logcdf(-e / mu - mu / 2))
    for upper in (True, False):
        scalar = epsilon_from_profile(fn, delta, 1.0, upper=upper)
        vector = epsilon_from_profile(lambda e: fn(e, "vector"), delta, 1.0, upper=upper, vectorised=True)
        assert vector == scalar
    assert calls["vector"] * 2 < calls["scalar"] or calls["scalar"] <= 4  # 4: eps = 0 at once
    assert scalar == pytest.approx(gaussian_eps_closed(mu, delta), rel=1e-9)


def test_profile_already_below_target_gives_zero():
    assert epsilon_from_profile(lambda e: 1e-9, 1e-6) == 0.0


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.5])
def test_tradeoff_of_the_gaussian_profile_is_below_and_close_to_the_exact_curve(mu):
    """f-DP duality (Dong, Roth and Su 2022): from the profile on a grid the tradeoff is a lower
    bound on the exact Gaussian curve Phi(Phi^-1(1 - a) - mu), and close to it on a fine grid."""
    alpha = np.array([1e-4, 1e-3, 0.01, 0.1, 0.3, 0.6, 0.9])
    grid = np.concatenate(([0.0], np.geomspace(1e-4, 30.0, 4000)))
    got = tradeoff_from_profile(lambda e: np.array([gaussian_delta_closed(mu, x) for x in e]), alpha, grid)
    exact = stats.norm.cdf(-stats.norm.ppf(alpha) - mu)  # not ppf(1 - alpha): 1 - alpha rounds
    assert np.all(got <= exact + 1e-12)
    assert np.all(exact - got <= 2e-3)


def _gaussian_profile(mu: float):
    def fn(e):
        e = np.asarray(e, dtype=float)
        return stats.norm.cdf(-e / mu + mu / 2) - np.exp(e + stats.norm.logcdf(-e / mu - mu / 2))
    return fn


@pytest.mark.parametrize("mu", np.geomspace(0.01, 30.0, 9).tolist())
def test_vectorised_inversion_needs_few_calls(mu):
    """Over mu from 0.01 to 30 and delta from 0.5 to 1e-15, the vectorised inversion returns the
    scalar bisection's answer (the analytic Gaussian's profile is monotone in floating point
    there) in at most 9 calls, where the bisection takes 13 or more for a positive eps. At
    delta = 1e-300, where the profile's rounding is not monotone, both answers are within
    1e-12 of each other and each is on its safe side of a point the profile was evaluated at."""
    fn = _gaussian_profile(mu)
    for delta in (0.5, 1e-3, 1e-6, 1e-10, 1e-15, 1e-300):
        for upper in (True, False):
            calls = {"scalar": 0, "vector": 0}

            def counted(e, kind, calls=calls):
                calls[kind] += 1
                return fn(e)
            scalar = epsilon_from_profile(lambda e: counted(e, "scalar"), delta, 1.0, upper=upper)
            vector = epsilon_from_profile(lambda e: counted(e, "vector"), delta, 1.0, upper=upper,
                                          vectorised=True)
            if delta >= 1e-15:
                assert vector == scalar
                assert calls["vector"] <= 9 and (scalar == 0.0 or calls["scalar"] >= 13)
            else:
                assert vector == pytest.approx(scalar, rel=1e-12)


def test_vectorised_inversion_of_a_step_profile_is_safe():
    """A profile that jumps (that of a pure 1-DP pair with an atom of loss +inf of mass 0.4: 0.4
    plus a part falling to 0 at eps = 1, then 0): each answer is on its safe side of the jump,
    the upper one where the profile is at most the target and the lower one where it is above."""
    def fn(e):
        e = np.asarray(e, dtype=float)
        return np.where(e < 1.0, 0.4 + 0.6 * (1.0 - np.exp(e - 1.0)), 0.0)
    for delta in (1e-9, 0.1, 0.39):
        up = epsilon_from_profile(fn, delta, 1.0, upper=True, vectorised=True)
        low = epsilon_from_profile(fn, delta, 1.0, upper=False, vectorised=True)
        assert float(fn(up)) <= delta < float(fn(low))
        assert low < 1.0 <= up and up - low <= 1e-12
    # Above the atom the root is where the continuous part meets the target.
    up = epsilon_from_profile(fn, 0.7, 1.0, upper=True, vectorised=True)
    assert up == pytest.approx(1.0 + np.log(0.5), rel=1e-12) and float(fn(up)) <= 0.7


@pytest.mark.parametrize("mu", [0.05, 1.0, 8.0])
def test_a_floor_below_the_root_brackets_it_in_fewer_calls(mu):
    """An upper profile inverted from a floor at its lower profile's root (here the analytic
    Gaussian's profile, lifted by a relative 1e-9 as a rounding bound would): the answer is on
    its safe side (the upper profile at it is at most the target) and within 1e-12 of the
    answer found without the floor, in fewer calls; a floor above the root (wrong) or at 0
    changes neither the answer's safety nor its value by more than that."""
    fn = _gaussian_profile(mu)

    def up(e):
        return fn(e) * (1.0 + 1e-9)
    for delta in (1e-3, 1e-8, 1e-14):
        low = epsilon_from_profile(fn, delta, 1.0, upper=False, vectorised=True)
        calls = {"plain": 0, "floor": 0}

        def counted(e, kind, calls=calls):
            calls[kind] += 1
            return up(e)
        plain = epsilon_from_profile(lambda e: counted(e, "plain"), delta, 1.0, upper=True, vectorised=True)
        floored = epsilon_from_profile(lambda e: counted(e, "floor"), delta, 1.0, upper=True, vectorised=True,
                                       floor=low)
        assert float(up(np.array(floored))) <= delta and floored >= low
        assert floored == pytest.approx(plain, rel=1e-12, abs=1e-13)
        assert calls["floor"] < calls["plain"]
        for wrong in (2.0 * plain + 1.0, 0.0):
            other = epsilon_from_profile(up, delta, 1.0, upper=True, vectorised=True, floor=wrong)
            assert float(up(np.array(other))) <= delta
            assert other == pytest.approx(plain, rel=1e-12, abs=1e-13)
