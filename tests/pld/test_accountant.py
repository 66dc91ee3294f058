"""The FFT accountant's refinement passes (autoacct/pld/accountant.py)."""

from __future__ import annotations

import autoacct
from autoacct.pld.accountant import FFTAccountant


def test_a_settled_direction_is_not_composed_again(monkeypatch):
    # Sweep case 59 of benchmarks/sweep.py: the normal approximation puts the smaller
    # direction first, and the first pass leaves the bracket at 2.5e-3 wide. Its second pass
    # must refine the larger direction only: the smaller one's upper bound is already below
    # the larger one's lower bound, so no finer grid of it can move eps. Every composition
    # is asked for a direction that is not settled, and the answer is within tol.
    q, sigma, k, delta = 1.2e-05, 0.92, 3632059, 7.44e-11
    settled = []
    real = FFTAccountant.aimed_profiles

    def spy(self, h, log_eta, query, directions, grid_tol, lower=True):
        settled.extend(d for d in directions if self._settled(d, delta))
        return real(self, h, log_eta, query, directions, grid_tol, lower)
    monkeypatch.setattr(FFTAccountant, "aimed_profiles", spy)
    lower, upper = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert not settled
    assert upper - lower <= 1e-3 * upper


def _passes(monkeypatch, q, sigma, k, delta, weigh=True):
    """The directions of each fine pass and of each coarse (upper-only) pass of one eps(delta)
    query, and its bracket; without ``weigh`` every second direction gets its coarse pass."""
    fine, coarse = [], []
    real = FFTAccountant.aimed_profiles

    def spy(self, h, log_eta, query, directions, grid_tol, lower=True):
        (fine if lower else coarse).extend(directions)
        return real(self, h, log_eta, query, directions, grid_tol, lower)
    monkeypatch.setattr(FFTAccountant, "aimed_profiles", spy)
    if not weigh:
        monkeypatch.setattr(FFTAccountant, "_coarse_may_settle", lambda self, *args: True)
    bounds = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    return set(fine), coarse, bounds


def test_a_coarse_pass_is_skipped_where_the_directions_are_close(monkeypatch):
    # Sweep case 8 of benchmarks/sweep.py: the two directions' Chernoff bounds are within 1%
    # (the second one's above), so a coarse pass, about 4 tol wide, cannot settle the second
    # direction below the first one's lower bound; both go to the fine grid at once. The
    # bracket is the one the coarse pass would have led to.
    case = (0.0009618625218561315, 26.178269100928798, 204, 4.2803147951757294e-07)
    fine, coarse, bounds = _passes(monkeypatch, *case)
    assert fine == {0, 1} and not coarse
    assert bounds[1] - bounds[0] <= 1e-3 * bounds[1]
    with monkeypatch.context() as m:
        fine_old, coarse_old, bounds_old = _passes(m, *case, weigh=False)
    assert fine_old == {0, 1} and coarse_old  # the pass skipped was wasted
    assert bounds == bounds_old


def test_a_coarse_pass_still_settles_a_direction_well_below(monkeypatch):
    # Sweep case 7: the second direction's Chernoff bound is 3% below the first one's, and a
    # coarse pass settles it: it never goes to the fine grid.
    fine, coarse, bounds = _passes(monkeypatch, 0.01099707581430652, 4.987334787103255, 518, 8.37232260804884e-05)
    assert len(fine) == 1 and coarse and not fine & set(coarse)
    assert bounds[1] - bounds[0] <= 1e-3 * bounds[1]


def test_a_split_direction_skips_the_whole_laws_chernoff_bound(monkeypatch):
    # Issue 18's named case q = 1e-4, sigma = 0.1, k = 10, delta = 1e-5: the add direction's
    # law spans 2e6 cells on the lattice of its Chernoff bound (0.5 s), while its split terms
    # take 0.01 s. It goes to the fine grid at once; no Chernoff bound or coarse pass is
    # made for it, and the bracket is within tol (the remove direction decides eps, 63.3).
    chernoffs = []
    real = FFTAccountant._chernoff

    def spy(self, d, h, log_eta):
        chernoffs.append(d)
        return real(self, d, h, log_eta)
    monkeypatch.setattr(FFTAccountant, "_chernoff", spy)
    fine, coarse, (lower, upper) = _passes(monkeypatch, 1e-4, 0.1, 10, 1e-5)
    assert fine == {0, 1} and not coarse and 1 not in chernoffs
    assert upper - lower <= 1e-3 * upper and 63.2 < lower
