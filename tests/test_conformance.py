"""One conformance class run over every mechanism in the zoo (tests/zoo_cases.py)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from zoo_cases import ZOO

DELTAS = [1e-2, 1e-4, 1e-6, 1e-9, 1e-12]


@pytest.fixture(params=ZOO, ids=[z[0] for z in ZOO])
def case(request):
    name, factory, truth = request.param
    return factory(), truth


class TestConformance:
    def test_pickle_round_trip(self, case):
        """A mechanism pickles (for multiprocessing and checkpoints) into one that answers the
        same, whether it was pickled before its first query or with its answers cached."""
        m, _ = case
        fresh = pickle.loads(pickle.dumps(m))
        e = m.epsilon(1e-6)
        assert fresh.epsilon(1e-6) == e
        assert pickle.loads(pickle.dumps(m)).epsilon(1e-6) == e
        assert fresh.params == m.params and fresh.name == m.name

    def test_round_trip_delta_of_epsilon(self, case):
        m, _ = case
        for d in DELTAS:
            e = m.epsilon(d)
            if np.isfinite(e):
                assert m.delta(e) <= d * (1 + 1e-9)

    def test_epsilon_non_increasing_in_delta(self, case):
        m, _ = case
        eps = [m.epsilon(d) for d in DELTAS]
        assert all(a <= b for a, b in zip(eps, eps[1:]))

    def test_delta_non_increasing_in_epsilon(self, case):
        m, _ = case
        e = np.linspace(0.0, 3.0 * m.epsilon(1e-6), 40)
        d = m.delta(e)
        assert np.all(np.diff(d) <= 1e-15) and np.all((d >= 0) & (d <= 1))

    def test_lower_never_above_upper(self, case):
        m, _ = case
        for d in DELTAS:
            lo, up = m.epsilon_bounds(d)
            assert 0.0 <= lo <= up
        e = np.array([0.0, 0.1, 1.0, 5.0])
        lo, up = m.delta_bounds(e)
        assert np.all(lo <= up)

    def test_sound_against_closed_form(self, case):
        m, truth = case
        if truth is None:
            pytest.skip("no closed form for this mechanism (covered by cross-checks)")
        eps_of, delta_of = truth
        for d in DELTAS:
            t = eps_of(d)
            lo, up = m.epsilon_bounds(d)
            assert lo <= t * (1 + 1e-10) + 1e-12 and up >= t * (1 - 1e-10) - 1e-12
            assert m.epsilon(d) <= t * (1 + 1e-3) + 1e-9
        for e in (0.0, 0.5, 2.0):
            assert m.delta(e) >= delta_of(e) * (1 - 1e-10)

    def test_tradeoff_is_a_valid_curve(self, case):
        m, _ = case
        a = np.linspace(0.0, 1.0, 41)
        f = m.tradeoff(a)
        assert np.all((f >= 0) & (f <= 1 - a + 1e-12))
        assert np.all(np.diff(f) <= 1e-12)

    def test_rdp_non_decreasing_in_order(self, case):
        m, _ = case
        if "rdp" not in m.routes:
            pytest.skip("no RDP representation")
        r = m.rdp(np.array([1.01, 1.5, 2.0, 4.0, 16.0, 64.0]))
        assert np.all(r[1:] >= r[:-1] - 1e-12) and np.all(r >= 0)

    def test_auto_is_the_tightest_route_to_within_tol(self, case):
        m, _ = case
        if "rdp" not in m.routes:
            pytest.skip("no RDP representation")
        for d in (1e-4, 1e-8):
            assert m.epsilon(d) <= m.epsilon(d, via="rdp") * (1 + 1e-3) + 1e-12
