"""A seeded random sweep over the realistic DP-SGD space, autoacct against dp_accounting.

Issue 18's measurement: q log-uniform in [1e-5, 1], sigma log-uniform in [0.3, 50], k
log-uniform in [1, 1e7] (rounded), delta log-uniform in [1e-12, 1e-3], plus the issue's named
slow cases. For each case, in one process per (case, accountant) so that neither warms the
other's caches: autoacct's certified bracket ``epsilon_bounds(delta)`` and its time,
dp_accounting's default ``PLDAccountant`` epsilon and its time, their ratio, autoacct's
relative width, whether autoacct warned (AccuracyWarning), and whether dp_accounting's value
lies inside autoacct's bracket. Each process first answers a small warm-up query, untimed,
so that imports and other one-off costs count for neither (``--cold`` times the first query
instead). Each call has a time limit (``--timeout``, default 300 s); a case past it is
reported as such. With ``--equal``, each case where dp_accounting's default was the faster
and its value lies more than tol above autoacct's certified upper end is run again at
autoacct's accuracy: dp_accounting at the coarsest ``value_discretization_interval`` of
:data:`EQUAL_INTERVALS` whose value is within tol of that upper end (each interval in a fresh
process, as above). Not run in CI.

    python benchmarks/sweep.py                       # 60 random cases and the named ones
    python benchmarks/sweep.py --cases 10 --no-named --json sweep.json
    python benchmarks/sweep.py --reuse-others sweep.json   # dp_accounting's rows from an earlier run
    python benchmarks/sweep.py --reuse-others sweep.json --equal   # and at equal accuracy
    python benchmarks/sweep.py --delta sweep.json --json d.json    # delta(eps) at sweep.json's eps

``--delta FILE`` asks each case's delta(eps) instead, of both accountants (autoacct's
``delta_bounds``, dp_accounting's ``get_delta``), at the eps that FILE's autoacct row bounds
from above (so delta(eps) is at most the case's delta, and near it): their times, ratio,
autoacct's bracket and whether it meets tol on the eps scale, and whether dp_accounting's
value lies inside it.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import multiprocessing as mp
import statistics
import time
import warnings
from typing import Any

import numpy as np

#: The slow cases of the issue's table: (q, sigma, k, delta).
NAMED = [
    (1e-4, 0.8, 10_000, 1e-9),
    (1e-4, 0.1, 10, 1e-5),
    (1e-5, 0.5, 3, 1e-12),
    (1.17e-4, 0.76, 204, 3e-10),
    (0.5, 0.6, 1, 1e-15),
    (2e-3, 0.676, 10_000, 1e-7),
    (1e-3, 0.8, 1000, 1e-7),
]


def random_cases(n: int, seed: int) -> list[tuple[float, float, int, float]]:
    rng = np.random.default_rng(seed)

    def log_uniform(lo: float, hi: float) -> float:
        return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))
    return [(log_uniform(1e-5, 1.0), log_uniform(0.3, 50.0), max(1, round(log_uniform(1.0, 1e7))),
             log_uniform(1e-12, 1e-3)) for _ in range(n)]


def _autoacct(q: float, sigma: float, k: int, delta: float) -> dict[str, Any]:
    from autoacct import AccuracyWarning, dpsgd
    t0 = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AccuracyWarning)
        lo, up = dpsgd(q, sigma, k).epsilon_bounds(delta)
    return {"lower": float(lo), "upper": float(up), "seconds": time.process_time() - t0,
            "warned": any(issubclass(w.category, AccuracyWarning) for w in caught)}


def _autoacct_delta(q: float, sigma: float, k: int, eps: float) -> dict[str, Any]:
    """autoacct's certified bracket on delta(eps), whether it warned, and whether it meets
    tol on the eps scale (the upper end at eps at most the lower end at eps (1 - tol))."""
    from autoacct import AccuracyWarning, dpsgd
    t0 = time.process_time()
    m = dpsgd(q, sigma, k)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AccuracyWarning)
        lo, up = m.delta_bounds(eps)
    seconds = time.process_time() - t0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shrunk = float(m.delta_bounds(eps * (1.0 - TOL))[0])
    return {"lower": float(lo), "upper": float(up), "seconds": seconds,
            "warned": any(issubclass(w.category, AccuracyWarning) for w in caught),
            "met": float(up) <= shrunk or float(up) - float(lo) <= TOL * float(up)}


def _dp_accounting_delta(q: float, sigma: float, k: int, eps: float) -> dict[str, Any]:
    """dp_accounting's PLDAccountant's delta(eps), at its default discretisation interval."""
    from dp_accounting import dp_event
    from dp_accounting.pld import PLDAccountant
    t0 = time.process_time()
    event = dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), k)
    delta = PLDAccountant().compose(event).get_delta(eps)
    return {"delta": float(delta), "seconds": time.process_time() - t0}


def _dp_accounting(q: float, sigma: float, k: int, delta: float, interval: float | None = None) -> dict[str, Any]:
    """dp_accounting's PLDAccountant, at its default discretisation interval (1e-4) unless
    ``interval`` is given."""
    from dp_accounting import dp_event
    from dp_accounting.pld import PLDAccountant
    t0 = time.process_time()
    event = dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), k)
    accountant = PLDAccountant() if interval is None else PLDAccountant(value_discretization_interval=interval)
    eps = accountant.compose(event).get_epsilon(delta)
    return {"eps": float(eps), "seconds": time.process_time() - t0}


#: A small query each worker answers first, untimed, so that one-off costs (imports,
#: lazily loaded modules, FFT set-up) count for neither accountant.
WARM_UP = (0.02, 1.3, 20, 1e-5)


def _worker(name: str, case: tuple, out: Any, warm: bool = True) -> None:
    # "dp_accounting:<interval>" runs dp_accounting at that discretisation interval.
    interval = float(name.split(":")[1]) if name.startswith("dp_accounting:") else None
    fn = {"autoacct": _autoacct, "autoacct-delta": _autoacct_delta,
          "dp_accounting-delta": _dp_accounting_delta}.get(name) or functools.partial(_dp_accounting,
                                                                                      interval=interval)
    try:
        if warm:
            # (at the default interval: the warm-up query on a fine one can take minutes)
            (_autoacct if name.startswith("autoacct") else _dp_accounting)(*WARM_UP)
        out.put(fn(*case))
    except Exception as err:  # a failure is a result of the sweep, reported, not raised
        out.put({"error": f"{type(err).__name__}: {err}"})


def run(name: str, case: tuple, timeout: float, warm: bool = True) -> dict[str, Any]:
    """One accountant on one case in a fresh process, within ``timeout`` wall seconds, after
    an untimed warm-up query (:data:`WARM_UP`) unless ``warm`` is False."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=_worker, args=(name, case, out, warm))
    proc.start()
    proc.join(timeout)
    if proc.is_alive():
        proc.terminate()
        proc.join()
        return {"error": f"timeout after {timeout:g} s"}
    return out.get() if not out.empty() else {"error": f"exit code {proc.exitcode}"}


