"""What a training loop pays for asking the ledger often: the issue's requirement.

Runs 10,000 steps of ``Accountant.step_dpsgd(1.1, 0.01)`` and asks epsilon(1e-5) after every
100 steps (100 queries), against one query at the end of the same run. The requirement: the
queried loop costs at most 10 times the loop queried once. Both are timed warm (after a
query of a different run, so imports and one-off set-up are not counted), best of
``--repeat`` rounds, and reported two ways: whole loops (steps and queries) and queries
alone. ``--profile`` says where the queries' time goes, by the accountant's module.
Not part of the test suite.

    python benchmarks/accountant.py [--repeat 5] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from autoacct import Accountant

SIGMA, Q, STEPS, EVERY, DELTA = 1.1, 0.01, 10_000, 100, 1e-5


def loop(every: int) -> tuple[float, float, float]:
    """(seconds of the whole loop, seconds in queries, last epsilon), querying every ``every``
    steps and at the end."""
    acc = Accountant()
    eps, in_queries = 0.0, 0.0
    t0 = time.perf_counter()
    for i in range(1, STEPS + 1):
        acc.step_dpsgd(SIGMA, Q)
        if i % every == 0:
            t1 = time.perf_counter()
            eps = acc.epsilon(DELTA)
            in_queries += time.perf_counter() - t1
    return time.perf_counter() - t0, in_queries, eps


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


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="where the queries' time goes")
    args = ap.parse_args()
    Accountant().step_dpsgd(1.3, 0.02, 50).epsilon(1e-6)  # warm-up on another run
    once = min((loop(STEPS) for _ in range(args.repeat)), key=lambda r: r[0])
    often = min((loop(EVERY) for _ in range(args.repeat)), key=lambda r: r[0])
    assert once[2] == often[2]
    print(f"one query at the end: loop {once[0]:.3f} s, of which the query {once[1]:.4f} s "
          f"(epsilon = {once[2]:.6g})")
    print(f"a query every {EVERY} steps ({STEPS // EVERY} queries): loop {often[0]:.3f} s, "
          f"of which queries {often[1]:.3f} s ({often[1] / (STEPS // EVERY) * 1e3:.1f} ms each)")
    print(f"ratio, whole loops: {often[0] / once[0]:.1f} (requirement: <= 10)")
    print(f"ratio, queries only: {often[1] / once[1]:.1f}")
    if args.profile:
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


if __name__ == "__main__":
    main()
