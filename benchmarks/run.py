"""Side-by-side benchmark of autoacct, dp_accounting and prv_accountant.

The parts: ``cases`` (what is run), ``runners`` (the accountants, timed), ``robustness``,
``harness`` (worker processes, snapshots) and ``report`` (the tables); this script ties them.

Run from the repository root::

    python benchmarks/run.py                 # everything (about an hour on 2 cores)
    python benchmarks/run.py --quick         # a few cases, a few minutes
    python benchmarks/run.py --no-others     # autoacct only
    python benchmarks/run.py --json out.json # also write every measurement as JSON
    python benchmarks/run.py --reuse-others out.json  # rerun autoacct only, others from out.json

The compared accountants are test-only extras, never runtime dependencies::

    pip install dp-accounting prv-accountant

Mechanism everywhere: the Poisson-subsampled Gaussian under add/remove
neighbouring (DP-SGD), sampling rate q, noise multiplier sigma, k steps.

* autoacct: ``Composition()([PoissonSubsample(q)(Gaussian(sigma))], [k]).epsilon(delta)``
  at the default accuracy (tol = 1e-3); the certified (lower, upper) pair comes
  from ``epsilon_bounds`` on the same object (cached, so not timed again).
* dp_accounting: ``PLDAccountant()`` with its defaults (pessimistic estimate,
  value_discretization_interval 1e-4), ``compose(PoissonSampledDpEvent(q,
  GaussianDpEvent(sigma)), k)`` then ``get_epsilon(delta)``.
* prv_accountant: ``PRVAccountant(PoissonSubsampledGaussianMechanism(q, sigma),
  eps_error=0.01, delta_error=delta/1000, max_self_compositions=[k])`` then
  ``compute_epsilon(delta, [k])``, which returns (lower, estimate, upper); the
  table shows the upper value.

Every timed call starts from construction (fresh mechanism / accountant, so no
cache is reused). Each (case, accountant) runs in its own worker subprocess,
launched one after the other by this one script, that first warms its library
up on a tiny problem (imports, FFT plans), then times the call (the best of as many
repetitions as fit in one second of calls, at most 25: on this shared machine single
calls of a few milliseconds vary by 30% or more) and reports its peak resident
memory above the post-import baseline (``resource.getrusage`` ru_maxrss).
``--in-process`` runs every timing in this single process instead (no memory
figures, no caps). Times are CPU seconds of the worker (``time.process_time``;
every library here computes on one thread), which stay meaningful on a loaded
shared machine; wall-clock seconds are in the JSON output. Workers get an
address-space cap (``--mem-limit-gb``, default 8) and a timeout (``--timeout``,
default 900 s): prv_accountant needs about 18 GB on the large-epsilon cases,
which would take down a shared machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
from typing import Any

import harness
from cases import (
    HETERO_DELTA,
    HETERO_STEPS,
    MATRIX,
    QUICK_MATRIX,
    QUICK_SWEEP_KS,
    SWEEP_DELTA,
    SWEEP_KS,
    SWEEP_Q,
    SWEEP_SIGMA,
    case_label,
)
from harness import _autoacct_hash, run_worker, worker_main
from report import print_robustness, print_table, suspicious
from robustness import GROWTH_ROUNDS, ROBUST


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer cases")
    ap.add_argument("--no-others", action="store_true", help="autoacct only")
    ap.add_argument("--json", metavar="OUT", help="write all measurements to this JSON file")
    ap.add_argument("--in-process", action="store_true",
                    help="time everything in this process (no memory figures, no caps)")
    ap.add_argument("--mem-limit-gb", type=float, default=8.0, help="address-space cap per worker")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per worker")
    ap.add_argument("--skip", default="", help="comma list of sections to skip: "
                    "matrix,hetero,sweep,equal,robust")
    ap.add_argument("--snapshot", action="store_true",
                    help="copy the autoacct package (and this script) to a temporary directory "
                    "first and benchmark that copy, so that concurrent edits cannot change the "
                    "code mid-run")
    ap.add_argument("--reuse-others", metavar="JSON",
                    help="take dp_accounting and prv_accountant measurements of the same cases "
                    "from an earlier --json output instead of rerunning them (their code does not "
                    "change when autoacct does; the table marks reused rows with their date)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        res = worker_main(json.loads(args.worker))
        print("@@RESULT " + json.dumps(res))
        return 0

    others = not args.no_others
    skip = set(filter(None, args.skip.split(",")))
    snapshot = harness._snapshot_autoacct() if args.snapshot else None
    accts = ["autoacct"] + (["dp_accounting", "prv"] if others else [])
    versions = {}
    for mod in ("autoacct", "dp_accounting", "prv_accountant", "numpy", "scipy"):
        try:
            m = __import__(mod)
            versions[mod] = getattr(m, "__version__", "?")
            if mod == "autoacct":
                versions["autoacct_path"] = os.path.dirname(m.__file__)
        except ImportError:
            versions[mod] = None
    try:
        from importlib.metadata import version
        versions["dp_accounting"] = version("dp-accounting") if versions["dp_accounting"] else None
        versions["prv_accountant"] = version("prv-accountant") if versions["prv_accountant"] else None
    except Exception:  # noqa: BLE001
        pass
    meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
            "python": platform.python_version(), "machine": platform.platform(),
            "cpus": os.cpu_count(), "load_start": os.getloadavg(), "versions": versions,
            "quick": args.quick, "in_process": args.in_process, "mem_limit_gb": args.mem_limit_gb,
            "autoacct_sources_sha256": _autoacct_hash(), "autoacct_snapshot": snapshot}
    print(f"# autoacct benchmark {meta['date']}  python {meta['python']}  {meta['cpus']} cpus  "
          f"load {meta['load_start'][0]:.2f}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    results: dict[str, Any] = {"meta": meta}

    reused: dict[tuple[str, str], dict] = {}
    if args.reuse_others:
        with open(args.reuse_others) as fh:
            old = json.load(fh)
        meta["others_reused_from"] = {"file": args.reuse_others, "date": old["meta"]["date"]}
        print(f"dp_accounting / prv_accountant rows reused from {args.reuse_others} "
              f"(measured {old['meta']['date']})")
        for section in ("matrix", "hetero", "sweep"):
            for row in old.get(section, []):
                for acct in ("dp_accounting", "prv"):
                    if acct in row:
                        reused[(row["label"], acct)] = row[acct]

    def run_cases(cases: list[dict]) -> list[dict]:
        rows = []
        for case in cases:
            row = {"label": case_label(case), "case": case}
            for acct in accts:
                if acct != "autoacct" and (row["label"], acct) in reused:
                    row[acct] = reused[(row["label"], acct)]
                    continue
                r = run_worker({"task": "measure", "acct": acct, "case": case}, args)
                row[acct] = r
                msg = r.get("error") or f"eps={r['eps']:.6g} t={r['time']:.3g}s"
                print(f"  [{row['label']}] {acct}: {msg}", file=sys.stderr, flush=True)
            rows.append(row)
        return rows

    matrix = QUICK_MATRIX if args.quick else MATRIX
    if "matrix" not in skip:
        cases = [{"kind": "homog", "q": q, "sigma": s, "k": k, "delta": d} for q, s, k, d in matrix]
        results["matrix"] = run_cases(cases)
        print_table("DP-SGD matrix (default accuracy)", results["matrix"], others)
    if "hetero" not in skip:
        n = 100 if args.quick else HETERO_STEPS
        results["hetero"] = run_cases([{"kind": "hetero", "n": n, "delta": HETERO_DELTA}])
        print_table(f"Heterogeneous composition ({n} distinct steps)", results["hetero"], others)
    if "sweep" not in skip:
        ks = QUICK_SWEEP_KS if args.quick else SWEEP_KS
        cases = [{"kind": "homog", "q": SWEEP_Q, "sigma": SWEEP_SIGMA, "k": k, "delta": SWEEP_DELTA}
                 for k in ks]
        results["sweep"] = run_cases(cases)
        print_table(f"k sweep (q={SWEEP_Q}, sigma={SWEEP_SIGMA}, delta={SWEEP_DELTA:g})",
                    results["sweep"], others)
        # The growth goal compares two times, so they are taken interleaved in one worker.
        g = run_worker({"task": "growth", "cases": cases}, args)
        if "error" in g:
            print(f"\nTime growth: {g['error']}")
        else:
            base = ks.index(1000) if 1000 in ks else 0
            rel = [t / g["min"][base] for t in g["min"]]
            results["growth"] = {"ks": ks, "min": g["min"], "median": g["median"], "relative": rel,
                                 "k_small": ks[base], "k_large": ks[-1], "ratio": rel[-1]}
            print(f"\nTime growth (interleaved, best of {GROWTH_ROUNDS} calls each, relative to "
                  f"k={ks[base]:.0e}):")
            print("  " + "  ".join(f"k={k:.0e}: {r:.2f}" for k, r in zip(ks, rel)))
            print(f"  t(k={ks[-1]:.0e}) / t(k={ks[base]:.0e}) = {rel[-1]:.2f} (goal < 3); medians give "
                  f"{g['median'][-1] / g['median'][base]:.2f}")

    if others and "equal" not in skip:
        eq_rows = []
        for row in results.get("matrix", []) + results.get("hetero", []):
            a, d = row["autoacct"], row["dp_accounting"]
            if "error" in a or "error" in d:
                continue
            entry = {"label": row["label"], "dp_eps": d["eps"], "dp_time": d["time"]}
            r = run_worker({"task": "equal_accuracy", "case": row["case"], "eps_other": d["eps"],
                            "truth": a["lower"]}, args)
            entry.update(r)
            eq_rows.append(entry)
            msg = entry.get("error") or f"tol={entry['tol']:g} t={entry['time']:.3g}s"
            print(f"  [equal accuracy {row['label']}] {msg}", file=sys.stderr, flush=True)
        results["equal_accuracy"] = eq_rows
        print("\n## Equal accuracy (largest autoacct tol with |upper - truth| <= |dp_accounting - truth|;"
              " truth = best certified autoacct lower bound)\n")
        print("| case | truth proxy | dp_acc eps | dp_acc err | autoacct tol | autoacct upper "
              "| autoacct err | t auto s | t dp_acc s | dp/auto |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for e in eq_rows:
            if "error" in e:
                prog = e.get("progress") or []
                tols = ", ".join(format(p["tol"], ".2g") for p in prog)
                last = (f"; tried tol {tols}, last upper {prog[-1]['upper']:.8g} in "
                        f"{prog[-1]['time']:.3g} s") if prog else ""
                print(f"| {e['label']} | - | {e['dp_eps']:.8g} | - | {e['error']}{last} | | | | "
                      f"{e['dp_time']:.3g} | |")
                continue
            note = "" if e["reached"] else " (not reached)"
            print(f"| {e['label']} | {e['truth']:.8g} | {e['dp_eps']:.8g} | {e['dp_eps'] - e['truth']:.3g} | "
                  f"{e['tol']:.3g} | {e['upper']:.8g} | {e['err']:.3g}{note} | "
                  f"{e['time']:.3g} | {e['dp_time']:.3g} | {e['dp_time'] / e['time']:.2f} |")

    if "robust" not in skip:
        rb = {}
        for part in ROBUST:
            rb[part] = run_worker({"task": "robust", "part": part, "others": others}, args)
            print(f"  [robustness {part}] {rb[part].get('error') or 'done'}", file=sys.stderr, flush=True)
        results["robustness"] = rb
        print_robustness(rb)

    sus = suspicious(results.get("matrix", []) + results.get("hetero", []) + results.get("sweep", []))
    results["suspicious"] = sus
    print("\n## Cross-checks\n")
    print("\n".join("* " + s for s in sus) if sus else "none")
    results["meta"]["load_end"] = os.getloadavg()

    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1, default=str)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
