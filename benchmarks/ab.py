"""Before/after timing of two autoacct trees on the DP-SGD matrix and the k sweep, in one run.

    python benchmarks/ab.py OTHER_TREE [--rounds 5]

Each round runs one worker process per tree, alternately (A B A B ...), so that both
see the same machine load; a worker times every case as the best of several calls,
each on a freshly built mechanism (no cache shared between calls), in CPU time of the
calling thread, after a warm-up query. Printed: per case the median over rounds of each tree's best time and
the ratio this tree / OTHER_TREE. Not run in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CASES = [(0.01, 1.5, 10_000, 1e-5), (256 / 60000, 1.1, 14_040, 1e-5), (1e-3, 0.8, 100_000, 1e-5),
         (0.1, 2.0, 100_000, 1e-6), (0.01, 1.0, 1_000_000, 1e-6)]
CASES += [(0.01, 1.0, 10 ** e, 1e-5) for e in (1, 3, 5, 7)]
CALLS = 7


def _worker() -> None:
    from autoacct.zoo import Composition, Gaussian
    try:
        from autoacct.zoo import PoissonSubsample
    except ImportError:  # trees from before the subsampling package exported it from zoo
        from autoacct.zoo.subsampling import PoissonSubsample
    # Warm up (imports, FFT plans, first-use caches) on a tiny problem, as run.py does.
    Composition()([PoissonSubsample(0.2)(Gaussian(3.0))], [3]).epsilon_bounds(1e-3)
    out = {}
    for q, s, k, d in CASES:
        best = float("inf")
        for _ in range(CALLS):
            m = Composition()([PoissonSubsample(q)(Gaussian(s))], [k])
            t0 = time.thread_time()
            m.epsilon_bounds(d)
            best = min(best, time.thread_time() - t0)
        out[f"q={q:.4g} s={s:g} k={k:g} d={d:.0e}"] = best
    print(json.dumps(out))


def _run(tree: str) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    res = subprocess.run([sys.executable, __file__, "--worker"], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("other", nargs="?")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--worker", action="store_true")
    args = ap.parse_args()
    if args.worker:
        _worker()
        return 0
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    runs: dict[str, list[dict[str, float]]] = {"this": [], "other": []}
    for _ in range(args.rounds):
        runs["this"].append(_run(here))
        runs["other"].append(_run(args.other))
    print(f"{'case':38s} {'this ms':>9s} {'other ms':>9s} {'ratio':>6s}")
    for case in runs["this"][0]:
        a = statistics.median(r[case] for r in runs["this"]) * 1e3
        b = statistics.median(r[case] for r in runs["other"]) * 1e3
        print(f"{case:38s} {a:9.2f} {b:9.2f} {a / b:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
