"""Reproducers of the bounded-resource contract: time, peak memory and answer of each.

Every public query should answer within the memory budget (default 1 GB) and in
about ten seconds, with a certified bracket (possibly with an AccuracyWarning).
Each reproducer runs in a fresh interpreter under ``/usr/bin/time -v`` (peak
resident set of the whole process, imports included); not part of the test suite.

    python benchmarks/resources.py                 # every case, one run each
    python benchmarks/resources.py --repeat 3      # best of three wall times
    python benchmarks/resources.py --only 1 6      # some cases
    python benchmarks/resources.py --timeout 300   # give up on a case after 300 s
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: (name, code): the code prints one line, the answer.
CASES: list[tuple[str, str]] = [
    ("1 poisson q=1e-8 eps(1e-300)",
     "r = PoissonSubsample(1e-8)(Gaussian(1.42)).epsilon_bounds(1e-300)"),
    ("2 dpsgd(0.01, 1, 1e9) eps(1e-5)",
     "r = dpsgd(0.01, 1.0, 10**9).epsilon_bounds(1e-5)"),
    ("2p dpsgd(0.01, 1, 1e9) eps(1e-5) via phi",
     "r = dpsgd(0.01, 1.0, 10**9).epsilon(1e-5, via='phi')"),
    ("3 RR(0.5+1e-12) x1e7 eps(1e-300)",
     "r = Composition()([RandomizedResponse(0.500000000001)], [10**7]).epsilon_bounds(1e-300)"),
    ("4 with-replacement(1,1) eps(1e-300)",
     "r = SampleWithReplacement(1, 1)(Gaussian(1)).epsilon_bounds(1e-300)"),
    ("5 without-repl q=1.08e-7 eps(1e-100)",
     "r = SampleWithoutReplacement(1.08e-7)(Gaussian(0.1)).epsilon_bounds(1e-100)"),
    ("6 poisson RR x22 delta(eps(1e-5))",
     "m = Composition()([PoissonSubsample(0.3043)(RandomizedResponse(0.999999999))], [22])\n"
     "e = m.epsilon(1e-5)\n"
     "r = (e, m.delta(e))"),
    ("7a discrete gaussian eps(6.5e-4)",
     "r = DiscreteGaussian(615.0).epsilon_bounds(0.00065)"),
    ("7b dpsgd(0.01, 1, 1e4) eps(1e-14)",
     "r = dpsgd(0.01, 1.0, 10**4).epsilon_bounds(1e-14)"),
    ("8 discrete gaussian x10 eps(1.27e-34)",
     "r = Composition()([DiscreteGaussian(0.0789)], [10]).epsilon_bounds(1.27e-34)"),
    # Found by the long property run: the delta query read ten kept profiles of 2^22 points
    # (32 s of CPU), and the profiles kept with their reads and scipy's FFT plans took 6.7 GB.
    ("9 SWOR RR x5.1e6 eps at 3 deltas, then delta at 3 eps",
     "import numpy as np\n"
     "m = Composition()([SampleWithoutReplacement(1.6336e-4)(RandomizedResponse(0.565269221068337))], [5147714])\n"
     "m.epsilon_bounds(np.array([1e-5, 1e-7, 1e-3]))\n"
     "r = m.delta_bounds(np.array([0.5, 1.0, 2.0]))"),
]

_PRELUDE = """\
import warnings
warnings.simplefilter("always")
from autoacct import *
from autoacct.zoo import DiscreteGaussian
caught = []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
{body}
        print("ANSWER", r)
    except Exception as exc:
        print("ANSWER", type(exc).__name__ + ":", str(exc)[:120])
print("WARN", len(caught), caught[0].category.__name__ if caught else "")
"""


def run(code: str, timeout: float) -> tuple[float, float, str, str]:
    """Wall seconds, peak RSS (MB), the answer and the warnings of ``code`` in a fresh interpreter."""
    body = "\n".join("        " + line for line in code.splitlines())
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = ["/usr/bin/time", "-v", sys.executable, "-c", _PRELUDE.format(body=body)]
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - t0, float("nan"), f"timed out after {timeout:g} s", ""
    wall = time.perf_counter() - t0
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr)
    peak = int(rss.group(1)) / 1024 if rss else float("nan")
    answer = next((ln[7:] for ln in out.stdout.splitlines() if ln.startswith("ANSWER ")), "")
    warn = next((ln[5:] for ln in out.stdout.splitlines() if ln.startswith("WARN ")), "")
    if not answer:
        answer = "crashed: " + (out.stderr.strip().splitlines() or ["?"])[-1][:100]
    return wall, peak, answer, warn


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=1, help="runs per case; the best wall time is shown")
    ap.add_argument("--only", nargs="*", default=None, help="case name prefixes to run")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds before a case is given up")
    args = ap.parse_args()
    print("| case | wall s | peak RSS MB | answer | warnings |")
    print("|---|---|---|---|---|")
    for name, code in CASES:
        if args.only and not any(name.startswith(p) for p in args.only):
            continue
        runs = [run(code, args.timeout) for _ in range(args.repeat)]
        wall = min(r[0] for r in runs)
        peak = max(r[1] for r in runs)
        _, _, answer, warn = runs[0]
        print(f"| {name} | {wall:.1f} | {peak:.0f} | {answer} | {warn} |", flush=True)


if __name__ == "__main__":
    main()
