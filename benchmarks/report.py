"""The printed tables and the checks of suspicious rows."""

from __future__ import annotations

import math
from typing import Any


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
