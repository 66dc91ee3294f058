"""Matrix products on the calling thread (autoacct/products.py).

Truth: the same products by ``np.einsum``, which sums on the calling thread without BLAS.
The thread tests count the CPU time of the process's other threads from /proc: OpenBLAS's
worker thread, once woken, spins for about 0.1 s.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from blas_threads import ticks_beside

from autoacct import dpsgd, products
from autoacct.pld.discretize import DiscretePLD
from autoacct.pld.lawcache import clear_caches
from autoacct.pld.mgf import log_mgfs


@pytest.mark.parametrize("shape", [(5, 3, 4), (3, 20, 2), (1, 50, 1), (9, 1, 9), (4, 6, 30)])
@pytest.mark.parametrize("max_terms", [1, 7, 64, 1 << 18])
def test_pieces_give_the_product(monkeypatch, shape, max_terms):
    """Cut into rows, columns and parts of the inner dimension (each piece of at most
    max_terms multiply-adds, or one term), the product is the whole one up to rounding."""
    monkeypatch.setattr(products, "MAX_TERMS", max_terms)
    m, k, n = shape
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    got = products.matmul(a, b)
    want = np.einsum("ij,jk->ik", a, b)
    assert got.shape == (m, n)
    scale = np.einsum("ij,jk->ik", np.abs(a), np.abs(b))
    assert np.all(np.abs(got - want) <= 1e-14 * k * scale)


@pytest.mark.parametrize("shape", [(1000, 256, 60), (64, 256, 170), (24, 100_000, 1), (2, 3, 300_000),
                                   (1, 50_000, 1), (33, 20_000, 1), (1, 300_000, 2)])
def test_pieces_stay_below_the_bounds(monkeypatch, shape):
    """No piece has more than MAX_TERMS multiply-adds, and no dot more than MAX_DOT terms."""
    seen = []
    real = np.matmul

    def spy(x, y, *args, **kwargs):
        seen.append((x.shape[0], x.shape[1], y.shape[1]))
        return real(x, y, *args, **kwargs)
    monkeypatch.setattr(products.np, "matmul", spy)
    m, k, n = shape
    a, b = np.ones((m, k)), np.ones((k, n))
    assert np.array_equal(products.matmul(a, b), np.full((m, n), float(k)))
    assert seen and max(r * i * c for r, i, c in seen) <= products.MAX_TERMS
    assert all(i <= products.MAX_DOT for r, i, c in seen if r == 1 and c == 1)


def _table() -> None:
    rng = np.random.default_rng(1)
    plds = [DiscretePLD(0.01, -100, rng.random(3000), 0.0) for _ in range(40)]
    log_mgfs(plds, np.linspace(-30.0, 30.0, 171))


def _dpsgd_query() -> None:
    # A sweep case (benchmarks/sweep.py) that spent a third of its CPU time in the worker.
    clear_caches()
    dpsgd(0.002741637020292904, 0.4187973184553338, 31211).epsilon_bounds(8.019891530102185e-12)


def _long_dot() -> None:
    for _ in range(100):
        products.matmul(np.ones((1, 200_000)), np.ones((200_000, 1)))


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")
@pytest.mark.parametrize("work", [_table, _dpsgd_query, _long_dot], ids=["log_mgfs", "dpsgd", "dot"])
def test_worker_thread_stays_idle(work):
    others, spent = ticks_beside(work)
    assert others <= 0.2 * spent, (others, spent)
