"""What a training loop pays for asking the ledger often: the issue's requirement.

Runs 10,000 steps of ``Accountant.step_dpsgd(1.1, 0.01)`` and asks epsilon(1e-5) after every
100 steps (100 queries), against one query at the end of the same run. The requirement: the
queried loop costs at most 10 times the loop queried once. Both are timed warm (after a
query of a different run, so imports and one-off set-up are not counted), each figure the
best of ``--repeat`` rounds, in wall and in CPU seconds of this process (the machine is
shared: the CPU figures move less with the load of other jobs), and reported two ways:
whole loops (steps and queries) and queries alone. ``--profile`` says where the queries'
time goes, by the accountant's module. ``--what-if`` measures what caching can give:
how many of the grids the queries discretise on repeat, and the loop's ratio if the grid
range no longer followed the exact count and every discretised law and its cumulant table
were cached (an experiment on patched internals: its answers differ from the library's).
Not part of the test suite.

    python benchmarks/accountant.py [--repeat 5] [--profile] [--what-if]
"""

from __future__ import annotations

import argparse
import cProfile
import math
import pstats
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, NamedTuple
from unittest import mock

import numpy as np

import autoacct.pld.accountant as pld_accountant
import autoacct.pld.cumulants as pld_cumulants
from autoacct import Accountant

SIGMA, Q, STEPS, EVERY, DELTA = 1.1, 0.01, 10_000, 100, 1e-5


class Run(NamedTuple):
    """Seconds of one loop: whole (wall, CPU), in queries (wall, CPU); and the last epsilon."""

    wall: float
    cpu: float
    q_wall: float
    q_cpu: float
    eps: float


def loop(every: int) -> Run:
    """One loop of STEPS steps, querying every ``every`` steps and at the end."""
    pld_accountant.clear_caches()  # a training run starts in a fresh process
    acc = Accountant()
    eps, q_wall, q_cpu = 0.0, 0.0, 0.0
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(1, STEPS + 1):
        acc.step_dpsgd(SIGMA, Q)
        if i % every == 0:
            t1, c1 = time.perf_counter(), time.process_time()
            eps = acc.epsilon(DELTA)
            q_wall += time.perf_counter() - t1
            q_cpu += time.process_time() - c1
    return Run(time.perf_counter() - t0, time.process_time() - c0, q_wall, q_cpu, eps)


def best_of(runs: list[Run]) -> Run:
    """Each figure's best over ``runs`` (loops of one kind, which give the same epsilon)."""
    assert len({r.eps for r in runs}) == 1
    return Run(min(r.wall for r in runs), min(r.cpu for r in runs), min(r.q_wall for r in runs),
               min(r.q_cpu for r in runs), runs[0].eps)


def best(every: int, repeat: int) -> Run:
    """The best of ``repeat`` loops querying every ``every`` steps."""
    return best_of([loop(every) for _ in range(repeat)])


def report(once: Run, often: Run) -> None:
    print(f"one query at the end: loop {once.wall:.3f} s wall / {once.cpu:.3f} s CPU, of which "
          f"the query {once.q_wall * 1e3:.1f} / {once.q_cpu * 1e3:.1f} ms (epsilon = {once.eps:.6g})")
    n = STEPS // EVERY
    print(f"a query every {EVERY} steps ({n} queries): loop {often.wall:.3f} s wall / {often.cpu:.3f} s "
          f"CPU, of which queries {often.q_wall:.3f} / {often.q_cpu:.3f} s "
          f"({often.q_wall / n * 1e3:.1f} / {often.q_cpu / n * 1e3:.1f} ms each)")
    print(f"ratio, whole loops: {often.wall / once.wall:.1f} wall, {often.cpu / once.cpu:.1f} CPU "
          f"(requirement: <= 10)")
    print(f"ratio, queries only: {often.q_wall / once.q_wall:.0f} wall, {often.q_cpu / once.q_cpu:.0f} CPU")


def by_module(stats: pstats.Stats) -> dict[str, float]:
    """Seconds spent in each autoacct module (own time of its functions), and elsewhere."""
    out: dict[str, float] = {}
    for (path, _, _), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        key = path.split("autoacct/", 1)[1] if "autoacct/" in path else "numpy, scipy, builtins"
        out[key] = out.get(key, 0.0) + own
    return out


#: The stages of a PLD query: (module, function) -> what it does; their cumulative times.
STAGES = {("pld/accountant.py", "components"): "discretising the law (upper and lower PLDs)",
          ("pld/compose.py", "compose"): "FFT composition (spectrum powers, windows)",
          ("pld/cumulants.py", "choose_tilt"): "choosing the exponential tilt",
          ("pld/profiles.py", "epsilon"): "solving eps(delta) on the composed profiles",
          ("accountant.py", "step_dpsgd"): "recording the steps (Accountant.step_dpsgd)"}


def by_stage(stats: pstats.Stats) -> dict[str, float]:
    """Cumulative seconds of each stage of :data:`STAGES` (a function's outermost calls)."""
    out: dict[str, float] = {}
    for (path, _, name), (_, _, _, cum, _) in stats.stats.items():  # type: ignore[attr-defined]
        for (module, func), what in STAGES.items():
            if path.endswith("autoacct/" + module) and name == func:
                out[what] = out.get(what, 0.0) + cum
    return out


