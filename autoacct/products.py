"""Matrix products computed on the calling thread.

OpenBLAS, the BLAS that numpy's wheels bundle, hands a product to its worker thread once the
product has about 2^19 multiply-adds (measured with the bundled OpenBLAS 0.3.31: 64 x 256
times 256 x 31 stays on the calling thread, 64 x 256 times 256 x 32 does not), and a dot (one
row times one column) once it has more than 1e4 terms (9,000 stay, 20,000 do not). The
worker then spins on another core for about 0.1 s after the product is done, so a query of a
tenth of a second costs about twice its CPU time. A product below the threshold runs on the
calling thread: :func:`matmul` cuts a product into pieces of at most ``MAX_TERMS``
multiply-adds, half the measured threshold, which is also OpenBLAS's default
(SMP_THRESHOLD_MIN 65536 times GEMM_MULTITHREAD_THRESHOLD 4), and a dot into pieces of at
most ``MAX_DOT`` terms. ``tests/test_products.py`` checks that the worker stays idle.
"""

from __future__ import annotations

import numpy as np

#: Multiply-adds of one piece of a product, and terms of one piece that is a dot (see the
#: module docstring).
MAX_TERMS = 1 << 18
MAX_DOT = 1 << 13


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b for 2-D float arrays a (m x k) and b (k x n), in pieces of at most MAX_TERMS
    multiply-adds: rows of a at a time, and where one row times b is larger than that,
    columns of b at a time and the inner dimension in parts whose products are summed."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    m, k = a.shape
    n = b.shape[1]
    # A part of the inner dimension, then columns, then rows, each as many as fit.
    k_part = min(max(k, 1), MAX_TERMS)
    cols = min(max(n, 1), max(1, MAX_TERMS // k_part))
    if cols == 1:
        # A piece of one column and (at the end of the rows) one row is a dot.
        k_part = min(k_part, MAX_DOT)
    rows = max(1, MAX_TERMS // (k_part * cols))
    if k_part >= k and cols >= n:
        out = np.empty((m, n))
        for i in range(0, m, rows):
            np.matmul(a[i:i + rows], b, out=out[i:i + rows])
        return out
    out = np.zeros((m, n))
    for k0 in range(0, k, k_part):
        for j in range(0, n, cols):
            bb = b[k0:k0 + k_part, j:j + cols]
            for i in range(0, m, rows):
                out[i:i + rows, j:j + cols] += np.matmul(a[i:i + rows, k0:k0 + k_part], bb)
    return out
