"""PermuteAndFlip against an independent enumeration of the permute-and-flip procedure."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from closed_forms import rr_eps_closed

from autoacct.zoo import PermuteAndFlip, PureDP


def _permute_and_flip(utilities: list[float], eps: float, sensitivity: float) -> np.ndarray:
    """Output probabilities of permute-and-flip, enumerating the visiting orders: in each order
    candidate r is released with probability exp(eps (u_r - max u) / (2 Delta)) if reached."""
    n = len(utilities)
    top = max(utilities)
    accept = [math.exp(eps * (u - top) / (2 * sensitivity)) for u in utilities]
    out = np.zeros(n)
    orders = list(itertools.permutations(range(n)))
    for order in orders:
        reach = 1.0
        for r in order:
            out[r] += reach * accept[r] / len(orders)
            reach *= 1.0 - accept[r]
    return out


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
def test_two_candidate_instance_is_the_attained_randomized_response(eps: float) -> None:
    p = _permute_and_flip([1.0, 0.0], eps, 1.0)
    q = _permute_and_flip([0.0, 1.0], eps, 1.0)
    log_odds = math.log(p[0] / q[0])
    m = PermuteAndFlip(eps)
    assert log_odds == pytest.approx(m.attained_log_odds(), rel=1e-12)
    for delta in (1e-2, 1e-6):
        lo, up = m.epsilon_bounds(delta)
        truth_instance = rr_eps_closed(log_odds, 1, delta)
        assert lo <= truth_instance <= lo + 1e-9
        # The eps-DP envelope: randomized response with log-odds eps.
        assert rr_eps_closed(eps, 1, delta) <= up == pytest.approx(PureDP(eps).epsilon(delta), rel=1e-12)


@pytest.mark.parametrize("utilities_d, utilities_d2", [
    ([3.0, 2.5, 0.0], [2.0, 3.5, 1.0]),
    ([0.0, 0.0, 1.0, 0.2], [1.0, 1.0, 0.0, 0.0]),
])
def test_every_instance_lies_below_the_upper_bound(utilities_d: list, utilities_d2: list) -> None:
    """Utilities changing by at most Delta = 1: the instance's exact delta(eps') never exceeds the bound."""
    eps = 1.3
    p = _permute_and_flip(utilities_d, eps, 1.0)
    q = _permute_and_flip(utilities_d2, eps, 1.0)
    m = PermuteAndFlip(eps)
    for e in (0.0, 0.3, 0.9):
        exact = max(np.maximum(p - math.exp(e) * q, 0).sum(), np.maximum(q - math.exp(e) * p, 0).sum())
        assert exact <= m.delta(e)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf, "1"])
def test_bad_eps_is_named(bad: object) -> None:
    with pytest.raises((ValueError, TypeError), match="eps"):
        PermuteAndFlip(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(("eps", "k"), [(0.2, 30), (2.0, 10)])
def test_composed_permute_and_flip_lower_end_is_its_instances(eps: float, k: int) -> None:
    # The two-candidate instance (log-odds log(2 e^{eps/2} - 1)) at every run: the composition's
    # lower end is within 1e-6 below its k-fold eps (a binomial sum); it was one run's, 0.19
    # at eps = 0.2, k = 30.
    from autoacct.zoo import Composition

    lo, up = Composition()([PermuteAndFlip(eps)], [k]).epsilon_bounds(1e-5)
    instance = rr_eps_closed(math.log(2.0 * math.exp(eps / 2.0) - 1.0), k, 1e-5)
    assert instance * (1 - 1e-6) <= lo <= instance * (1 + 1e-9) and lo < up


def test_the_instances_log_odds_is_never_above_the_true_one() -> None:
    # The instance is held as randomized response with a float probability p: its log-odds
    # logit(p) (in mpmath) must not exceed log(2 e^{eps/2} - 1), however small eps is (a
    # rounding of p near 1/2 moves it by about 4 unit roundoffs, 1e-13 relatively at 1e-3).
    import mpmath

    with mpmath.workdps(40):
        for eps in np.geomspace(1e-4, 5.0, 400):
            pair = PermuteAndFlip(float(eps)).instance()
            assert pair is not None
            p = mpmath.mpf(float(pair.p))
            truth = mpmath.log(2 * mpmath.exp(mpmath.mpf(float(eps)) / 2) - 1)
            assert mpmath.log(p / (1 - p)) <= truth


@pytest.mark.parametrize(("eps", "k"), [(69.95546775225986, 1), (69.95546775225986, 3), (70.1912779397421, 1),
                                        (1e-12, 1), (1e-9, 1)])
def test_instance_log_odds_are_at_most_the_instances(eps: float, k: int) -> None:
    # The instance's log-odds log(2 e^{eps/2} - 1), at 50 digits, bound the pair's (its float p)
    # and hence the lower ends. They were above: at eps = 69.96, p's 1 - p kept only 2^-53 and
    # the pair's log-odds were 36.04, the instance's 35.67 (eps(1e-10) of one run 36.04, of 3 runs
    # 108.13 against 107.01; delta(eps/2) 0.656 against 0.5); below eps = 0.019,
    # log(2 e^{eps/2} - 1) was above the truth by up to a relative 1.7e-4.
    import mpmath as mp
    from closed_forms import mp_rr_delta

    from autoacct.zoo import Composition

    with mp.workdps(50):
        truth = mp.log(2 * mp.exp(mp.mpf(eps) / 2) - 1)
        m = PermuteAndFlip(eps)
        assert mp.mpf(m.attained_log_odds()) <= truth
        pair = m.instance()
        assert pair is not None
        assert mp.log(mp.mpf(pair.p) / (1 - mp.mpf(pair.p))) <= truth
        run = m if k == 1 else Composition()([m], [k])
        x = eps / 2.0
        assert float(run.delta_bounds(x)[0]) <= mp_rr_delta(truth, k, x)
        lo = run.epsilon_bounds(1e-10)[0]
        assert lo == 0.0 or mp_rr_delta(truth, k, lo) >= 1e-10  # at most the instance's eps(1e-10)
