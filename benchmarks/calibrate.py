"""Calibration at extreme budgets: autoacct.calibrate_dpsgd against dp_accounting (issue 18, item 3).

The grid: eps in {0.01, 0.1, 1, 10, 50, 100}, q in {1e-5, 1e-3, 0.1}, k in {10, 1e4, 1e6},
delta = 1e-5 (54 cases), Poisson-sampled DP-SGD under add/remove neighbouring. For each case:

* autoacct: ``calibrate_dpsgd_result(eps, delta, q, k)`` (the noise multiplier), its wall time,
  its answer, and the time of one ``dpsgd(q, sigma, k).epsilon(delta)`` at that answer (a fresh
  mechanism, in the same warm process, its caches of discretised laws emptied), and their ratio;
* dp_accounting: ``mechanism_calibration.calibrate_dp_mechanism(PLDAccountant, event, eps, delta)``
  at its defaults (bracket from [0, 1], tol 1e-6), the event being
  ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)), k)``; its time and answer.

Each (case, library) runs in a fresh worker process (warmed up on a tiny problem first) with a
time cap, so a case that does not finish is reported as a timeout, not waited for. Cases with
no answer (every sigma meets the budget, or none does) report the library's error message.

    python benchmarks/calibrate.py                      # the whole grid (~30 min with the default cap)
    python benchmarks/calibrate.py --subset             # six representative cases
    python benchmarks/calibrate.py --cases 0,17,40 --cap 120 --json out.json
    python benchmarks/calibrate.py --libs autoacct --json a.json       # autoacct only
    python benchmarks/calibrate.py --libs dp_accounting --json d.json  # dp_accounting only
    python benchmarks/calibrate.py --table a.json d.json               # one table from both
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time

EPSILONS = (0.01, 0.1, 1.0, 10.0, 50.0, 100.0)
RATES = (1e-5, 1e-3, 0.1)
STEPS = (10, 10_000, 1_000_000)
DELTA = 1e-5
#: The grid, in the order eps, q, k (case i is GRID[i]).
GRID = [dict(eps=e, q=q, k=k) for e, q, k in itertools.product(EPSILONS, RATES, STEPS)]
#: --subset: the issue's two slow shapes (eps 50 at q 1e-3; q 1e-5, k 1e4), the largest ratios
#: of the first run, and a cheap case.
SUBSET = [GRID.index(c) for c in (dict(eps=50.0, q=1e-3, k=10), dict(eps=50.0, q=1e-3, k=10_000),
                                  dict(eps=1.0, q=1e-5, k=10_000), dict(eps=100.0, q=1e-3, k=10),
                                  dict(eps=0.01, q=0.1, k=1_000_000), dict(eps=10.0, q=0.1, k=10_000))]


# ----- worker side ---------------------------------------------------------------------------

def _autoacct(case: dict) -> dict:
    from autoacct.calibrators import calibrate_dpsgd_result
    from autoacct.dpsgd import dpsgd
    from autoacct.pld.lawcache import clear_caches
    calibrate_dpsgd_result(1.0, DELTA, 0.01, 100)  # warm up: imports, caches of constants
    t0 = time.perf_counter()
    try:
        res = calibrate_dpsgd_result(case["eps"], DELTA, case["q"], case["k"])
    except ValueError as exc:
        return {"time": time.perf_counter() - t0, "error": f"{type(exc).__name__}: {exc}"}
    t_cal = time.perf_counter() - t0
    # The query a user pays for: the process-wide caches of discretised laws emptied first.
    # They hold what the calibration made at its answer, which made the query up to 8 times
    # faster than a fresh one (eps 50, q 1e-3, k 10: 0.034 s against 0.27 s).
    clear_caches()
    t0 = time.perf_counter()
    eps = float(dpsgd(sample_rate=case["q"], noise_multiplier=res.value, steps=case["k"]).epsilon(DELTA))
    t_query = time.perf_counter() - t0
    return {"time": t_cal, "sigma": res.value, "epsilon": eps, "epsilon_lower": res.epsilon_lower,
            "gap": res.optimality_gap, "certified": res.certified, "evaluations": res.evaluations,
            "query_time": t_query}


def _dp_accounting(case: dict) -> dict:
    import dp_accounting
    from dp_accounting import mechanism_calibration
    from dp_accounting.pld import pld_privacy_accountant

    def run(eps: float, q: float, k: int) -> float:
        def ev(sigma: float) -> dp_accounting.DpEvent:
            return dp_accounting.SelfComposedDpEvent(
                dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), k)
        return mechanism_calibration.calibrate_dp_mechanism(
            pld_privacy_accountant.PLDAccountant, ev, eps, DELTA)

    run(1.0, 0.01, 100)  # warm up
    t0 = time.perf_counter()
    try:
        sigma = run(case["eps"], case["q"], case["k"])
    except Exception as exc:  # noqa: BLE001 -- reported, not hidden
        return {"time": time.perf_counter() - t0, "error": f"{type(exc).__name__}: {exc}"[:300]}
    return {"time": time.perf_counter() - t0, "sigma": float(sigma)}


WORKERS = {"autoacct": _autoacct, "dp_accounting": _dp_accounting}


def run_worker(lib: str, case: dict, cap: float) -> dict:
    """One (library, case) in a fresh process, killed after ``cap`` seconds."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", lib, json.dumps(case)],
                              capture_output=True, text=True, timeout=cap)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {cap:.0f} s", "time": float("inf")}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT ")]
    if not lines:
        tail = " | ".join((proc.stderr or "").strip().splitlines()[-3:])
        return {"error": f"worker exit {proc.returncode}: {tail}", "time": time.perf_counter() - t0}
    return json.loads(lines[-1][len("@@RESULT "):])