def row(case: tuple, timeout: float, others: bool, reused: dict[tuple, dict[str, Any]] | None = None,
        warm: bool = True) -> dict[str, Any]:
    q, sigma, k, delta = case
    res: dict[str, Any] = {"q": q, "sigma": sigma, "k": k, "delta": delta,
                           "autoacct": run("autoacct", case, timeout, warm)}
    if reused is not None and tuple(case) in reused:
        res["dp_accounting"] = reused[tuple(case)]
    elif others:
        res["dp_accounting"] = run("dp_accounting", case, timeout, warm)
    a, d = res["autoacct"], res.get("dp_accounting", {})
    if "upper" in a:
        res["width"] = (a["upper"] - a["lower"]) / a["upper"] if a["upper"] > 0 else 0.0
    if "upper" in a and "eps" in d:
        res["ratio"] = d["seconds"] / max(a["seconds"], 1e-6)
        res["inside"] = a["lower"] <= d["eps"] <= a["upper"]
    return res


def delta_row(case: tuple, eps: float, timeout: float, others: bool, warm: bool = True) -> dict[str, Any]:
    """Both accountants' delta(eps) for one case (its delta is left aside), each in a fresh
    process as :func:`row`: their times, ratio, autoacct's bracket, and whether
    dp_accounting's value lies inside it."""
    q, sigma, k, _ = case
    res: dict[str, Any] = {"q": q, "sigma": sigma, "k": k, "eps": eps,
                           "autoacct": run("autoacct-delta", (q, sigma, k, eps), timeout, warm)}
    if others:
        res["dp_accounting"] = run("dp_accounting-delta", (q, sigma, k, eps), timeout, warm)
    a, d = res["autoacct"], res.get("dp_accounting", {})
    if "upper" in a and "delta" in d:
        res["ratio"] = d["seconds"] / max(a["seconds"], 1e-6)
        res["inside"] = a["lower"] <= d["delta"] <= a["upper"]
    return res


