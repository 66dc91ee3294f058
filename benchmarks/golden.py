"""Golden values: about 200 public queries, recorded before a refactor and checked after it.

A structural change must keep every public number. This script asks the same
queries through the public API only (mechanisms, routes, bounds, tradeoffs, RDP,
calibrations, the benchmark matrix) and either records them or compares them with
a recorded file, value by value (bitwise; an exception's type counts as a value).

    python benchmarks/golden.py --record benchmarks/golden.json
    python benchmarks/golden.py --check benchmarks/golden.json

It is a regression guard for refactors, not a test of correctness: the values
are whatever the recorded tree computed. Not run in CI (it takes about half a minute).
It checks the tree it belongs to (its parent directory goes first on the import path),
not an installed autoacct: run from a worktree, it checks that worktree.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autoacct import dpsgd, dpsgd_schedule
from autoacct.calibrators import calibrate, calibrate_dpsgd, calibrate_dpsgd_steps, calibrate_gaussian, gdp_mu
from autoacct.zoo import (
    ZCDP,
    ApproxDP,
    Binomial,
    Composition,
    DiscreteGaussian,
    DiscreteLaplace,
    ExponentialMechanism,
    Gaussian,
    GaussianSVT,
    Laplace,
    LaplaceSVT,
    NoisyGD,
    PoissonSubsample,
    PureDP,
    RandomizedResponse,
    SampleWithoutReplacement,
    SampleWithReplacement,
)

MECHANISMS: list[tuple[str, Callable[[], Any]]] = [
    ("gaussian", lambda: Gaussian(1.3)),
    ("gaussian-composed", lambda: Composition()([Gaussian(4.0), Gaussian(9.0)], [20, 30])),
    ("laplace", lambda: Laplace(0.7)),
    ("laplace-composed", lambda: Composition()([Laplace(3.0)], [40])),
    ("rr", lambda: RandomizedResponse(0.8)),
    ("puredp-composed", lambda: Composition()([PureDP(0.2)], [60])),
    ("approxdp", lambda: ApproxDP(0.5, 1e-7)),
    ("approxdp-composed", lambda: Composition()([ApproxDP(0.1, 1e-8)], [100])),
    ("zcdp", lambda: ZCDP(0.3)),
    ("mixed", lambda: Composition()([Gaussian(5.0), PureDP(0.1), Laplace(10.0)], [3, 2, 4])),
    ("exponential", lambda: ExponentialMechanism(1.0)),
    ("exponential-composed", lambda: Composition()([ExponentialMechanism(0.3)], [50])),
    ("binary-counting", lambda: ExponentialMechanism.binary_counting(0.5, 60, 20)),
    ("binomial", lambda: Binomial(200, 0.5, [1, 1, 2])),
    ("discrete-gaussian", lambda: DiscreteGaussian(2.0)),
    ("discrete-laplace", lambda: Composition()([DiscreteLaplace(3.0)], [10])),
    ("gaussian-svt", lambda: GaussianSVT(2.0, 2.0, 10)),
    ("laplace-svt", lambda: LaplaceSVT(2.0, 4.0)),
    ("laplace-svt-monotone", lambda: LaplaceSVT(1.5, 3.0, 2, monotone=True)),
    ("noisy-gd", lambda: NoisyGD([1.0, 2.0, 3.0])),
    ("poisson-gaussian", lambda: Composition()([PoissonSubsample(0.02)(Gaussian(1.2))], [500])),
    ("poisson-laplace", lambda: Composition()([PoissonSubsample(0.05)(Laplace(2.0))], [100])),
    ("poisson-rr", lambda: PoissonSubsample(0.1)(RandomizedResponse(0.75))),
    ("poisson-dgauss", lambda: Composition()([PoissonSubsample(0.1)(DiscreteGaussian(3.0))], [5])),
    ("swor-gaussian", lambda: Composition()([SampleWithoutReplacement(0.01)(Gaussian(1.0))], [1000])),
    ("swor-laplace", lambda: SampleWithoutReplacement(0.1)(Laplace(1.0))),
    ("swr-gaussian", lambda: Composition()([SampleWithReplacement(100, 10000)(Gaussian(1.5))], [200])),
    ("dpsgd", lambda: dpsgd(sample_rate=0.01, noise_multiplier=1.1, steps=10_000)),
    ("dpsgd-swor", lambda: dpsgd(dataset_size=60000, batch_size=256, epochs=3,
                                 noise_multiplier=1.0, sampling="without-replacement")),
    ("dpsgd-schedule", lambda: dpsgd_schedule([(0.01, 1.0, 300), (0.02, 1.5, 200), (0.01, 1.0, 100)])),
]

ROUTE_ORDER = ("exact", "pld", "phi", "rdp")

#: The DP-SGD benchmark matrix and the k sweep of benchmarks/run.py.
MATRIX = [(0.01, 1.5, 10_000, 1e-5), (256 / 60000, 1.1, 14_040, 1e-5), (1e-3, 0.8, 100_000, 1e-5),
          (0.1, 2.0, 100_000, 1e-6), (0.01, 1.0, 1_000_000, 1e-6)]
SWEEP = [(0.01, 1.0, 10 ** e, 1e-5) for e in range(1, 8)]


def _value(fn: Callable[[], Any]) -> Any:
    """A JSON-able record of fn(): floats as their repr, arrays as lists, errors by type."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn()
    except Exception as exc:  # noqa: BLE001 - an error is a recorded outcome
        return {"error": type(exc).__name__}
    return _plain(out)


