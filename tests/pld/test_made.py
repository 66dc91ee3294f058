"""The profiles an accountant keeps (pld/made.py): within their share of the memory budget,
their first reads charged to the time budget, and every answer still certified.

Truth: k-fold randomized response by its binomial sum (tests/closed_forms.py); the bracket of
an accountant under the default budget for Poisson-subsampled Gaussians, which an answer
under a smaller budget must contain (both are certified, so the truth is in both).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from closed_forms import rr_delta_closed

from autoacct import AccuracyWarning, BudgetWarning, Composition, Gaussian, PoissonSubsample, RandomizedResponse
from autoacct.limits import limits, predicted_seconds
from autoacct.pld import FFTAccountant
from autoacct.pld.made import _SMALL_READ, KEEP_SHARE
from autoacct.pld.profiles import DiscreteProfile


def _accountant(m) -> FFTAccountant:
    return FFTAccountant([(p.forward, p.backward, p.times) for p in m.loss_parts()])


def _pairs(acc: FFTAccountant) -> list:
    return [pair for made in acc._made for pair in made]


def test_kept_profiles_stay_within_their_share_of_the_memory_budget() -> None:
    """Queries at many deltas and eps make more profiles than a small budget's share holds:
    the oldest are dropped (each direction's newest and the last answer's best kept), and
    every answer still brackets the binomial sum."""
    eps0, k = math.log(0.52 / 0.48), 3000
    acc = _accountant(Composition()([RandomizedResponse(0.52)], [k]))
    memory = 3e5
    adds: list[int] = []
    add = acc._made.add
    acc._made.add = lambda d, pair: (adds.append(d), add(d, pair))[1]  # type: ignore[method-assign]
    # (a budget this small caps the grid: AccuracyWarnings expected)
    with limits(memory=memory), warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        for delta in (1e-3, 1e-5, 1e-7, 1e-9, 1e-11):
            lo, up = acc.epsilon(delta, acc.eps_scale(delta), tol=1e-6)
            assert up == math.inf or rr_delta_closed(eps0, k, up) <= delta * (1 + 1e-9)
            assert rr_delta_closed(eps0, k, lo) >= delta * (1 - 1e-9)
            eps = np.array([0.5 * lo, lo, 2.0 * lo])
            d_lo, d_up = acc.delta(eps, acc.eps_scale(delta), tol=1e-6)
            truth = np.array([rr_delta_closed(eps0, k, e) for e in eps])
            assert np.all(d_lo <= truth * (1 + 1e-9)) and np.all(truth <= d_up * (1 + 1e-9))
        kept = _pairs(acc)
        protected = len(acc._made._best) + acc.directions
        assert acc._made.nbytes() <= KEEP_SHARE * memory or len(kept) <= protected
    # Some were dropped, and the memo forgot them too: it holds only kept profiles.
    assert len(kept) < len(adds)
    memo_profiles = [v for v in acc._memo.values()
                     if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], DiscreteProfile)]
    assert all(any(v is pair for pair in kept) for v in memo_profiles)


def test_a_first_read_the_time_budget_cannot_afford_is_skipped() -> None:
    """After queries at several deltas, a delta query under a small time budget reads the
    profiles it makes and skips older large ones it cannot afford to read: its predicted
    time stays within the budget and its bracket contains the default budget's."""
    m = Composition()([PoissonSubsample(0.01)(Gaussian(0.8))], [1000])
    acc = _accountant(m)
    for delta in (1e-4, 1e-6, 1e-8):
        acc.epsilon(delta, acc.eps_scale(delta), tol=1e-4)
    big = [p for pair in _pairs(acc) for p in pair
           if isinstance(p, DiscreteProfile) and len(p.tilted) > _SMALL_READ]
    assert len(big) >= 4
    eps = np.array([0.5, 1.0, 2.0])
    ref = _accountant(m).delta(eps, 1.0, tol=1e-3)
    before = predicted_seconds()
    with limits(seconds=0.01), pytest.warns(BudgetWarning):
        lo, up = acc.delta(eps, 1.0, tol=1e-3)
    assert predicted_seconds() - before <= 0.01
    assert np.all(lo <= ref[1]) and np.all(ref[0] <= up)
    assert any("grid_deltas" not in p.__dict__ for p in big)


def test_a_read_profile_counts_the_arrays_its_read_made() -> None:
    """A profile's bytes include its monotone deltas and block sums once read, so the
    accountant's held bytes (which every later step's memory check adds) see them."""
    acc = _accountant(Composition()([PoissonSubsample(0.01)(Gaussian(1.0))], [1000]))
    acc.epsilon(1e-6, acc.eps_scale(1e-6))
    held = acc.held_bytes()
    up = acc.profiles(acc.spacing(1.0, 1e-3), math.log(1e-18))[0][0]
    before = up.nbytes
    assert before >= up.tilted.nbytes
    up.delta(np.array([0.3, 1.0]))
    assert up.nbytes >= before + up.tilted.nbytes
    assert acc.held_bytes() > held
