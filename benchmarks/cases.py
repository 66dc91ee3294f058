"""The benchmark cases: the DP-SGD matrix, the k sweep and the heterogeneous run."""

from __future__ import annotations

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