def profile() -> None:
    prof = cProfile.Profile()
    prof.enable()
    loop(EVERY)
    prof.disable()
    stats = pstats.Stats(prof)
    spent = by_module(stats)
    total = sum(spent.values())
    print(f"where the queried loop's {total:.2f} s go (profiled), by stage (cumulative):")
    for what, sec in sorted(by_stage(stats).items(), key=lambda kv: -kv[1]):
        print(f"  {what:50s} {sec:6.3f} s  {100 * sec / total:4.1f}%")
    print("by module (own time):")
    for key, sec in sorted(spent.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  {key:50s} {sec:6.3f} s  {100 * sec / total:4.1f}%")


# ----- what caching could give -------------------------------------------------------------

def grid_keys() -> tuple[int, int, int]:
    """(grids discretised on, distinct (law, spacing, index range), distinct (law, spacing))
    over the queried loop: a cache of discretised laws can hit only on a repeated range."""
    seen: list[tuple[Any, ...]] = []
    real = pld_accountant.index_range

    def recording(loss: Any, h: float, eta: float) -> tuple[int, int]:
        out = real(loss, h, eta)
        seen.append((loss.key, h, out))
        return out

    with mock.patch.object(pld_accountant, "index_range", recording):
        loop(EVERY)
    return len(seen), len(set(seen)), len({s[:2] for s in seen})


def _once(make: Callable[[], Any]) -> Callable[[], Any]:
    """``make``, called at most once: later calls return its first result."""
    made: list[Any] = []

    def get() -> Any:
        if not made:
            made.append(make())
        return made[0]
    return get


@contextmanager
def cached_and_bucketed() -> Iterator[dict[tuple[Any, ...], Any]]:
    """The library with every discretised law (by law, spacing and range) and every table of
    log-MGFs (by the laws' identity and the exponents) kept for the whole loop, and the tail
    mass per law 1e-12 / (4 k) taken at k rounded up to a power of 2, so that the ranges
    repeat from count to count. Answers change (a wider range); only the time is of interest."""
    memo: dict[tuple[Any, ...], Any] = {}

    def keeping(name: str) -> Callable[..., Any]:
        real = getattr(pld_accountant, name)

        def kept(loss: Any, h: float, j_lo: int, j_hi: int) -> Any:
            key = (name, loss.key, h, j_lo, j_hi)
            if key not in memo:
                out = real(loss, h, j_lo, j_hi)
                if name == "discretize_lazy":  # the lower PLD, made once when first read
                    upper, make = out
                    out = upper, _once(make)
                memo[key] = out
            return memo[key]
        return kept

    real_mgfs = pld_cumulants.log_mgfs

    def mgfs(plds: Any, theta: np.ndarray) -> np.ndarray:
        key = ("mgf", tuple(id(p) for p in plds), np.asarray(theta, dtype=float).tobytes())
        if key not in memo:  # (the laws are kept too, so that their ids stay theirs)
            memo[key] = real_mgfs(plds, theta), list(plds)
        return memo[key][0].copy()

    def eta(self: Any, log_eta: float) -> float:
        k_tot = sum(k for _, _, k in self._parts)
        return min(math.exp(log_eta), 1e-12) / (4.0 * 2.0 ** math.ceil(math.log2(k_tot)))

    with ExitStack() as stack:
        for name in ("discretize", "discretize_lazy", "discretize_upper"):
            stack.enter_context(mock.patch.object(pld_accountant, name, keeping(name)))
        stack.enter_context(mock.patch.object(pld_cumulants, "log_mgfs", mgfs))
        stack.enter_context(mock.patch.object(pld_accountant.FFTAccountant, "_eta", eta))
        yield memo


def what_if(repeat: int) -> None:
    n, ranges, spacings = grid_keys()
    print(f"the queried loop discretises {n} times, on {spacings} (law, spacing) pairs but {ranges} "
          f"distinct (law, spacing, range): a cache of discretised laws hits {n - ranges} times")
    # The library as is and patched, in turns, so that both see the same machine load.
    runs: dict[tuple[bool, int], list[Run]] = {(p, e): [] for p in (False, True) for e in (STEPS, EVERY)}
    for _ in range(repeat):
        for patched, every in runs:
            with cached_and_bucketed() if patched else ExitStack():  # fresh: one training run
                runs[patched, every].append(loop(every))
    for patched in (False, True):
        print("if ranges followed the count by powers of 2 and every discretised law and log-MGF "
              "table were cached (answers change):" if patched else "the library as is, in turns:")
        report(best_of(runs[patched, STEPS]), best_of(runs[patched, EVERY]))


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="where the queries' time goes")
    ap.add_argument("--what-if", action="store_true", help="what a cache of discretised laws could give")
    args = ap.parse_args()
    Accountant().step_dpsgd(1.3, 0.02, 50).epsilon(1e-6)  # warm-up on another run
    once, often = best(STEPS, args.repeat), best(EVERY, args.repeat)
    assert once.eps == often.eps
    report(once, often)
    if args.profile:
        profile()
    if args.what_if:
        what_if(args.repeat)


if __name__ == "__main__":
    main()
