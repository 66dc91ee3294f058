"""Side-by-side benchmark of autoacct, dp_accounting and prv_accountant (issue 4).

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
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import warnings
from typing import Any

# --------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------

#: The DP-SGD matrix of issue 4: (q, sigma, k, delta).
MATRIX = [
    (0.01, 1.5, 10_000, 1e-5),
    (256 / 60000, 1.1, 14_040, 1e-5),
    (1e-3, 0.8, 100_000, 1e-5),
    (0.1, 2.0, 100_000, 1e-6),
    (0.01, 1.0, 1_000_000, 1e-6),
]
QUICK_MATRIX = MATRIX[:2]

#: k sweep for one mechanism.
SWEEP_Q, SWEEP_SIGMA, SWEEP_DELTA = 0.01, 1.0, 1e-5
SWEEP_KS = [10 ** e for e in range(1, 8)]
QUICK_SWEEP_KS = [10, 1_000, 100_000]

#: Heterogeneous run: this many distinct (q, sigma) steps.
HETERO_STEPS = 1000
HETERO_DELTA = 1e-5


def hetero_steps(n: int = HETERO_STEPS) -> list[tuple[float, float]]:
    """n distinct (q, sigma) pairs: q in [0.005, 0.02], sigma in [0.8, 2.0], deterministically shuffled."""
    out = []
    for i in range(n):
        q = 0.005 + 0.015 * ((i * 7919) % n) / (n - 1)
        sigma = 0.8 + 1.2 * ((i * 104729) % n) / (n - 1)
        out.append((round(q, 12), round(sigma, 12)))
    assert len(set(out)) == n
    return out


def case_label(case: dict) -> str:
    if case["kind"] == "hetero":
        return f"hetero {case['n']} steps, d={case['delta']:.0e}"
    return f"q={case['q']:.4g} s={case['sigma']:g} k={case['k']:g} d={case['delta']:.0e}"


# --------------------------------------------------------------------------------------
# The three accountants. Each function does the full work from construction.
# --------------------------------------------------------------------------------------

def _autoacct_mechanism(case: dict):
    from autoacct.zoo import Composition, Gaussian
    try:
        from autoacct.zoo import PoissonSubsample
    except ImportError:
        from autoacct.subsampling import PoissonSubsample
    if case["kind"] == "hetero":
        steps = hetero_steps(case["n"])
        mechs = [PoissonSubsample(q)(Gaussian(s)) for q, s in steps]
        return Composition()(mechs, [1] * len(mechs))
    return Composition()([PoissonSubsample(case["q"])(Gaussian(case["sigma"]))], [case["k"]])


def run_autoacct(case: dict, tol: float | None = None) -> dict:
    mech = _autoacct_mechanism(case)
    eps = mech.epsilon(case["delta"], tol=tol)
    return {"eps": eps, "_mech": mech}


def autoacct_extras(res: dict, case: dict, tol: float | None = None) -> dict:
    lo, up = res["_mech"].epsilon_bounds(case["delta"], tol=tol)
    return {"lower": lo, "upper": up}


def run_dp_accounting(case: dict) -> dict:
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant
    acc = pld_privacy_accountant.PLDAccountant()
    if case["kind"] == "hetero":
        events = [dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(s))
                  for q, s in hetero_steps(case["n"])]
        acc.compose(dp_event.ComposedDpEvent(events))
    else:
        acc.compose(dp_event.PoissonSampledDpEvent(case["q"], dp_event.GaussianDpEvent(case["sigma"])),
                    case["k"])
    return {"eps": float(acc.get_epsilon(case["delta"]))}


def run_prv(case: dict) -> dict:
    from prv_accountant import PoissonSubsampledGaussianMechanism, PRVAccountant
    delta = case["delta"]
    if case["kind"] == "hetero":
        steps = hetero_steps(case["n"])
        prvs = [PoissonSubsampledGaussianMechanism(sampling_probability=q, noise_multiplier=s)
                for q, s in steps]
        counts = [1] * len(prvs)
    else:
        prvs = [PoissonSubsampledGaussianMechanism(sampling_probability=case["q"],
                                                   noise_multiplier=case["sigma"])]
        counts = [case["k"]]
    acc = PRVAccountant(prvs=prvs, eps_error=0.01, delta_error=delta / 1000,
                        max_self_compositions=counts)
    lo, est, up = acc.compute_epsilon(delta, counts)
    return {"eps": float(up), "lower": float(lo), "estimate": float(est), "upper": float(up)}


#: The script the workers run (a frozen copy under ``--snapshot``).
WORKER_SCRIPT = os.path.abspath(__file__)

RUNNERS = {"autoacct": run_autoacct, "dp_accounting": run_dp_accounting, "prv": run_prv}
WARMUP = {"kind": "homog", "q": 0.2, "sigma": 3.0, "k": 3, "delta": 1e-3}


def _rss_mb() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / (1024.0 * 1024.0) if sys.platform == "darwin" else r / 1024.0


def measure(acct: str, case: dict, tol: float | None = None, warm: bool = True,
            max_repeat: int = 25) -> dict:
    """Time ``acct`` on ``case`` (full call from construction, fresh objects every repetition)."""
    warnings.simplefilter("ignore")
    fn = RUNNERS[acct]
    kwargs = {"tol": tol} if acct == "autoacct" else {}
    if warm:
        fn(WARMUP)
    base = _rss_mb()
    times, walls = [], []
    res: dict = {}
    for _ in range(max_repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        res = fn(case, **kwargs)
        walls.append(time.perf_counter() - t0)
        times.append(time.process_time() - c0)
        if sum(walls) > 1.0:
            break
    out = {k: v for k, v in res.items() if not k.startswith("_")}
    if acct == "autoacct":
        out.update(autoacct_extras(res, case, tol))
    out.update(time=min(times), cpu_times=times, wall=min(walls), wall_times=walls,
               rss_base_mb=base, rss_peak_mb=_rss_mb())
    out["mem_mb"] = out["rss_peak_mb"] - base
    return out


# --------------------------------------------------------------------------------------
# Equal accuracy: the tol at which autoacct's upper bound is as close to the truth
# proxy (its best certified lower bound) as dp_accounting's default answer.
# --------------------------------------------------------------------------------------

def equal_accuracy(case: dict, eps_other: float, truth: float) -> dict:
    """The largest tol at which autoacct's upper bound is at least as close to the truth as ``eps_other``.

    Closeness is measured from the truth proxy, the best certified lower bound
    autoacct has found; when ``eps_other`` is above that proxy the criterion is
    simply upper <= eps_other, whatever the truth. The tol ladder is searched
    untimed, then one fresh call at the chosen tol is timed.
    """
    warnings.simplefilter("ignore")
    run_autoacct(WARMUP)
    best_lower = truth
    tol = min(max(0.5 * abs(eps_other - truth) / max(abs(eps_other), 1e-12), 1e-7), 1e-3)
    tried = []
    for _ in range(16):
        c0 = time.process_time()
        res = run_autoacct(case, tol=tol)
        lo, up = res["_mech"].epsilon_bounds(case["delta"], tol=tol)
        best_lower = max(best_lower, lo)
        tried.append({"tol": tol, "lower": lo, "upper": up, "time": time.process_time() - c0})
        print("@@PROGRESS " + json.dumps(tried[-1]), flush=True)
        target = abs(eps_other - best_lower)
        if up - best_lower <= target or tol <= 1e-7:
            break
        # The certified gap shrinks roughly like tol; aim a little below the target.
        tol = max(min(tol / 2.0, tol * 0.8 * target / max(up - best_lower, 1e-300)), 1e-7)
    target = abs(eps_other - best_lower)
    reached = tried[-1]["upper"] - best_lower <= target
    timed = measure("autoacct", case, tol=tol, warm=False)
    timed.update(tol=tol, tried=tried, reached=reached, truth=best_lower,
                 err=timed["upper"] - best_lower, target_err=target, other_eps=eps_other)
    return timed


# --------------------------------------------------------------------------------------
# Robustness: small delta, large epsilon, soundness against closed forms.
# --------------------------------------------------------------------------------------

def _dpacc_eps(q: float, sigma: float, k: int, delta: float, pessimistic: bool) -> float:
    from dp_accounting.pld import privacy_loss_distribution as pldlib
    pld = pldlib.from_gaussian_mechanism(sigma, sampling_prob=q, pessimistic_estimate=pessimistic,
                                         value_discretization_interval=1e-4)
    return float(pld.self_compose(k).get_epsilon_for_delta(delta))


def _dpacc_delta(q: float, sigma: float, k: int, eps: list[float], pessimistic: bool) -> list[float]:
    from dp_accounting.pld import privacy_loss_distribution as pldlib
    pld = pldlib.from_gaussian_mechanism(sigma, sampling_prob=q, pessimistic_estimate=pessimistic,
                                         value_discretization_interval=1e-4).self_compose(k)
    return [float(pld.get_delta_for_epsilon(e)) for e in eps]


def _exact_gaussian_eps(mu: float, delta: float) -> float:
    from scipy import optimize, special

    def d(e: float) -> float:
        return (special.ndtr(-e / mu + mu / 2) - math.exp(e) * special.ndtr(-e / mu - mu / 2)) - delta

    hi = 1.0
    while d(hi) > 0:
        hi *= 2
    return optimize.brentq(d, 0.0, hi, xtol=1e-14, rtol=1e-14) if d(0.0) > 0 else 0.0


def _poisson():
    try:
        from autoacct.zoo import PoissonSubsample
    except ImportError:
        from autoacct.subsampling import PoissonSubsample
    return PoissonSubsample


def robust_small_delta(others: bool) -> dict:
    """eps(delta) for delta = 1e-5 .. 1e-15: finite, ordered, monotone, round trip, vs dp_accounting."""
    warnings.simplefilter("ignore")
    from autoacct.zoo import Composition, Gaussian
    PoissonSubsample = _poisson()
    q, sigma, k = 0.01, 1.0, 10_000
    problems: list[str] = []
    rows = []
    for d in [10.0 ** -e for e in range(5, 16)]:
        m = Composition()([PoissonSubsample(q)(Gaussian(sigma))], [k])
        t0 = time.process_time()
        eps = m.epsilon(d)
        dt = time.process_time() - t0
        lo, up = m.epsilon_bounds(d)
        back = float(m.delta(up))
        row = {"delta": d, "eps": eps, "lower": lo, "upper": up, "time": dt, "delta_at_upper": back}
        row["rdp"] = float(Composition()([PoissonSubsample(q)(Gaussian(sigma))], [k]).epsilon(d, via="rdp"))
        if others:
            row["dpacc_pess"] = _dpacc_eps(q, sigma, k, d, True)
            row["dpacc_opt"] = _dpacc_eps(q, sigma, k, d, False)
            try:
                pr = run_prv({"kind": "homog", "q": q, "sigma": sigma, "k": k, "delta": d})
                row["prv_lower"], row["prv_upper"] = pr["lower"], pr["upper"]
            except Exception as exc:  # noqa: BLE001
                row["prv_error"] = f"{type(exc).__name__}: {exc}"
        rows.append(row)
        if lo > row["rdp"] * (1 + 1e-9):
            problems.append(f"small delta {d:g}: autoacct lower {lo:.6g} > its own RDP upper bound "
                            f"{row['rdp']:.6g} (unsound lower bound)")
        if others and "prv_lower" in row and (up < row["prv_lower"] or lo > row["prv_upper"]):
            problems.append(f"small delta {d:g}: autoacct [{lo:.6g}, {up:.6g}] disjoint from prv "
                            f"[{row['prv_lower']:.6g}, {row['prv_upper']:.6g}]")
        if not (math.isfinite(lo) and math.isfinite(up)):
            problems.append(f"small delta {d:g}: non-finite bound [{lo}, {up}]")
        if not lo <= eps <= up:
            problems.append(f"small delta {d:g}: not lower {lo} <= eps {eps} <= upper {up}")
        if back > d * (1 + 1e-9):
            problems.append(f"small delta {d:g}: delta(eps_upper) = {back:.4e} > delta")
        if others and up < row["dpacc_opt"] - 1e-9:
            problems.append(f"small delta {d:g}: autoacct upper {up:.6g} < dp_accounting optimistic "
                            f"{row['dpacc_opt']:.6g}")
        if others and lo > row["dpacc_pess"] + 1e-9:
            problems.append(f"small delta {d:g}: autoacct lower {lo:.6g} > dp_accounting pessimistic "
                            f"{row['dpacc_pess']:.6g} (dp_accounting truncates tails at 1e-15 per "
                            "step, so its 'pessimistic' value is not an upper bound at tiny delta; "
                            "see the prv and RDP columns)")
    ups = [r["upper"] for r in rows]
    los = [r["lower"] for r in rows]
    if any(b < a for a, b in zip(ups, ups[1:])) or any(b < a for a, b in zip(los, los[1:])):
        problems.append("small delta: epsilon bounds decrease as delta decreases")
    return {"q": q, "sigma": sigma, "k": k, "rows": rows, "problems": problems}


def robust_large_eps(others: bool) -> dict:
    """delta(eps) for eps up to 200 on a mechanism with eps(1e-6) ~ 217."""
    warnings.simplefilter("ignore")
    import numpy as np

    from autoacct.zoo import Composition, Gaussian
    PoissonSubsample = _poisson()
    q, sigma, k = 0.1, 2.0, 100_000
    eps_grid = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 150.0, 200.0]
    problems: list[str] = []
    m = Composition()([PoissonSubsample(q)(Gaussian(sigma))], [k])
    t0 = time.process_time()
    vector_error = None
    try:
        dl, du = m.delta_bounds(eps_grid)
        dl = [float(x) for x in np.atleast_1d(dl)]
        du = [float(x) for x in np.atleast_1d(du)]
    except MemoryError:
        # One call for the whole grid failed: ask each epsilon on its own to see which one breaks.
        vector_error = f"MemoryError on the {len(eps_grid)}-point delta_bounds call"
        problems.append(f"large eps: {vector_error}")
        del m
        dl, du = [], []
        for e in eps_grid:
            try:
                lo1, up1 = Composition()([PoissonSubsample(q)(Gaussian(sigma))], [k]).delta_bounds(e)
            except MemoryError:
                lo1, up1 = float("nan"), float("nan")
                problems.append(f"large eps {e:g}: MemoryError in delta_bounds")
            dl.append(float(lo1))
            du.append(float(up1))
    dt = time.process_time() - t0
    out = {"q": q, "sigma": sigma, "k": k, "eps": eps_grid, "delta_lower": dl, "delta_upper": du,
           "time": dt, "vector_error": vector_error}
    # Large-epsilon eps(delta) queries too: the target epsilons 50, 100 (delta read off above).
    if others:
        out["dpacc_pess"] = _dpacc_delta(q, sigma, k, eps_grid, True)
        out["dpacc_opt"] = _dpacc_delta(q, sigma, k, eps_grid, False)
    if not all(math.isnan(x) or 0 <= x <= 1 for x in dl + du):
        problems.append("large eps: delta bound not finite or outside [0, 1]")
    if any(b > a for a, b in zip(du, du[1:])) or any(b > a for a, b in zip(dl, dl[1:])):
        problems.append("large eps: delta bounds increase with eps")
    for i, e in enumerate(eps_grid):
        if dl[i] > du[i]:
            problems.append(f"large eps {e}: delta lower {dl[i]:.3e} > upper {du[i]:.3e}")
        if others and du[i] < out["dpacc_opt"][i] * (1 - 1e-6):
            problems.append(f"large eps {e}: autoacct delta upper {du[i]:.4e} < dp_accounting "
                            f"optimistic {out['dpacc_opt'][i]:.4e}")
        if others and dl[i] > out["dpacc_pess"][i] * (1 + 1e-6):
            problems.append(f"large eps {e}: autoacct delta lower {dl[i]:.4e} > dp_accounting "
                            f"pessimistic {out['dpacc_pess'][i]:.4e}")
    # eps(delta) where the answer is near 50 and 100.
    eps_rows = []
    for e_target in (50.0, 100.0):
        i = eps_grid.index(e_target)
        d = du[i]
        if not 0 < d < 1:
            continue
        m2 = Composition()([PoissonSubsample(q)(Gaussian(sigma))], [k])
        t0 = time.process_time()
        try:
            lo, up = m2.epsilon_bounds(d)
        except MemoryError:
            problems.append(f"large eps: MemoryError in epsilon_bounds({d:.3e})")
            continue
        eps_rows.append({"delta": d, "lower": lo, "upper": up, "time": time.process_time() - t0,
                         "expect_at_most": e_target})
        if not (math.isfinite(lo) and math.isfinite(up) and lo <= up):
            problems.append(f"large eps: eps({d:.3e}) bounds [{lo}, {up}]")
        if up > e_target * (1 + 1e-9):
            problems.append(f"large eps: eps(delta_upper({e_target:g})) = {up:.6g} > {e_target:g} "
                            "(delta and epsilon answers disagree)")
    out["eps_rows"] = eps_rows
    out["problems"] = problems
    return out


def robust_gaussian(others: bool) -> dict:
    """The FFT accountant on Gaussian laws against the closed form, eps up to ~100, delta to 1e-15."""
    warnings.simplefilter("ignore")
    from autoacct.losses import GaussianLoss
    from autoacct.pld import FFTAccountant
    rows, problems = [], []
    for mu, kk in [(0.05, 400), (1.0, 1), (3.0, 1), (0.5, 100), (1.0, 100)]:
        for d in (1e-5, 1e-10, 1e-15):
            acc = FFTAccountant([(GaussianLoss(mu), GaussianLoss(mu), kk)])
            lo, up = acc.epsilon(d, acc.eps_scale(d))
            exact = _exact_gaussian_eps(mu * math.sqrt(kk), d)
            ok = lo <= exact * (1 + 1e-12) + 1e-12 and up >= exact * (1 - 1e-12) - 1e-12
            rows.append({"mu": mu, "k": kk, "delta": d, "lower": lo, "upper": up, "exact": exact, "ok": ok})
            if not ok:
                problems.append(f"Gaussian PLD mu={mu} k={kk} delta={d:g}: [{lo}, {up}] misses exact {exact}")
    return {"rows": rows, "problems": problems}


def robust_single(others: bool) -> dict:
    """One Poisson-subsampled Gaussian step against the exact profile of its loss laws."""
    warnings.simplefilter("ignore")
    import numpy as np

    from autoacct.zoo import Gaussian
    PoissonSubsample = _poisson()
    rows, problems = [], []
    for q, sigma in [(0.01, 1.0), (0.1, 0.5), (0.5, 0.3)]:
        m = PoissonSubsample(q)(Gaussian(sigma))
        parts = m.loss_parts()
        for eps in (0.5, 2.0, 5.0, 10.0):
            try:
                lo, up = PoissonSubsample(q)(Gaussian(sigma)).delta_bounds(eps)
            except MemoryError:
                problems.append(f"single step q={q} sigma={sigma} eps={eps}: MemoryError")
                rows.append({"q": q, "sigma": sigma, "eps": eps, "error": "MemoryError", "ok": False})
                continue
            exact = max(float(np.max(p.profile(np.array([eps])))) for f, b, _ in parts for p in (f, b))
            ok = lo <= exact * (1 + 1e-9) + 1e-300 and up >= exact * (1 - 1e-9)
            rows.append({"q": q, "sigma": sigma, "eps": eps, "lower": lo, "upper": up, "profile": exact,
                         "ok": ok})
            if not ok:
                problems.append(f"single step q={q} sigma={sigma} eps={eps}: [{lo:.4e}, {up:.4e}] "
                                f"misses the loss profile {exact:.4e}")
    return {"rows": rows, "problems": problems}


#: Rounds of the interleaved growth measurement.
GROWTH_ROUNDS = 15


def growth(cases: list[dict], rounds: int = GROWTH_ROUNDS) -> dict:
    """CPU time of autoacct on each case, the cases called in turn, ``rounds`` times over.

    A ratio of two times is only meaningful when both are taken under the same machine
    load; on a shared machine the load changes over seconds, so the cases are interleaved
    in one worker instead of timed in separate ones. Each call starts from construction.
    """
    warnings.simplefilter("ignore")
    run_autoacct(WARMUP)
    times: list[list[float]] = [[] for _ in cases]
    for _ in range(rounds):
        for i, case in enumerate(cases):
            c0 = time.process_time()
            run_autoacct(case)
            times[i].append(time.process_time() - c0)
    return {"min": [min(t) for t in times], "median": [statistics.median(t) for t in times],
            "times": times}


ROBUST = {"small_delta": robust_small_delta, "large_eps": robust_large_eps,
          "gaussian": robust_gaussian, "single_step": robust_single}


# --------------------------------------------------------------------------------------
# Worker plumbing
# --------------------------------------------------------------------------------------

def worker_main(spec: dict) -> dict:
    task = spec["task"]
    try:
        if task == "measure":
            return measure(spec["acct"], spec["case"], tol=spec.get("tol"))
        if task == "equal_accuracy":
            return equal_accuracy(spec["case"], spec["eps_other"], spec["truth"])
        if task == "robust":
            return ROBUST[spec["part"]](spec["others"])
        if task == "growth":
            return growth(spec["cases"])
        raise ValueError(task)
    except MemoryError:
        return {"error": f"MemoryError (peak RSS {_rss_mb():.0f} MB)", "rss_peak_mb": _rss_mb()}
    except Exception as exc:  # noqa: BLE001 -- reported, not hidden
        return {"error": f"{type(exc).__name__}: {exc}"}


def run_worker(spec: dict, args: argparse.Namespace) -> dict:
    """Run one task in a subprocess with a memory cap and a timeout; return its JSON result."""
    if args.in_process:
        spec = dict(spec)
        res = worker_main(spec)
        res.pop("rss_base_mb", None)
        res.pop("rss_peak_mb", None)
        res.pop("mem_mb", None)
        return res
    cap = int(args.mem_limit_gb * (1 << 30))

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, WORKER_SCRIPT, "--worker", json.dumps(spec)],
                              capture_output=True, text=True, timeout=args.timeout, preexec_fn=limit)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        progress = [json.loads(ln[len("@@PROGRESS "):]) for ln in out.splitlines()
                    if ln.startswith("@@PROGRESS ")]
        return {"error": f"timeout after {args.timeout:.0f} s", "progress": progress}
    wall = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT ")]
    if not lines:
        tail = (proc.stderr or "").strip().splitlines()[-3:]
        return {"error": f"worker exit {proc.returncode}: {' | '.join(tail)}", "worker_wall": wall}
    res = json.loads(lines[-1][len("@@RESULT "):])
    res["worker_wall"] = wall
    return res


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------

def _f(x: Any, fmt: str = ".5g") -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return format(x, fmt)


def _t(r: dict | None) -> str:
    if r is None:
        return "-"
    if "error" in r:
        return "FAIL"
    return f"{r['time']:.3g}"


def print_table(title: str, rows: list[dict], others: bool) -> None:
    print(f"\n## {title}\n")
    head = ["case", "eps autoacct", "eps dp_acc", "eps prv (up)", "t auto s", "t dp_acc s", "t prv s",
            "dp/auto", "prv/auto", "auto [lower, upper]", "width/eps", "mem auto MB", "mem dp MB",
            "mem prv MB"]
    if not others:
        head = [h for h in head if "dp" not in h and "prv" not in h]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        a, d, p = row.get("autoacct"), row.get("dp_accounting"), row.get("prv")
        ok = a is not None and "error" not in a
        cells = {
            "case": row["label"],
            "eps autoacct": _f(a["eps"], ".6g") if ok else (a or {}).get("error", "-"),
            "eps dp_acc": (_f(d["eps"], ".6g") if "error" not in d else d["error"]) if d else "-",
            "eps prv (up)": (_f(p["eps"], ".6g") if "error" not in p else p["error"]) if p else "-",
            "t auto s": _t(a), "t dp_acc s": _t(d), "t prv s": _t(p),
            "dp/auto": f"{d['time'] / a['time']:.2f}" if ok and d and "error" not in d else "-",
            "prv/auto": f"{p['time'] / a['time']:.2f}" if ok and p and "error" not in p else "-",
            "auto [lower, upper]": f"[{a['lower']:.6g}, {a['upper']:.6g}]" if ok else "-",
            "width/eps": f"{(a['upper'] - a['lower']) / a['upper']:.2e}" if ok and a["upper"] > 0 else "-",
            "mem auto MB": _f((a or {}).get("mem_mb"), ".0f"),
            "mem dp MB": _f((d or {}).get("mem_mb"), ".0f"),
            "mem prv MB": _f((p or {}).get("mem_mb"), ".0f"),
        }
        print("| " + " | ".join(cells[h] for h in head) + " |")


def print_robustness(rb: dict) -> None:
    print("\n## Robustness (small delta, large epsilon, closed forms)\n")
    problems = []
    sd = rb.get("small_delta", {})
    if "error" in sd:
        problems.append("small delta section failed: " + sd["error"])
    elif sd:
        print(f"Small delta, q={sd['q']} sigma={sd['sigma']} k={sd['k']} (fresh mechanism per delta):\n")
        print("| delta | autoacct [lower, upper] | width/eps | t auto s | autoacct RDP | prv [lower, upper] "
              "| dp_acc optimistic | dp_acc pessimistic |")
        print("|---|---|---|---|---|---|---|---|")
        for r in sd["rows"]:
            w = (r["upper"] - r["lower"]) / r["upper"] if r["upper"] > 0 else float("nan")
            prv = (f"[{r['prv_lower']:.6g}, {r['prv_upper']:.6g}]" if "prv_lower" in r
                   else r.get("prv_error", "-"))
            print(f"| {r['delta']:.0e} | [{r['lower']:.6g}, {r['upper']:.6g}] | {w:.2e} | {r['time']:.3g} | "
                  f"{_f(r.get('rdp'), '.6g')} | {prv} | "
                  f"{_f(r.get('dpacc_opt'), '.6g')} | {_f(r.get('dpacc_pess'), '.6g')} |")
        problems += sd["problems"]
    le = rb.get("large_eps", {})
    if "error" in le:
        problems.append("large epsilon section failed: " + le["error"])
    elif le:
        print(f"\nLarge epsilon, delta(eps), q={le['q']} sigma={le['sigma']} k={le['k']} "
              f"(one delta_bounds call, {le['time']:.3g} s):\n")
        print("| eps | autoacct delta [lower, upper] | dp_acc optimistic | dp_acc pessimistic |")
        print("|---|---|---|---|")
        for i, e in enumerate(le["eps"]):
            print(f"| {e:g} | [{le['delta_lower'][i]:.4e}, {le['delta_upper'][i]:.4e}] | "
                  f"{_f((le.get('dpacc_opt') or [None] * 99)[i], '.4e')} | "
                  f"{_f((le.get('dpacc_pess') or [None] * 99)[i], '.4e')} |")
        for r in le.get("eps_rows", []):
            print(f"\neps({r['delta']:.4e}) in [{r['lower']:.8g}, {r['upper']:.8g}] "
                  f"(should be <= {r['expect_at_most']:g}; {r['time']:.3g} s)")
        problems += le["problems"]
    for part, what in (("gaussian", "FFT accountant on Gaussian laws vs the closed form"),
                       ("single_step", "one subsampled step vs its exact loss profile")):
        g = rb.get(part, {})
        if "error" in g:
            problems.append(f"{part} section failed: " + g["error"])
        elif g:
            ok = sum(1 for r in g["rows"] if r["ok"])
            print(f"\n{what}: {ok}/{len(g['rows'])} certified bound pairs contain the exact value.")
            problems += g["problems"]
    print("\nRobustness problems: " + ("\n* " + "\n* ".join(problems) if problems else "none"))


def suspicious(rows: list[dict]) -> list[str]:
    """Cross-checks that would reveal an unsound or mislabelled bound."""
    out = []
    for row in rows:
        a, d, p = row.get("autoacct"), row.get("dp_accounting"), row.get("prv")
        if not a or "error" in a:
            continue
        lab = row["label"]
        if not a["lower"] <= a["eps"] <= a["upper"] * (1 + 1e-12):
            out.append(f"{lab}: autoacct eps {a['eps']} outside its own bounds [{a['lower']}, {a['upper']}]")
        if p and "error" not in p:
            if a["upper"] < p["lower"]:
                out.append(f"{lab}: autoacct upper {a['upper']:.6g} < prv lower {p['lower']:.6g}")
            if a["lower"] > p["upper"]:
                out.append(f"{lab}: autoacct lower {a['lower']:.6g} > prv upper {p['upper']:.6g}")
        if d and "error" not in d:
            if a["lower"] > d["eps"]:
                out.append(f"{lab}: autoacct certified lower {a['lower']:.6g} > dp_accounting "
                           f"pessimistic {d['eps']:.6g} (one of them is wrong)")
            if a["upper"] < d["eps"] - 2e-4 * max(1.0, d["eps"]):
                out.append(f"{lab}: autoacct upper {a['upper']:.6g} well below dp_accounting "
                           f"{d['eps']:.6g}")
        if a["upper"] > 0 and (a["upper"] - a["lower"]) / a["upper"] > 2e-3:
            out.append(f"{lab}: autoacct bound width {(a['upper'] - a['lower']) / a['upper']:.2e} "
                       "exceeds the 0.2% goal")
    return out


def _autoacct_dir() -> str:
    import importlib.util
    spec = importlib.util.find_spec("autoacct")
    if spec is None or spec.origin is None:
        raise SystemExit("autoacct is not importable; pip install -e . first")
    return os.path.dirname(spec.origin)


def _autoacct_hash() -> str:
    """sha256 over autoacct's .py sources (path and content), to tie numbers to code."""
    import hashlib
    h = hashlib.sha256()
    root = _autoacct_dir()
    for dirpath, dirnames, files in sorted(os.walk(root)):
        dirnames.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                full = os.path.join(dirpath, f)
                h.update(os.path.relpath(full, root).encode())
                with open(full, "rb") as fh:
                    h.update(fh.read())
    return h.hexdigest()[:16]


def _snapshot_autoacct() -> str:
    """Copy the autoacct package aside and make this process and its workers import the copy."""
    import shutil
    import tempfile
    src = _autoacct_dir()
    dest = tempfile.mkdtemp(prefix="autoacct-bench-")
    shutil.copytree(src, os.path.join(dest, "autoacct"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(os.path.abspath(__file__), os.path.join(dest, "run.py"))
    global WORKER_SCRIPT
    WORKER_SCRIPT = os.path.join(dest, "run.py")
    sys.path.insert(0, dest)
    os.environ["PYTHONPATH"] = dest + os.pathsep + os.environ.get("PYTHONPATH", "")
    return dest


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
    snapshot = _snapshot_autoacct() if args.snapshot else None
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