def delta_summary(rows: list[dict[str, Any]]) -> str:
    ratios = [r["ratio"] for r in rows if "ratio" in r]
    done = [r["autoacct"] for r in rows if "upper" in r["autoacct"]]
    lines = [f"{len(rows)} delta(eps) cases; autoacct answered {len(done)}, within tol on the eps scale "
             f"on {sum(1 for a in done if a['met'])}, warned on {sum(1 for a in done if a['warned'])}; "
             f"autoacct's total {sum(a['seconds'] for a in done):.3g} s"]
    if ratios:
        lines.append(f"dp_accounting time / autoacct time: median {statistics.median(ratios):.3g}, "
                     f"min {min(ratios):.3g}, max {max(ratios):.3g}; slower than dp_accounting on "
                     f"{sum(1 for x in ratios if x < 1)}; dp_accounting's value inside autoacct's bracket "
                     f"on {sum(1 for r in rows if r.get('inside'))} of {len(ratios)}")
    return "\n".join(lines)


#: dp_accounting's discretisation intervals tried by ``--equal``, coarsest first (its default
#: is 1e-4); its time grows about as the interval shrinks.
EQUAL_INTERVALS = (1e-5, 1e-6, 1e-7, 1e-8, 1e-9)
#: autoacct's default relative accuracy (``autoacct.pld.accountant.DEFAULT_TOL``, not imported:
#: this process leaves both libraries to its workers), which ``--equal`` asks of dp_accounting.
TOL = 1e-3


def equal_accuracy(res: dict[str, Any], timeout: float, warm: bool = True) -> dict[str, Any] | None:
    """dp_accounting at autoacct's accuracy for one row of :func:`row`, where its default was
    the faster and its value lies more than TOL above autoacct's certified upper end (else
    None): the coarsest interval of EQUAL_INTERVALS whose value is at most that upper end
    times (1 + TOL), with its value and time (a user who knew the interval would run that one
    alone), and whether the value lies below autoacct's certified lower end (below the
    truth). The intervals tried and their results are kept; the interval is None where none
    reached it (each within ``timeout``)."""
    a, d = res["autoacct"], res.get("dp_accounting", {})
    if "upper" not in a or "eps" not in d or res.get("ratio", math.inf) >= 1.0:
        return None
    target = a["upper"] * (1.0 + TOL)
    if d["eps"] <= target:
        return None
    case = (res["q"], res["sigma"], res["k"], res["delta"])
    tried = []
    for interval in EQUAL_INTERVALS:
        out = run(f"dp_accounting:{interval!r}", case, timeout, warm)
        tried.append({"interval": interval, **out})
        if "eps" in out and out["eps"] <= target:
            return {"interval": interval, "eps": out["eps"], "seconds": out["seconds"],
                    "ratio": out["seconds"] / max(a["seconds"], 1e-6), "below": out["eps"] < a["lower"],
                    "tried": tried}
        if "error" in out:
            break
    return {"interval": None, "tried": tried}


