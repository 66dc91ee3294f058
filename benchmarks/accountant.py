"""What a training loop pays for asking the ledger often: the issue's requirement.

Runs 10,000 steps of ``Accountant.step_dpsgd(1.1, 0.01)`` and asks epsilon(1e-5) after every
100 steps (100 queries), against one query at the end of the same run. The requirement: the
queried loop costs at most 10 times the loop queried once. Both are timed warm (after a
query of a different run, so imports and one-off set-up are not counted) but with the
accountant's process-wide caches emptied at the start of each loop (a training run starts
in a fresh process: the loop asked once pays for its discretisations, the queried loop only
for those its counts do not share), each figure the best of ``--repeat`` rounds, in wall and
in CPU seconds of this process (the machine is shared: the CPU figures move less with the
load of other jobs), and reported two ways: whole loops (steps and queries) and queries
alone. ``--profile`` says where the queries' time goes, by the accountant's module;
``--cache`` what the cache of discretised laws does over the queried loop. Not part of the
test suite.

    python benchmarks/accountant.py [--repeat 5] [--profile] [--cache]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from typing import NamedTuple

import autoacct.pld.lawcache as pld_lawcache
from autoacct import Accountant
from autoacct.pld.lawcache import law_cache

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
    pld_lawcache.clear_caches()  # a training run starts in a fresh process
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


# ----- the caches ----------------------------------------------------------------------------

def cache_report() -> None:
    """What the process-wide cache of discretised laws does over one queried loop."""
    pld_lawcache.clear_caches()
    cache = law_cache()
    hits, misses = cache.hits, cache.misses
    loop(EVERY)  # (clears the caches again at its start)
    print(f"the queried loop asks for {cache.hits + cache.misses - hits - misses} discretised laws: "
          f"{cache.hits - hits} found in the cache, {cache.misses - misses} discretised; the cache "
          f"holds {len(cache)} laws, {cache.nbytes / 1e6:.2f} MB (cap {cache.max_bytes / 1e6:.0f} MB)")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="where the queries' time goes")
    ap.add_argument("--cache", action="store_true", help="what the cache of discretised laws does")
    args = ap.parse_args()
    Accountant().step_dpsgd(1.3, 0.02, 50).epsilon(1e-6)  # warm-up on another run
    once, often = best(STEPS, args.repeat), best(EVERY, args.repeat)
    assert once.eps == often.eps
    report(once, often)
    if args.profile:
        profile()
    if args.cache:
        cache_report()


if __name__ == "__main__":
    main()
