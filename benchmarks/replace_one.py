"""Replace-one samplers at tiny rates: the symmetric pair's own eps(delta) bracket, two trees.

    python benchmarks/replace_one.py [OTHER_TREE] [--quick]

Scans ``SampleWithoutReplacement(q)(Gaussian(sigma))`` (q in {1e-4, 1e-3, 1e-2}, sigma in
{0.7, 1, 2}, k in {100, 1e4, 1e6}, kq at most 1e4), ``SampleWithReplacement(b, 1e5)
(Gaussian(sigma))`` (b in {10, 100}, sigma in {0.7, 1}, k in {1e4, 1e5}) and
``SampleWithoutReplacement(q)(DiscreteGaussian(sigma))`` (q in {1e-4, 1e-3}, sigma in {1, 3},
k in {1e4, 1e5, 1e6}, kq at most 1e3), delta in {1e-6, 1e-10}, each composed k times. The
public lower end of these compositions is that of a pair one fixed pair of datasets attains,
wider by design (autoacct/subsampling/without_replacement.py); what the accountant refines is
the bracket on the dominating symmetric pair, which this prints: the PLD accountant's own
(lower, upper) at the default tol, the CPU seconds of that query in a fresh process (after a
warm-up query), and the warnings it gave. With OTHER_TREE
each case runs in both trees, alternately. ``--quick``: delta 1e-10 and k of 1e4 or more
only. Not run in CI.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
import warnings

from trees import parse_or_work, run_in_tree, trees


def _cases(quick: bool) -> list[tuple]:
    deltas = (1e-10,) if quick else (1e-6, 1e-10)
    ks = (10**4, 10**6) if quick else (100, 10**4, 10**6)
    out: list[tuple] = [("wor", q, s, k, d) for q, s, k, d in itertools.product((1e-4, 1e-3, 1e-2), (0.7, 1.0, 2.0),
                                                                                ks, deltas) if q * k <= 1e4]
    out += [("wr", b, s, k, d) for b, s, k, d in itertools.product((10, 100), (0.7, 1.0), (10**4, 10**5), deltas)]
    out += [("wor-dg", q, s, k, d) for q, s, k, d in itertools.product((1e-4, 1e-3), (1.0, 3.0), (10**4, 10**5, 10**6),
                                                                        deltas) if q * k <= 1e3]
    return out


def _worker(case: list) -> None:
    from autoacct import routes
    from autoacct.zoo import Composition, DiscreteGaussian, Gaussian, SampleWithoutReplacement, SampleWithReplacement

    kind, a, sigma, k, delta = case
    sampler = SampleWithReplacement(int(a), 100_000) if kind == "wr" else SampleWithoutReplacement(a)
    warm = Composition()([SampleWithoutReplacement(0.2)(Gaussian(3.0))], [3])
    routes.PLD.accountant(warm).epsilon(1e-3, 1.0)
    m = Composition()([sampler((DiscreteGaussian if kind == "wor-dg" else Gaussian)(sigma))], [int(k)])
    acc = routes.PLD.accountant(m)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c0 = time.thread_time()
        acc.epsilon(delta, acc.eps_scale(delta))
        cpu = time.thread_time() - c0
    lo, up = acc._best_epsilon(delta)
    print(json.dumps({"cpu": cpu, "bounds": [lo, up], "warnings": len(caught)}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = parse_or_work(ap, _worker)
    if args is None:
        return 0
    compared = trees(args.other)
    totals = dict.fromkeys(compared, 0.0)
    for case in _cases(args.quick):
        row = [" ".join(f"{x:g}" if isinstance(x, float) else str(x) for x in case)]
        for name, tree in compared.items():
            got = run_in_tree(__file__, tree, case)
            lo, up = got["bounds"]
            totals[name] += got["cpu"]
            width = (up - lo) / up if up > 0 else 0.0
            row.append(f"{name} [{lo:.6g}, {up:.6g}] width {width:.2e} {got['cpu']:.3f} s warned {got['warnings']}")
        print(" | ".join(row), flush=True)
    print("total CPU s: " + ", ".join(f"{name} {t:.2f}" for name, t in totals.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