# ----- driver --------------------------------------------------------------------------------

def _fmt(x: float | None, spec: str = ".3g") -> str:
    return "-" if x is None else format(x, spec)


def row(i: int, case: dict, a: dict, d: dict | None) -> str:
    name = f"{i}: eps {case['eps']:g}, q {case['q']:g}, k {case['k']:g}"
    if not a:
        cols = ["-", "-", "-", "-"]
    elif "error" in a:
        auto = f"{_fmt(a.get('time'))} ({a['error'][:160]})"
        cols = [auto, "-", "-", "-"]
    else:
        ratio = a["time"] / a["query_time"] if a["query_time"] > 0 else float("inf")
        cols = [f"{a['time']:.3g}", f"{a['query_time']:.3g}", f"{ratio:.1f}",
                f"{a['sigma']:.6g} ({a['evaluations']} ev{'' if a['certified'] else ', not certified'})"]
    if d is None:
        cols += ["-", "-", "-"]
    elif "error" in d:
        cols += [f"{_fmt(d.get('time'))} ({d['error'][:120]})", "-", "-"]
    else:
        speed = d["time"] / a["time"] if a and "error" not in a and a["time"] > 0 else None
        cols += [f"{d['time']:.3g}", f"{d['sigma']:.6g}", _fmt(speed, ".1f")]
    return "| " + " | ".join([name] + cols) + " |"


HEADER = ("| case | autoacct s | one query s | ratio | autoacct sigma | dp_accounting s | "
          "dp_accounting sigma | speed-up |\n|---|---|---|---|---|---|---|---|")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--cases", help="comma-separated case indices (0..53; see GRID)")
    ap.add_argument("--subset", action="store_true", help="six representative cases")
    ap.add_argument("--cap", type=float, default=20.0,
                    help="seconds per (case, library) before the worker is killed (default 20)")
    ap.add_argument("--libs", default="autoacct,dp_accounting",
                    help="comma-separated libraries to run (default both)")
    ap.add_argument("--json", help="write the rows to this file")
    ap.add_argument("--table", nargs="+", help="print the table of these JSON files (merged by case)")
    args = ap.parse_args()
    if args.worker:
        lib, case = args.worker
        print("@@RESULT " + json.dumps(WORKERS[lib](json.loads(case))), flush=True)
        return
    if args.table:
        merged: dict[int, dict] = {}
        for name in args.table:
            with open(name) as f:
                for r in json.load(f):
                    m = merged.setdefault(r["case"], {})
                    for lib in WORKERS:
                        if r.get(lib):
                            m[lib] = r[lib]
        print(HEADER)
        for i in sorted(merged):
            print(row(i, GRID[i], merged[i].get("autoacct", {}), merged[i].get("dp_accounting")))
        return
    libs = args.libs.split(",")
    if args.cases:
        idx = [int(s) for s in args.cases.split(",")]
    elif args.subset:
        idx = SUBSET
    else:
        idx = list(range(len(GRID)))
    out = []
    print(f"load average {os.getloadavg()[0]:.2f} at start", flush=True)
    print(HEADER, flush=True)
    for i in idx:
        case = GRID[i]
        a = run_worker("autoacct", case, args.cap) if "autoacct" in libs else {}
        d = run_worker("dp_accounting", case, args.cap) if "dp_accounting" in libs else None
        print(row(i, case, a, d), flush=True)
        out.append({"case": i, **case, "autoacct": a, "dp_accounting": d})
    print(f"load average {os.getloadavg()[0]:.2f} at end", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
