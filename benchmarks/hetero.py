"""Heterogeneous DP-SGD schedules: n distinct (q, sigma) steps through the PLD route, two trees.

    python benchmarks/hetero.py OTHER_TREE [--sizes 1000,3000,10000] [--rounds 2] [--seconds S]

The schedule is the benchmark's (``cases.hetero_steps``: q in [0.005, 0.02], sigma in
[0.8, 2.0], deterministically shuffled) composed once per step, asked eps(1e-5) bounds by
the "pld" route (the "auto" route falls back on the RDP route where the PLD route stops at
its budget, which is another benchmark). Each round runs one worker process per tree,
alternately (A B A B ...), so that both see the same machine load; a worker answers every
size once, in that one process, on a freshly built mechanism, after a warm-up query, and
times it in CPU time of the calling thread (and wall time). ``--seconds`` sets the time
budget of the queries (default: the library's, 10 s). Printed per size: the median over
rounds of each tree's CPU and wall seconds, the ratio this tree / OTHER_TREE (CPU), each
tree's bracket and the warning it gave, if any. Not run in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings


def _worker(sizes: list[int], seconds: float | None) -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from cases import HETERO_DELTA, hetero_steps

    import autoacct
    from autoacct import routes
    from autoacct.zoo import Composition, Gaussian, PoissonSubsample

    Composition()([PoissonSubsample(0.2)(Gaussian(3.0)), PoissonSubsample(0.1)(Gaussian(2.0))]).epsilon_bounds(1e-3)
    out = {}
    for n in sizes:
        m = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in hetero_steps(n)])
        with warnings.catch_warnings(record=True) as caught, autoacct.limits(seconds=seconds):
            warnings.simplefilter("always")
            c0, w0 = time.thread_time(), time.perf_counter()
            lo, up = routes.epsilon_bounds(m, HETERO_DELTA, "pld", 1e-3)
            cpu, wall = time.thread_time() - c0, time.perf_counter() - w0
        out[str(n)] = {"cpu": cpu, "wall": wall, "bounds": [lo, up],
                       "warning": str(caught[0].message)[:120] if caught else ""}
    print(json.dumps(out))


def _run(tree: str, sizes: str, seconds: float | None) -> dict[str, dict]:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    cmd = [sys.executable, __file__, "--worker", "--sizes", sizes]
    if seconds is not None:
        cmd += ["--seconds", str(seconds)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("other", nargs="?")
    ap.add_argument("--sizes", default="1000,3000,10000")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--worker", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.worker:
        _worker(sizes, args.seconds)
        return 0
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"this": here} | ({"other": args.other} if args.other else {})
    runs: dict[str, list[dict[str, dict]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            runs[name].append(_run(tree, args.sizes, args.seconds))
    for n in map(str, sizes):
        row = [f"n={n:>6s}"]
        cpu = {}
        for name in trees:
            cpu[name] = statistics.median(r[n]["cpu"] for r in runs[name])
            wall = statistics.median(r[n]["wall"] for r in runs[name])
            row.append(f"{name}: cpu {cpu[name]:7.2f} s wall {wall:7.2f} s")
        if "other" in cpu:
            row.append(f"ratio {cpu['this'] / cpu['other']:.2f}")
        print("  ".join(row))
        for name in trees:
            last = runs[name][-1][n]
            lo, up = last["bounds"]
            print(f"    {name}: [{lo:.6g}, {up:.6g}] {last['warning']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
