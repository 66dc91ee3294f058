"""Random allocation (balls-in-bins) epochs at small delta: the public eps(delta) bracket, two trees.

    python benchmarks/allocation.py [OTHER_TREE] [--json FILE]

Scans one epoch ``RandomAllocation(t)(Gaussian(sigma))`` for t in {10, 100, 1e3, 1e4}, sigma in
{0.8, 1, 2, 5} and delta in {1e-5, 1e-8, 1e-10} (48 cases): the public bracket
``epsilon_bounds(delta)`` at the default tol, its relative width, the CPU seconds of that query
in a fresh process (after a warm-up query on another epoch), and whether it warned
(AccuracyWarning). An epoch's upper and lower laws bound its own pair
(``Mechanism.brackets_own_pair``), so every bracket wider than tol should warn. With OTHER_TREE
each case runs in both trees, alternately. Printed at the end, per tree: the cases wider than
tol, those of them without a warning, the warnings within tol, the median width and the total
CPU seconds. Not run in CI.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
import warnings

from trees import parse_or_work, run_in_tree, trees


def _cases() -> list[tuple[int, float, float]]:
    return list(itertools.product((10, 100, 1000, 10_000), (0.8, 1.0, 2.0, 5.0), (1e-5, 1e-8, 1e-10)))


def _worker(case: list) -> None:
    from autoacct import AccuracyWarning
    from autoacct.zoo import Gaussian, RandomAllocation

    t, sigma, delta = case
    RandomAllocation(7)(Gaussian(1.5)).epsilon_bounds(1e-6)
    m = RandomAllocation(int(t))(Gaussian(sigma))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c0 = time.thread_time()
        lo, up = (float(v) for v in m.epsilon_bounds(delta))
        cpu = time.thread_time() - c0
    print(json.dumps({"cpu": cpu, "bounds": [lo, up],
                      "warned": any(issubclass(w.category, AccuracyWarning) for w in caught)}))


def _width(lo: float, up: float) -> float:
    return (up - lo) / up if up > 0 else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    args = parse_or_work(ap, _worker)
    if args is None:
        return 0
    compared = trees(args.other)
    rows: dict[str, list[dict]] = {name: [] for name in compared}
    for case in _cases():
        line = [" ".join(f"{x:g}" for x in case)]
        for name, tree in compared.items():
            got = run_in_tree(__file__, tree, case) | {"case": case}
            rows[name].append(got)
            lo, up = got["bounds"]
            line.append(f"{name} [{lo:.6g}, {up:.6g}] width {_width(lo, up):.2e} {got['cpu']:.2f} s"
                        + (" warned" if got["warned"] else ""))
        print(" | ".join(line), flush=True)
    for name, got in rows.items():
        widths = [_width(*r["bounds"]) for r in got]
        over = [r for r, w in zip(got, widths) if w > 1e-3]
        print(f"{name}: {len(over)} of {len(got)} wider than tol, {sum(not r['warned'] for r in over)} of them "
              f"without a warning, {sum(r['warned'] for r, w in zip(got, widths) if w <= 1e-3)} warned within tol; "
              f"median width {statistics.median(widths):.2e}; {sum(r['cpu'] for r in got):.1f} CPU s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