def summary(rows: list[dict[str, Any]]) -> str:
    ratios = [r["ratio"] for r in rows if "ratio" in r]
    widths = [r["width"] for r in rows if "width" in r]
    lines = [f"{len(rows)} cases; autoacct answered {len(widths)}, warned on "
             f"{sum(1 for r in rows if r['autoacct'].get('warned'))}"]
    if ratios:
        lines.append(f"dp_accounting time / autoacct time: median {statistics.median(ratios):.3g}, "
                     f"min {min(ratios):.3g}, max {max(ratios):.3g}; slower than dp_accounting on "
                     f"{sum(1 for x in ratios if x < 1)}")
        lines.append(f"dp_accounting's value inside autoacct's bracket: "
                     f"{sum(1 for r in rows if r.get('inside'))} of {len(ratios)}")
    equal = [r["equal"] for r in rows if r.get("equal")]
    if equal:
        reached = [e for e in equal if e["interval"] is not None]
        lines.append(f"at autoacct's accuracy ({len(equal)} cases where dp_accounting's default was faster "
                     f"and off by more than tol): dp_accounting reached it on {len(reached)}, slower than "
                     f"autoacct on {sum(1 for e in reached if e['ratio'] >= 1)} of those, below the "
                     f"certified lower end on {sum(1 for e in reached if e['below'])}")
    if widths:
        lines.append(f"certified relative width: median {statistics.median(widths):.2e}, max {max(widths):.2e}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=60, help="number of random cases (default 60)")
    parser.add_argument("--seed", type=int, default=18, help="seed of the random cases")
    parser.add_argument("--no-named", action="store_true", help="leave out the issue's named cases")
    parser.add_argument("--no-others", action="store_true", help="autoacct only")
    parser.add_argument("--timeout", type=float, default=300.0, help="wall seconds per call")
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument("--reuse-others", help="take dp_accounting's rows of the same cases from this "
                        "file (written by --json), running autoacct only")
    parser.add_argument("--equal", action="store_true", help="run dp_accounting again at autoacct's "
                        "accuracy where its default was faster and off by more than tol")
    parser.add_argument("--cold", action="store_true", help="time the first query of each process "
                        "(imports and set-up included) instead of one after a warm-up query")
    parser.add_argument("--delta", metavar="FILE", help="ask delta(eps) instead, at each case's eps "
                        "taken as autoacct's upper end on eps(delta) in this file (written by --json)")
    args = parser.parse_args()
    cases = random_cases(args.cases, args.seed) + ([] if args.no_named else NAMED)
    if args.delta:
        delta_sweep(cases, args)
        return
    reused = None
    if args.reuse_others:
        with open(args.reuse_others) as fh:
            reused = {(r["q"], r["sigma"], r["k"], r["delta"]): r["dp_accounting"]
                      for r in json.load(fh) if "dp_accounting" in r}
    rows = []
    for i, case in enumerate(cases):
        r = row(case, args.timeout, not args.no_others, reused, not args.cold)
        rows.append(r)
        a, d = r["autoacct"], r.get("dp_accounting", {})
        print(f"{i:3d} q={case[0]:.3g} sigma={case[1]:.3g} k={case[2]} delta={case[3]:.3g}: "
              f"autoacct {a.get('lower', float('nan')):.6g}..{a.get('upper', float('nan')):.6g} "
              f"({a.get('seconds', float('nan')):.3g} s{', warned' if a.get('warned') else ''}"
              f"{', ' + a['error'] if 'error' in a else ''}) "
              f"dp_accounting {d.get('eps', float('nan')):.6g} ({d.get('seconds', float('nan')):.3g} s"
              f"{', ' + d['error'] if 'error' in d else ''})", flush=True)
        if args.equal:
            r["equal"] = equal_accuracy(r, args.timeout, not args.cold)
            e = r["equal"]
            if e is not None and e["interval"] is not None:
                below = ", below the certified lower end" if e["below"] else ""
                print(f"    at autoacct's accuracy: dp_accounting {e['eps']:.6g} at interval {e['interval']:g} "
                      f"({e['seconds']:.3g} s, ratio {e['ratio']:.3g}{below})", flush=True)
            elif e is not None:
                print("    at autoacct's accuracy: dp_accounting did not reach it", flush=True)
    print(summary(rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


def delta_sweep(cases: list[tuple[float, float, int, float]], args: argparse.Namespace) -> None:
    with open(args.delta) as fh:
        uppers = {(r["q"], r["sigma"], r["k"], r["delta"]): r["autoacct"]["upper"]
                  for r in json.load(fh) if "upper" in r["autoacct"]}
    rows = []
    for i, case in enumerate(cases):
        eps = uppers.get(tuple(case))
        if eps is None or not math.isfinite(eps):
            continue
        r = delta_row(case, eps, args.timeout, not args.no_others, not args.cold)
        rows.append(r)
        a, d = r["autoacct"], r.get("dp_accounting", {})
        print(f"{i:3d} q={case[0]:.3g} sigma={case[1]:.3g} k={case[2]} eps={eps:.6g}: "
              f"autoacct {a.get('lower', float('nan')):.6g}..{a.get('upper', float('nan')):.6g} "
              f"({a.get('seconds', float('nan')):.3g} s{'' if a.get('met', True) else ', not within tol'}"
              f"{', warned' if a.get('warned') else ''}{', ' + a['error'] if 'error' in a else ''}) "
              f"dp_accounting {d.get('delta', float('nan')):.6g} ({d.get('seconds', float('nan')):.3g} s"
              f"{', ' + d['error'] if 'error' in d else ''})", flush=True)
    print(delta_summary(rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
