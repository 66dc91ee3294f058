"""Robustness checks: small delta, large epsilon, soundness against closed forms, k growth."""

from __future__ import annotations

import math
import statistics
import time
import warnings

from runners import WARMUP, run_autoacct, run_prv


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
