"""Real FFTs of the composer's long rows (autoacct/pld/transforms.py): written into given
memory, by scipy's own transforms below UNPLANNED points and numpy.fft above, with the same
values bit for bit as scipy.fft's fresh arrays."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import fft as sfft

from autoacct.pld import transforms
from autoacct.pld.transforms import irfft_rows, rfft_rows, workspace


@pytest.mark.parametrize("n", [2**14, 24_300, 38_400, 2**18 + 2**12])
@pytest.mark.parametrize("count", [1, 2])
def test_transforms_into_kept_memory_are_scipys_bit_for_bit(n, count):
    rows = np.random.default_rng(n + count).random((count, n))
    spec = rfft_rows(rows, workspace("test-spectrum", count * (n // 2 + 1), complex))
    assert np.array_equal(spec, sfft.rfft(rows, axis=-1))
    assert np.array_equal(rfft_rows(rows), spec)
    back = irfft_rows(spec, n, workspace("test-inverse", count * n, float))
    assert np.array_equal(back, sfft.irfft(spec, n=n, axis=-1))
    assert np.allclose(back, rows, rtol=0, atol=1e-12)


def test_a_long_row_is_written_where_it_is_asked():
    n = 2**15
    out = workspace("test-spectrum", n // 2 + 1, complex)
    spec = rfft_rows(np.ones((1, n)), out)
    assert np.shares_memory(spec, out) and spec[0, 0] == n and not np.any(spec[0, 1:])


def test_workspace_is_kept_per_name_and_thread_up_to_its_cap():
    a = workspace("test-work", 1000, float)
    assert workspace("test-work", 500, float) is a
    b = workspace("test-work", 3000, float)
    assert b is not a and b.size >= 3000 and workspace("test-work", 10, float) is b
    huge = workspace("test-work", transforms._KEPT_POINTS + 1, float)
    assert huge.size == transforms._KEPT_POINTS + 1 and workspace("test-work", 10, float) is b