def _plain(x: Any) -> Any:
    if isinstance(x, (tuple, list)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return [_plain(v) for v in x.tolist()]
    if isinstance(x, (float, np.floating)):
        return repr(float(x))
    if isinstance(x, (int, np.integer, str, bool)) or x is None:
        return x
    if hasattr(x, "__dict__") or hasattr(x, "__dataclass_fields__"):
        return repr(x)
    return repr(x)


def queries() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, make in MECHANISMS:
        m = make()
        routes = tuple(m.routes)
        out[f"{name}.routes"] = list(routes)
        out[f"{name}.params"] = {k: repr(float(v)) for k, v in m.params.items()}
        out[f"{name}.epsilon(1e-5)"] = _value(lambda: m.epsilon(1e-5))
        out[f"{name}.epsilon_bounds(1e-6)"] = _value(lambda: m.epsilon_bounds(1e-6))
        out[f"{name}.delta([0.5,1,2])"] = _value(lambda: m.delta([0.5, 1.0, 2.0]))
        out[f"{name}.delta_bounds(1.0)"] = _value(lambda: m.delta_bounds(1.0))
        out[f"{name}.tradeoff"] = _value(lambda: m.tradeoff([1e-4, 0.01, 0.1, 0.5]))
        if "rdp" in routes:
            out[f"{name}.rdp"] = _value(lambda: m.rdp([1.5, 2.0, 8.0, 32.0]))
        for route in ROUTE_ORDER:
            if route in routes:
                fresh = make()
                out[f"{name}.epsilon(1e-6,{route})"] = _value(lambda: fresh.epsilon(1e-6, via=route))
                out[f"{name}.delta(1.0,{route})"] = _value(lambda: fresh.delta(1.0, via=route))
    for q, s, k, d in MATRIX + SWEEP:
        m = Composition()([PoissonSubsample(q)(Gaussian(s))], [k])
        out[f"matrix q={q} s={s} k={k}.epsilon_bounds({d})"] = _value(lambda: m.epsilon_bounds(d))
    loose = dpsgd(sample_rate=0.01, noise_multiplier=1.1, steps=10_000)
    out["dpsgd.tol=1e-2"] = _value(lambda: loose.epsilon_bounds(1e-5, tol=1e-2))
    out["calibrate_gaussian(1,1e-5)"] = _value(lambda: calibrate_gaussian(1.0, 1e-5))
    out["calibrate_gaussian(0.5,1e-6,10)"] = _value(lambda: calibrate_gaussian(0.5, 1e-6, 10))
    out["gdp_mu(1,1e-5)"] = _value(lambda: gdp_mu(1.0, 1e-5))
    out["calibrate_dpsgd(2,1e-5,q=0.01,k=1000)"] = _value(
        lambda: calibrate_dpsgd(2.0, 1e-5, sample_rate=0.01, steps=1000))
    out["calibrate_dpsgd(1,1e-5,swor)"] = _value(
        lambda: calibrate_dpsgd(1.0, 1e-5, sample_rate=0.01, steps=500, sampling="without-replacement"))
    out["calibrate_dpsgd_steps(3,1e-5,q=0.01,s=1.1)"] = _value(
        lambda: calibrate_dpsgd_steps(3.0, 1e-5, sample_rate=0.01, noise_multiplier=1.1))
    out["calibrate(laplace)"] = _value(
        lambda: calibrate(lambda b: Composition()([Laplace(b)], [10]), epsilon=2.0, delta=1e-6))
    out["calibrate(subsampled laplace)"] = _value(
        lambda: calibrate(lambda b: Composition()([PoissonSubsample(0.05)(Laplace(b))], [50]),
                          epsilon=1.0, delta=1e-6))
    out["sanity"] = repr(math.pi)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--record", metavar="FILE")
    group.add_argument("--check", metavar="FILE")
    args = ap.parse_args(argv)
    got = queries()
    if args.record:
        with open(args.record, "w") as f:
            json.dump(got, f, indent=1, sort_keys=True)
        print(f"recorded {len(got)} queries in {args.record}")
        return 0
    with open(args.check) as f:
        want = json.load(f)
    diffs = [k for k in sorted(set(want) | set(got)) if want.get(k) != got.get(k)]
    for k in diffs:
        print(f"{k}\n  recorded {want.get(k)}\n  now      {got.get(k)}")
    print(f"{len(want)} recorded, {len(got)} now, {len(diffs)} differ")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
