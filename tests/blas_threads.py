"""CPU time the other threads of this process spend while a function runs: OpenBLAS's
worker thread, once a product large enough wakes it, spins for about 0.1 s
(see autoacct/products.py)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable


def thread_ticks() -> dict[str, int]:
    """CPU clock ticks (user + system) of each thread of this process, from /proc."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        out[tid] = int(fields[11]) + int(fields[12])
    return out


def ticks_beside(fn: Callable[[], object], min_ticks: int = 50) -> tuple[int, int]:
    """(ticks of the other threads, ticks of this one) while ``fn`` is called again and again
    until this thread has spent ``min_ticks`` clock ticks (a tick is 0.01 s on Linux)."""
    fn()
    # A worker woken before (by any BLAS call) stops spinning within 0.1 s.
    time.sleep(0.5)
    main = str(threading.get_native_id())
    before = thread_ticks()
    spent = 0
    while spent < min_ticks:
        fn()
        spent = thread_ticks()[main] - before[main]
    after = thread_ticks()
    others = sum(t - before.get(tid, 0) for tid, t in after.items() if tid != main)
    return others, spent
