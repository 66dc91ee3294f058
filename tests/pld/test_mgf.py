"""log E[e^{theta L}] tables of discrete PLDs (autoacct.pld.mgf)."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from scipy.special import logsumexp

from autoacct.pld import mgf
from autoacct.pld.discretize import DiscretePLD
from autoacct.pld.mgf import log_mgfs, same_lattice


def _direct(pld: DiscretePLD, theta: np.ndarray) -> np.ndarray:
    """log sum_i w_i e^{theta x_i} term by term (scipy's logsumexp)."""
    live = pld.masses > 0
    return np.array([logsumexp(t * pld.losses[live], b=pld.masses[live]) for t in theta])


@pytest.mark.parametrize("n, h", [(3, 0.5), (700, 1e-3), (5000, 2e-5)])
def test_log_mgfs_against_the_sum_term_by_term_and_again(n, h):
    # Block sums against a table e^{-rate c}, made in reused memory until its rate vector has
    # been asked for a few times, then kept: equal to the direct sums within rounding, and the
    # same values when asked again.
    rng = np.random.default_rng(n)
    a = DiscretePLD(h, -n // 3, rng.random(n) * 1e-3, 0.0)
    b = DiscretePLD(h, 7, rng.random(n // 2 + 1), 0.0)
    theta = np.array([-40.0, -1.5, 0.0, 0.25, 3.0, 55.0])
    first = log_mgfs([a, b], theta)
    for row, pld in zip(first, (a, b)):
        assert np.allclose(row, _direct(pld, theta), rtol=1e-12, atol=1e-12)
    assert np.array_equal(log_mgfs([a, b], theta), first)
    rate = (np.abs(theta[theta >= 0]) * h).tobytes()
    tables = [mgf._table_for(rate) for _ in range(mgf._KEEP_ASKED + 1)]
    assert tables[-1] is tables[-2] and not tables[-1].flags.writeable
    assert tables[-1].shape[0] == mgf._MGF_BLOCK and np.array_equal(tables[-1], mgf._table(rate))
    assert np.array_equal(log_mgfs([a, b], theta), first)


def test_a_table_asked_for_once_is_not_kept_and_has_the_kept_values():
    # A new lattice's rate vector, asked once or twice in a query, is made in memory reused
    # from call to call (a kept table took fresh memory, whose page faults cost more than it).
    rates = np.logspace(-5.0, -1.0, 37) * (1.0 + np.random.default_rng(11).random())
    rate = rates.tobytes()
    first = mgf._table_for(rate).copy()
    assert rate not in mgf._TABLES and first.shape == (mgf._MGF_BLOCK, rates.size)
    for _ in range(mgf._KEEP_ASKED - 1):
        table = mgf._table_for(rate)
    assert rate in mgf._TABLES and not table.flags.writeable and np.array_equal(table, first)


def test_table_of_exponentials_against_mpmath():
    # Each entry e^{-rate c} is a product of two exponentials: within the rounding of its
    # argument x = rate c (about x ulps, as for one exponential) plus a few ulps, against
    # 100-bit mpmath; entries below the normal range stay below it.
    rates = np.concatenate(([0.0], np.logspace(-6.0, 0.5, 23)))
    table = mgf._table(rates.tobytes())
    u = np.finfo(float).eps
    with mpmath.workprec(100):
        for c in range(0, mgf._MGF_BLOCK, 5):
            for r, rate in enumerate(rates):
                x = mpmath.mpf(float(rate)) * c
                exact = mpmath.exp(-x)
                if exact < mpmath.mpf(2.0) ** -1000:
                    assert table[c, r] < 2.0 ** -990
                    continue
                assert abs(float((table[c, r] - exact) / exact)) <= (float(x) + 4.0) * u


def test_same_lattice_takes_rounding_not_another_spacing():
    # A coarse lattice made as 7 (31 h) and as 217 h: one lattice, up to an ulp; a spacing
    # 1e-9 away is another.
    h = 8.232187133739626e-06
    a = DiscretePLD(7 * (31 * h), 0, np.array([0.5, 0.5]), 0.0)
    b = DiscretePLD(217 * h, 0, np.array([0.25, 0.75]), 0.0)
    assert a.h != b.h and same_lattice(a.h, b.h)
    assert np.all(np.isfinite(log_mgfs([a, b], np.array([-1.0, 0.0, 2.0]))))
    assert not same_lattice(h, h * (1 + 1e-9))
    with pytest.raises(ValueError):
        log_mgfs([a, DiscretePLD(217 * h * (1 + 1e-9), 0, np.ones(1), 0.0)], np.array([1.0]))


@pytest.mark.parametrize("n, h, start", [(700, 1e-3, -300), (5000, 2e-3, -4000), (40, 0.7, 3)])
def test_log_mgf_rounding_bounds_the_error_both_ways(n, h, start):
    # |log_mgfs - exact| <= mgf.log_mgf_rounding, against 40-digit mpmath from the exact doubles
    # (positions (start + i) h exact), at exponents of both signs up to a few hundred.
    rng = np.random.default_rng(n)
    pld = DiscretePLD(h, start, rng.random(n) ** 4, 0.0)
    theta = np.array([-300.0, -31.6, -2.5, 0.0, 0.7, 17.8, 150.0])
    values = log_mgfs([pld], theta)[0]
    bound = mgf.log_mgf_rounding(pld, theta, values)
    with mpmath.workdps(40):
        x = [(start + i) * mpmath.mpf(h) for i in range(n)]
        for t, v, b in zip(theta, values, bound):
            exact = mpmath.log(mpmath.fsum(mpmath.mpf(float(w)) * mpmath.exp(mpmath.mpf(t) * xi)
                                           for xi, w in zip(x, pld.masses)))
            assert abs(mpmath.mpf(float(v)) - exact) <= b, (t, float(v - exact), b)


def test_a_law_without_finite_mass_keeps_its_row_and_the_others_theirs():
    # Rows of laws with mass are written among a law without any (row -inf), each equal to
    # its own row computed alone and to the sum term by term.
    rng = np.random.default_rng(5)
    h = 1e-3
    a = DiscretePLD(h, -40, rng.random(300), 0.0)
    empty = DiscretePLD(h, 0, np.zeros(4), 1.0)
    b = DiscretePLD(h, 12, rng.random(700) * 1e-2, 0.0)
    theta = np.array([-7.0, -0.5, 0.0, 2.0, 30.0])
    rows = log_mgfs([a, empty, b], theta)
    assert np.all(rows[1] == -np.inf)
    for row, pld in ((rows[0], a), (rows[2], b)):
        assert np.array_equal(row, log_mgfs([pld], theta)[0])
        assert np.allclose(row, _direct(pld, theta), rtol=1e-12, atol=1e-12)
