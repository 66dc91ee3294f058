"""Heterogeneous compositions (many distinct laws in one direction) in the FFT accountant.

Every law of a schedule of distinct steps is its own component of one composition. The
answers are checked against independent references: the analytic Gaussian (distinct
Gaussian laws compose to the Gaussian with mu = sqrt(sum mu_i^2); Balle and Wang 2018),
dp_accounting's pessimistic and optimistic PLDs (an upper and a lower bound on the truth)
for a few distinct DP-SGD steps, and the compositions of a schedule's extreme steps, which
bracket it (a smaller sampling rate and a larger noise multiplier give a step that is a
post-processing of the other). The budget check of a direction's discretisation is one
step, whatever the number of laws (it was one per law, each summing every kept array).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from closed_forms import gaussian_eps_closed

from autoacct import AccuracyWarning, Composition, Gaussian, PoissonSubsample
from autoacct.limits import query_clock
from autoacct.losses import GaussianLoss
from autoacct.pld import FFTAccountant, accountant, costs
from autoacct.pld.components import LowerPld

pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")


class _UnmergedGaussian(GaussianLoss):
    """The Gaussian law without its GDP flag: the accountant cannot merge such laws into one
    Gaussian, so it composes them as distinct components on one lattice."""

    def __init__(self, mu: float) -> None:
        super().__init__(mu)
        self.gdp_mu = None


def _schedule(n: int) -> list[tuple[float, float]]:
    """n distinct (q, sigma): q in [0.005, 0.02], sigma in [0.8, 2.0], shuffled (the benchmark's)."""
    return [(0.005 + 0.015 * ((i * 7919) % n) / (n - 1), 0.8 + 1.2 * ((i * 104729) % n) / (n - 1))
            for i in range(n)]


def _bounds(parts, delta: float) -> tuple[float, float]:
    acc = FFTAccountant(parts)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        return acc.epsilon(delta, acc.eps_scale(delta))


@pytest.mark.parametrize("delta", [1e-5, 1e-10])
def test_distinct_gaussian_laws_compose_to_the_analytic_gaussian(delta):
    mus = [0.05 + 0.01 * i for i in range(40)]
    assert len({m for m in mus}) == 40
    lower, upper = _bounds([(_UnmergedGaussian(m), _UnmergedGaussian(m), 1) for m in mus], delta)
    truth = gaussian_eps_closed(math.sqrt(sum(m * m for m in mus)), delta)
    assert lower <= truth <= upper
    assert upper - lower <= 1e-3 * upper


def test_distinct_dpsgd_steps_agree_with_dp_accounting():
    steps = [(0.01, 1.0, 40), (0.02, 1.5, 30), (0.005, 0.8, 50), (0.05, 2.0, 20)]
    delta = 1e-6
    m = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s, _ in steps], [k for _, _, k in steps])
    ours_lo, ours_up = m.epsilon_bounds(delta)
    refs = []
    for pessimistic in (True, False):
        composed = None
        for q, s, k in steps:
            one = pld.from_gaussian_mechanism(s, sampling_prob=q, value_discretization_interval=2e-4,
                                              pessimistic_estimate=pessimistic).self_compose(k)
            composed = one if composed is None else composed.compose(one)
        refs.append(composed.get_epsilon_for_delta(delta))
    ref_up, ref_lo = refs
    assert ours_up >= ref_lo - 1e-9           # never below the truth
    assert ours_lo <= ref_up + 1e-9           # the lower end is below the truth too
    assert ours_up <= ref_up * (1 + 1e-3)     # and within 0.1% of it


def test_a_schedule_lies_between_its_extreme_steps_and_within_tol():
    steps = _schedule(300)
    m = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps])
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = m.epsilon_bounds(1e-5)
    assert upper - lower <= 1e-3 * upper
    least = Composition()([PoissonSubsample(0.005)(Gaussian(2.0))], [300]).epsilon_bounds(1e-5)
    most = Composition()([PoissonSubsample(0.02)(Gaussian(0.8))], [300]).epsilon_bounds(1e-5)
    assert least[0] <= upper and lower <= most[1]
    # Far inside: a schedule spread over the whole box is not near either corner.
    assert least[1] < lower and upper < most[0]


def _recorded_checks(monkeypatch) -> list[str]:
    """The steps the accountant asks the budget about, by name (see :func:`afford`)."""
    steps: list[str] = []
    real = accountant.afford

    def recording(nbytes: float, seconds: float, what: str) -> None:
        steps.append(what)
        real(nbytes, seconds, what)

    monkeypatch.setattr(accountant, "afford", recording)
    monkeypatch.setattr(costs, "afford", recording)  # where the laws' checks are made
    return steps


def test_discretising_many_laws_checks_the_budget_once_per_direction(monkeypatch):
    steps = _recorded_checks(monkeypatch)
    parts = [(p.forward, p.backward, p.times) for q, s in _schedule(200)
             for p in PoissonSubsample(q)(Gaussian(s)).loss_parts()]
    acc = FFTAccountant(parts)
    acc.epsilon(1e-5, acc.eps_scale(1e-5))
    discretising = [w for w in steps if w.startswith("discretising")]
    # One check per direction and lattice (each check sums every kept array), not one per law.
    assert 0 < len(discretising) <= 4
    assert all(w.startswith("discretising 200 laws") for w in discretising)


def test_lazily_made_lower_plds_of_many_laws_share_one_budget_check(monkeypatch):
    steps = _recorded_checks(monkeypatch)
    parts = [(p.forward, p.backward, p.times) for q, s in _schedule(100)
             for p in PoissonSubsample(q)(Gaussian(s)).loss_parts()]
    acc = FFTAccountant(parts)
    with query_clock(acc.held_bytes):
        comps = acc.components(2.0 ** -8, math.log(1e-18), 0, LowerPld.LAZY)
        lowers = [c.lower for c in comps]
    assert [w.split(" on ")[0] for w in steps] == ["discretising 100 laws"] * 2  # uppers, then lowers
    # The same lower PLDs as those made with the upper ones.
    eager = FFTAccountant(parts).components(2.0 ** -8, math.log(1e-18), 0, LowerPld.NOW)
    assert all(np.array_equal(a.masses, c.lower.masses) for a, c in zip(lowers, eager))
