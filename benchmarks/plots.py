"""Time the plots of a DP-SGD run: each plot in a fresh process, cold (its first call).

    python benchmarks/plots.py                  # this tree
    python benchmarks/plots.py ../other-tree    # another checkout, for a before/after

Each case runs ``--rounds`` times (default 3), in a new Python process whose
``PYTHONPATH`` is the tree; the medians are printed. "import" is loading
matplotlib (Agg) and autoacct.plotting, "plot" the plotting call (the
accountant's queries and the legend's layout), "save" writing a 100 dpi PNG
(matplotlib's drawing). The last row times the ``autoacct plot`` command end
to end (wall clock, interpreter start-up included).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

RUN = "dpsgd(0.01, 1.1, 10000)"
CASES = {
    "plot_tradeoff(run)": f"plot_tradeoff({RUN})",
    "plot_privacy_profile(run)": f"plot_privacy_profile({RUN})",
    "plot_rdp(run)": f"plot_rdp({RUN})",
    "plot_tradeoff(run, log-log)": f"plot_tradeoff({RUN}, xscale='log', yscale='log')",
    "plot_privacy_profile(3 runs)": ("plot_privacy_profile(dpsgd(0.01, 1.1, 10000), "
                                     "dpsgd(0.01, 1.1, 1000, sampling='without-replacement'), "
                                     "dpsgd(0.01, 2.0, 1000))"),
}

WORKER = """
import json, sys, time, warnings
t0 = time.perf_counter()
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from autoacct import plotting
from autoacct.dpsgd import dpsgd
t1 = time.perf_counter()
names = {k: getattr(plotting, k) for k in ("plot_tradeoff", "plot_privacy_profile", "plot_rdp")}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        ax = eval(sys.argv[1], {**names, "dpsgd": dpsgd})
    except TypeError as exc:  # an option this tree does not have
        print(json.dumps({"error": str(exc)}))
        raise SystemExit(0)
t2 = time.perf_counter()
ax.figure.savefig(sys.argv[2], dpi=100)
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "plot": t2 - t1, "save": t3 - t2,
                  "warnings": sorted({type(w.message).__name__ for w in caught})}))
"""


def _worker(tree: str, call: str, out: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": tree, "OPENBLAS_NUM_THREADS": "1"}
    res = subprocess.run([sys.executable, "-c", WORKER, call, out], env=env, cwd=os.path.dirname(out),
                         capture_output=True, text=True, check=True)  # cwd: not the tree we run from
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


def _cli(tree: str, out: str) -> float:
    env = {**os.environ, "PYTHONPATH": tree, "OPENBLAS_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "autoacct", "plot", "-q", "0.01", "-k", "10000",
                    "-s", "1.1", "-o", out], env=env, cwd=os.path.dirname(out), capture_output=True, check=True)
    return time.perf_counter() - t0


def _origin(tree: str) -> str:
    env = {**os.environ, "PYTHONPATH": tree}
    res = subprocess.run([sys.executable, "-c", "import autoacct; print(autoacct.__file__)"], env=env,
                         cwd=tempfile.gettempdir(), capture_output=True, text=True, check=True)
    return res.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tree = os.path.abspath(args.tree)
    print(f"tree {tree}, median of {args.rounds} fresh processes, seconds")
    print(f"python -c 'import autoacct' in it loads {_origin(tree)}")
    print(f"{'case':32} {'import':>7} {'plot':>7} {'save':>7} {'plot+save':>9}  warnings")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "figure.png")
        for name, call in CASES.items():
            runs = [_worker(tree, call, out) for _ in range(args.rounds)]
            if "error" in runs[0]:
                print(f"{name:32} not available: {runs[0]['error']}")
                continue
            med = {k: statistics.median(float(r[k]) for r in runs)  # type: ignore[arg-type]
                   for k in ("import", "plot", "save")}
            total = statistics.median(float(r["plot"]) + float(r["save"]) for r in runs)  # type: ignore[arg-type]
            seen = sorted({w for r in runs for w in r["warnings"]})  # type: ignore[attr-defined]
            print(f"{name:32} {med['import']:7.3f} {med['plot']:7.3f} {med['save']:7.3f} {total:9.3f}  "
                  f"{', '.join(seen) or '-'}")
        cli = statistics.median(_cli(tree, out) for _ in range(args.rounds))
        print(f"{'autoacct plot (whole command)':32} {'':7} {'':7} {'':7} {cli:9.3f}")


if __name__ == "__main__":
    main()
