"""Settings, draws and closed forms shared by the sweeps of the base mechanisms
(tests/zoo/test_mechanisms.py, test_mechanisms_rdp.py, test_mechanisms_edges.py).

A module using them imports ``warnings_are_errors`` too: an autouse fixture, so every test there
runs with warnings as errors except autoacct.AccuracyWarning (documented: bounds valid, wider
than asked).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import pytest
from closed_forms import rr_delta_closed
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from warning_policy import strict_warnings


def sweep(n: int) -> settings:
    """Hypothesis settings of a sweep: n examples, no deadline (accountant runs vary in time)."""
    return settings(max_examples=n, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def derandomised(n: int) -> settings:
    """Hypothesis settings of an exactness check: n examples drawn the same on every run."""
    return settings(max_examples=n, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


@pytest.fixture(autouse=True)
def warnings_are_errors() -> Iterator[None]:
    with strict_warnings():
        yield


def log_uniform(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(math.log10(lo), math.log10(hi)).map(lambda x: float(10.0 ** x))


SIGMAS = log_uniform(0.05, 1e4)
COUNTS = st.floats(0.0, 7.0).map(lambda x: int(round(10.0 ** x)))
DELTAS = log_uniform(1e-15, 0.5)


def laplace_delta_closed(b: float, eps: float) -> float:
    return max(0.0, -math.expm1((eps - 1.0 / b) / 2.0))


def laplace_eps_closed(b: float, delta: float) -> float:
    return max(0.0, 1.0 / b + 2.0 * math.log1p(-delta))


def approx_truth(eps0: float, d0: float, k: int) -> tuple[float, Callable[[float], float]]:
    """P(L = +inf) of the k-fold leaky RR and its profile: p_inf + (1 - p_inf) * RR_k(eps)."""
    p_inf = -math.expm1(k * math.log1p(-d0))
    return p_inf, lambda e: p_inf + (1 - p_inf) * rr_delta_closed(eps0, k, e)
