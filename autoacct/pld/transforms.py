"""Real FFTs of the composer's long rows (:mod:`compose`), written into memory kept from call
to call.

Rows of ROW_BY_ROW points or more are transformed one at a time, each into a given array
(:func:`workspace`): a fresh array's memory is mapped anew by the allocator on many calls and
each of its pages then faults. That made a row of 38,400 points cost 430 microseconds instead
of 140, 2,600 faults took a third of a 46 ms query (benchmarks/sweep.py's case 18), and a
process that fell into it spent 0.4-0.6 ms of a 4.5 ms query of 1e7 DP-SGD steps on them.

Below UNPLANNED points a row goes to the transforms behind scipy.fft.rfft and irfft
themselves (scipy's pocketfft module, which takes the destination), with scipy's arguments:
the same values bit for bit, and scipy's plans, kept for its last 16 sizes, which a ledger
asked again and again reuses (numpy.fft plans every call: 6-16% slower at 2^14-2^16 points).
From UNPLANNED points on, numpy.fft (numpy 2 writes into a given array): the same pocketfft
code, the same values bit for bit, and no plan kept (scipy's take 8-12 bytes a point, 40 MB
at 2^22 points, memory no budget sees: a mechanism asked at three deltas had grown by 1.1 GB
of plans for grid sizes it no longer used). Where neither writes into a given array (another
scipy, numpy before 2), each transform is made fresh and copied, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import fft as sfft


def _scipy_pocketfft() -> Any:
    """scipy's pocketfft module (private to scipy: scipy.fft.rfft(x) is r2c(x, (axis,), True,
    0, None, 1) and irfft(y, n) is c2r(y, (axis,), n, False, 2, None, 1), "backward" norm and
    one worker), or None where another scipy has none."""
    try:
        from scipy.fft._pocketfft import pypocketfft
    except ImportError:  # pragma: no cover - another scipy
        return None
    return pypocketfft


_SCIPY = _scipy_pocketfft()


def rfft_rows(rows: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Real FFT of every row (last axis): short rows together by scipy.fft, long ones (see
    ROW_BY_ROW) one at a time into the first entries of ``out`` (a 1-d complex array, see
    :func:`workspace`), or of a fresh array without it."""
    n = rows.shape[-1]
    if n < ROW_BY_ROW:
        return sfft.rfft(rows, axis=-1)
    flat = rows.reshape(-1, n)
    m = n // 2 + 1
    res = np.empty((flat.shape[0], m), dtype=complex) if out is None else out[:flat.shape[0] * m].reshape(-1, m)
    for i, row in enumerate(flat):
        _into(res[i], row, n, True)
    return res.reshape(rows.shape[:-1] + (m,))


def irfft_rows(spec: np.ndarray, n: int, out: np.ndarray | None = None) -> np.ndarray:
    """Inverse of :func:`rfft_rows` (rows of length n), long rows into ``out`` as there."""
    if n < ROW_BY_ROW:
        return sfft.irfft(spec, n=n, axis=-1)
    flat = spec.reshape(-1, spec.shape[-1])
    res = np.empty((flat.shape[0], n)) if out is None else out[:flat.shape[0] * n].reshape(-1, n)
    for i, row in enumerate(flat):
        _into(res[i], row, n, False)
    return res.reshape(spec.shape[:-1] + (n,))


def _into(dest: np.ndarray, x: np.ndarray, n: int, forward: bool) -> None:
    """dest = the real FFT of x (``forward``), or the inverse to n points of the half spectrum x."""
    x = np.ascontiguousarray(x)
    if n < UNPLANNED and _SCIPY is not None:
        if forward:
            _SCIPY.r2c(x, (0,), True, 0, dest, 1)
        else:
            _SCIPY.c2r(x, (0,), n, False, 2, dest, 1)
    elif _NUMPY_OUT:
        if forward:
            np.fft.rfft(x, out=dest)
        else:
            np.fft.irfft(x, n=n, out=dest)
    else:
        fresh: Callable[..., np.ndarray] = ((np.fft.rfft if n >= UNPLANNED else sfft.rfft) if forward
                                             else (np.fft.irfft if n >= UNPLANNED else sfft.irfft))
        dest[...] = fresh(x) if forward else fresh(x, n=n)


#: Whether numpy.fft writes into a given array (numpy 2).
_NUMPY_OUT = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


def workspace(name: str, size: int, dtype: type) -> np.ndarray:
    """A 1-d work array of at least ``size`` entries of ``dtype``, this thread's own, kept for
    the next call that asks by ``name`` (grown by doubling; any contents): one use at a time.
    Above _KEPT_POINTS entries a fresh array, not kept: no budget sees memory kept past a query."""
    if size > _KEPT_POINTS:
        return np.empty(size, dtype=dtype)
    kept: dict[str, np.ndarray] = _WORK.__dict__
    buf = kept.get(name)
    if buf is None or buf.size < size:
        buf = kept[name] = np.empty(min(max(size, 2 * (0 if buf is None else buf.size)), _KEPT_POINTS), dtype=dtype)
    return buf


_WORK = threading.local()
#: Most entries of one array :func:`workspace` keeps (a 2^19-point window's: 4-8 MB).
_KEPT_POINTS = 1 << 19
#: Rows at least this long are transformed one at a time: batched transforms of long rows
#: take working buffers that do not stay in cache and are freshly mapped on every call.
ROW_BY_ROW = 1 << 14
#: Rows at least this long are transformed by numpy.fft, which keeps no plans.
UNPLANNED = 1 << 18
