"""ContinuousPair: a pair given by its privacy loss's distribution functions, against closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from closed_forms import gaussian_delta_closed, gaussian_eps_closed
from scipy import special, stats

from autoacct import Composition, Gaussian, PoissonSubsample
from autoacct.zoo import ContinuousPair


def _gaussian_pair(mu: float, tails: bool = True) -> ContinuousPair:
    """(N(mu, 1), N(0, 1)): L ~ N(mu^2/2, mu^2) under P and N(-mu^2/2, mu^2) under Q."""
    p, q = stats.norm(mu * mu / 2, mu), stats.norm(-mu * mu / 2, mu)
    return ContinuousPair(p.cdf, q.cdf, p.sf if tails else None, q.sf if tails else None)


def _poisson_gaussian_pair(q: float, sigma: float) -> ContinuousPair:
    """((1-q) N(0, s^2) + q N(1, s^2), N(0, s^2)): L = log(1 - q + q e^{(2y - 1)/(2 s^2)}) is increasing
    in the output y, so L <= x exactly when y <= y(x) = s^2 log((e^x - 1 + q)/q) + 1/2."""
    def y_of(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            y = sigma * sigma * np.log((np.exp(x) - (1.0 - q)) / q) + 0.5
        return np.where(x <= math.log1p(-q), -np.inf, y)

    def cdf_q(x: np.ndarray) -> np.ndarray:
        return special.ndtr(y_of(x) / sigma)

    def sf_q(x: np.ndarray) -> np.ndarray:
        return special.ndtr(-y_of(x) / sigma)

    def cdf_p(x: np.ndarray) -> np.ndarray:
        y = y_of(x)
        return (1.0 - q) * special.ndtr(y / sigma) + q * special.ndtr((y - 1.0) / sigma)

    def sf_p(x: np.ndarray) -> np.ndarray:
        y = y_of(x)
        return (1.0 - q) * special.ndtr(-y / sigma) + q * special.ndtr((1.0 - y) / sigma)

    return ContinuousPair(cdf_p, cdf_q, sf_p, sf_q)


@pytest.mark.parametrize("mu, k", [(0.8, 1), (0.8, 10), (0.3, 50)])
def test_gaussian_pair_brackets_the_closed_form(mu: float, k: int) -> None:
    m = Composition()([_gaussian_pair(mu)], [k])
    total = mu * math.sqrt(k)
    for delta in (1e-3, 1e-6, 1e-10):
        lo, up = m.epsilon_bounds(delta)
        assert lo <= gaussian_eps_closed(total, delta) <= up <= lo * (1 + 1e-3) + 1e-12
    for eps in (0.0, 0.5, 2.0):
        lo, up = m.delta_bounds(eps)
        assert lo <= gaussian_delta_closed(total, eps) <= up


def test_both_directions_of_an_asymmetric_pair() -> None:
    """The Poisson-subsampled Gaussian given by its removal loss's distribution functions: the addition
    direction (the law of -L under Q) is derived, and the pair matches PoissonSubsample's bracket."""
    q, sigma = 0.05, 1.0
    ours = Composition()([_poisson_gaussian_pair(q, sigma)], [100])
    ref = Composition()([PoissonSubsample(q)(Gaussian(sigma))], [100])
    for delta in (1e-4, 1e-8):
        lo, up = ours.epsilon_bounds(delta)
        r_lo, r_up = ref.epsilon_bounds(delta)
        assert max(lo, r_lo) <= min(up, r_up)           # both brackets hold the same truth
    # One run at eps 0: the addition direction's profile H(Q || P) is the larger one there.
    lo, up = _poisson_gaussian_pair(q, sigma).delta_bounds(0.0)
    r_lo, r_up = PoissonSubsample(q)(Gaussian(sigma)).delta_bounds(0.0)
    assert max(lo, r_lo) <= min(up, r_up)


def test_default_survival_functions() -> None:
    """Without sf, 1 - cdf serves: fine at moderate deltas."""
    lo, up = _gaussian_pair(1.0, tails=False).epsilon_bounds(1e-4)
    assert lo <= gaussian_eps_closed(1.0, 1e-4) <= up


def test_pickles_with_picklable_functions() -> None:
    import pickle
    m = _gaussian_pair(0.5)
    assert pickle.loads(pickle.dumps(m)).epsilon(1e-5) == m.epsilon(1e-5)


def _norm(mu: float) -> tuple:
    p, q = stats.norm(mu * mu / 2, mu), stats.norm(-mu * mu / 2, mu)
    return p.cdf, q.cdf, p.sf, q.sf


@pytest.mark.parametrize("args, error, words", [
    ((1.0, _norm(1.0)[1]), TypeError, "cdf_p"),
    ((_norm(1.0)[0], "cdf"), TypeError, "cdf_q"),
    ((_norm(1.0)[1], _norm(1.0)[0]), ValueError, "swapped"),
    ((lambda x: 2.0 * stats.norm.cdf(x), _norm(1.0)[1]), ValueError, r"\[0, 1\]"),
    ((lambda x: stats.norm.sf(x), _norm(1.0)[1]), ValueError, "non-decreasing"),
    ((_norm(1.0)[0], _norm(1.0)[1], _norm(2.0)[2]), ValueError, "cdf_p \\+ sf_p"),
    ((_norm(1.0)[0], _norm(1.0)[0]), ValueError, "does not belong"),
    ((lambda x: 1 / 0, _norm(1.0)[1]), ValueError, "cdf_p failed"),
])
def test_bad_functions_are_named(args: tuple, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        ContinuousPair(*args)
