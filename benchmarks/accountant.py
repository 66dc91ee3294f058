"""What a training loop pays for asking the ledger often: the issue's requirement.

Runs 10,000 steps of ``Accountant.step_dpsgd(1.1, 0.01)`` and asks epsilon(1e-5) after every
100 steps (100 queries), against one query at the end on a fresh ledger of the same 10,000
steps. The requirement is a ratio of at most 10. Both are timed warm (after a query of a
different run, so imports and one-off set-up are not counted), best of ``--repeat`` rounds.
Also reports where the time of the queries goes (``--profile``). Not part of the test suite.

    python benchmarks/accountant.py [--repeat 3] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from autoacct import Accountant

SIGMA, Q, STEPS, EVERY, DELTA = 1.1, 0.01, 10_000, 100, 1e-5


def every(n: int = EVERY) -> tuple[float, float]:
    """Seconds spent in the steps and the queries of a run queried every ``n`` steps; last epsilon."""
    acc = Accountant()
    eps = 0.0
    t0 = time.perf_counter()
    for i in range(1, STEPS + 1):
        acc.step_dpsgd(SIGMA, Q)
        if i % n == 0:
            eps = acc.epsilon(DELTA)
    return time.perf_counter() - t0, eps


def once() -> tuple[float, float]:
    acc = Accountant()
    t0 = time.perf_counter()
    for _ in range(STEPS):
        acc.step_dpsgd(SIGMA, Q)
    eps = acc.epsilon(DELTA)
    return time.perf_counter() - t0, eps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="profile the queried run")
    args = ap.parse_args()
    Accountant().step_dpsgd(1.3, 0.02, 50).epsilon(1e-6)  # warm-up on another run
    t_once, eps_once = min(once() for _ in range(args.repeat))
    t_every, eps_every = min(every() for _ in range(args.repeat))
    acc = Accountant()
    t0 = time.perf_counter()
    for _ in range(STEPS):
        acc.step_dpsgd(SIGMA, Q)
    t_steps = time.perf_counter() - t0
    assert eps_once == eps_every
    print(f"{STEPS} steps alone: {t_steps:.3f} s")
    print(f"one query at the end (steps included): {t_once:.3f} s, epsilon = {eps_once:.6g}")
    print(f"a query every {EVERY} steps ({STEPS // EVERY} queries): {t_every:.3f} s")
    print(f"ratio, whole loops: {t_every / t_once:.1f} (requirement: <= 10)")
    print(f"ratio, queries only: {(t_every - t_steps) / (t_once - t_steps):.1f}")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        every()
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()
