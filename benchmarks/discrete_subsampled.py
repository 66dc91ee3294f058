"""Time 100 compositions of Poisson-subsampled discrete laws against the Gaussian.

Issue 21, item 4: ``PoissonSubsample(0.01)(DiscreteGaussian(2.0))`` composed 100 times
took seconds where the same with ``Gaussian(2.0)`` takes milliseconds. This script
prints, in one process, cold (first call in the process for that mechanism) and warm
(median of repeats on a fresh but equal mechanism) times and the ratio of the warm time to
that of the subsampled Gaussian, measured alternately with it.

Binomial is not a base here: its two directions differ, so it cannot be subsampled as a whole.

Run: ``PYTHONPATH=$PWD python benchmarks/discrete_subsampled.py``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from autoacct import Composition
from autoacct.mechanism import Mechanism
from autoacct.subsampling import PoissonSubsample, SampleWithoutReplacement
from autoacct.zoo import DiscreteGaussian, DiscreteLaplace, Gaussian

DELTA = 1e-6
COUNT = 100
REPEATS = 5


def _time(build: Callable[[], Mechanism]) -> tuple[float, float, float, tuple[float, float]]:
    """Cold time, median warm time, the subsampled Gaussian's median warm time measured
    alternately with it (the machine's load drifts), and the bracket, for ``COUNT`` steps."""
    start = time.perf_counter()
    bounds = Composition()([build()], [COUNT]).epsilon_bounds(DELTA)
    cold = time.perf_counter() - start
    warm, ref = [], []
    for _ in range(REPEATS):
        for out, make in ((warm, build), (ref, CASES[REFERENCE])):
            start = time.perf_counter()
            Composition()([make()], [COUNT]).epsilon_bounds(DELTA)
            out.append(time.perf_counter() - start)
    return cold, statistics.median(warm), statistics.median(ref), (float(bounds[0]), float(bounds[1]))


REFERENCE = "Poisson(0.01) Gaussian(2.0)"
CASES: dict[str, Callable[[], Mechanism]] = {
    "Poisson(0.01) Gaussian(2.0)": lambda: PoissonSubsample(0.01)(Gaussian(2.0)),
    "Poisson(0.01) DiscreteGaussian(2.0)": lambda: PoissonSubsample(0.01)(DiscreteGaussian(2.0)),
    "Poisson(0.01) DiscreteLaplace(0.5)": lambda: PoissonSubsample(0.01)(DiscreteLaplace(0.5)),
    "Poisson(0.01) DiscreteGaussian(0.8)": lambda: PoissonSubsample(0.01)(DiscreteGaussian(0.8)),
    "Poisson(0.01) DiscreteGaussian(10.0)": lambda: PoissonSubsample(0.01)(DiscreteGaussian(10.0)),
    "WOR(0.01) Gaussian(2.0)": lambda: SampleWithoutReplacement(0.01)(Gaussian(2.0)),
    "WOR(0.01) DiscreteGaussian(2.0)": lambda: SampleWithoutReplacement(0.01)(DiscreteGaussian(2.0)),
}


def main() -> None:
    print(f"{'case':40s} {'cold s':>9s} {'warm s':>9s} {'ratio':>7s}  bracket")
    for name, build in CASES.items():
        cold, warm, ref, (lo, hi) = _time(build)
        print(f"{name:40s} {cold:9.3f} {warm:9.3f} {warm / ref:7.1f}  [{lo:.6f}, {hi:.6f}]")


if __name__ == "__main__":
    main()
