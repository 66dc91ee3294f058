"""Truncated Poisson subsampling of a Gaussian: against Poisson, dp_accounting and an attained pair.

Independent sources: ``PoissonSubsample`` (no truncation), dp_accounting's
``from_truncated_subsampled_gaussian_mechanism`` (the reference this accountant must
meet or beat), and the hockey-stick divergence of one concrete pair of 1-D datasets,
computed by quadrature (a lower bound on the truth, hence on any sound upper bound).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from autoacct import Composition, Gaussian, Laplace, PoissonSubsample
from autoacct.subsampling import TruncatedPoissonSubsample, TruncatedPoissonSubsampledMechanism
from autoacct.subsampling.truncated import TRUNCATED_GROUPS, binomial_rel, truncated_groups


def _truncated(q: float, n: int, b: int, sigma: float, k: int = 1):
    return Composition()([TruncatedPoissonSubsample(q, n, b)(Gaussian(sigma))], [k])


def _poisson(q: float, sigma: float, k: int = 1):
    return Composition()([PoissonSubsample(q)(Gaussian(sigma))], [k])


def test_no_truncation_is_poisson_exactly() -> None:
    # B = n: the batch never exceeds B, so the mechanism is PoissonSubsample(q).
    m = _truncated(0.01, 1000, 1000, 1.0, 100)
    p = _poisson(0.01, 1.0, 100)
    for d in (1e-5, 1e-8):
        assert m.epsilon(d) == p.epsilon(d)
        assert m.epsilon_bounds(d) == p.epsilon_bounds(d)
    assert m.delta(1.0) == p.delta(1.0)


def test_tiny_truncation_probability_is_at_least_poisson_and_close() -> None:
    # P(Bin(999, 0.01) >= 60) is about 1e-25: the pair is Poisson's up to that weight.
    assert 0.0 < TruncatedPoissonSubsample(0.01, 1000, 60)(Gaussian(1.0)).truncation_probability() < 1e-20
    m, p = _truncated(0.01, 1000, 60, 1.0, 100), _poisson(0.01, 1.0, 100)
    for d in (1e-5, 1e-8):
        # Its eps is at least Poisson's, so its upper bound is at least Poisson's certified
        # lower bound (the two upper bounds, computed on different laws, may order either
        # way by rounding), and within 1e-6 of Poisson's.
        e_m, (lo_p, e_p) = m.epsilon(d), p.epsilon_bounds(d)
        assert lo_p <= e_m and abs(e_m - e_p) <= 1e-6 * e_p


def test_q_zero_reveals_nothing() -> None:
    m = TruncatedPoissonSubsample(0.0, 100, 10)(Gaussian(1.0))
    assert m.epsilon(1e-6) == 0.0
    assert m.delta(0.0) == 0.0


def test_groups_cover_the_truncated_part_at_larger_rates() -> None:
    # The weights are P(s >= B) in total, and each group's rate is at least the rate
    # q B / (s + 1) of every count s in it: the mean rate they give is at least the exact
    # mean q B P(Bin(n, q) > B) / n (from q P(Bin(n-1, q) = s) / (s + 1) = P(Bin(n, q) = s + 1) / n).
    # Both parts weigh at least their exact probability (in rationals) and at most _SF_REL
    # (scipy's error bound, 1e-12) above it: scipy's tails were 1.7e-15 (t at (0.05, 1000, 50))
    # and 4.2e-14 (P(s < B) at (0.05, 1000, 30)) below it, and the union lost that mass.
    for q, n, b in ((0.05, 1000, 50), (0.05, 1000, 30), (0.01, 10000, 100), (0.5, 200, 20)):
        untruncated, w, r = truncated_groups(q, n, b)
        below, t = _exact_tails(q, n, b)
        assert t <= sum(map(Fraction, w)) <= t * (1 + Fraction(2, 10 ** 12))
        assert below <= Fraction(untruncated) <= below * (1 + Fraction(2, 10 ** 12))
        assert len(w) <= TRUNCATED_GROUPS and np.all(np.diff(r) < 0)
        exact_mean = q * b * stats.binom.sf(b, n, q) / n
        assert float(np.dot(w, r)) >= exact_mean * (1.0 - 1e-12)


# (n, q, B, sigma, steps, delta): truncation probability from 0.5 to 0.94.
_DP_ACCOUNTING_CASES = [
    (1000, 0.05, 50, 2.0, 1, 1e-6),
    (1000, 0.05, 40, 1.5, 10, 1e-5),
    (10000, 0.01, 100, 1.0, 100, 1e-6),
]


@pytest.mark.parametrize("case", _DP_ACCOUNTING_CASES)
def test_at_most_dp_accounting(case: tuple) -> None:
    # dp_accounting's pair averages the truncated part's rates into one but takes its
    # sensitivity-2 part under replace-one, a larger pair than the add/remove one here:
    # measured with value_discretization_interval 1e-4, this accountant is 0.6% to 8.6%
    # below it; at 1e-3 (here, for speed) theirs is coarser still.
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    n, q, b, sigma, k, d = case
    ref = pld.from_truncated_subsampled_gaussian_mechanism(n, q, b, sigma, value_discretization_interval=1e-3)
    if k > 1:
        ref = ref.self_compose(k)
    theirs = ref.get_epsilon_for_delta(d)
    ours = _truncated(q, n, b, sigma, k).epsilon(d)
    assert ours <= theirs * (1.0 + 1e-3)
    # ... and above Poisson without truncation (the cut batch shifts by up to 2 C).
    assert ours > _poisson(q, sigma, k).epsilon(d)


def _attained_deltas(n: int, q: float, b: int, sigma: float, eps: float) -> float:
    """max of the two hockey-stick divergences at e^eps of one pair of 1-D datasets, by quadrature.

    The n - 1 other records are all +1 and the added record x is -1 (C = 1). With s of the
    others sampled, D's batch sums to min(s, B); D''s to s - 1 when x is sampled and s < B,
    and, when s >= B, to B - 2 with probability q B / (s + 1) and to B otherwise.
    """
    s = np.arange(n)
    ps = stats.binom.pmf(s, n - 1, q)
    under = s < b
    r = np.where(under, 0.0, b / (s + 1.0))
    # Sums shifted by one to index them; s - 1 for s >= B has weight 0 and is clipped.
    means = np.minimum(np.concatenate([np.minimum(s, b), s - 1, np.full(n, b - 2), np.full(n, b)]) + 1, b + 1)
    w_p = np.concatenate([(1 - q) * ps, q * ps * under, q * ps * ~under * r, q * ps * ~under * (1 - r)])
    w_q = np.concatenate([ps, np.zeros(3 * n)])
    x = np.linspace(-1.0 - 14.0 * sigma, b + 14.0 * sigma, 40001)
    dx = x[1] - x[0]
    levels = np.arange(b + 2)

    def density(w: np.ndarray) -> np.ndarray:
        weight = np.bincount(means, weights=w, minlength=len(levels))
        return weight @ stats.norm.pdf(x[None, :], levels[:, None] - 1.0, sigma)

    dens_p, dens_q = density(w_p), density(w_q)
    g = math.exp(eps)
    return max(float(np.sum(np.maximum(dens_p - g * dens_q, 0.0)) * dx),
               float(np.sum(np.maximum(dens_q - g * dens_p, 0.0)) * dx))


@pytest.mark.parametrize(("n", "q", "b", "sigma"), [(200, 0.1, 10, 1.0), (1000, 0.05, 30, 2.0)])
def test_above_an_attained_pair(n: int, q: float, b: int, sigma: float) -> None:
    m = TruncatedPoissonSubsample(q, n, b)(Gaussian(sigma))
    for eps in (0.1, 0.5, 1.0):
        assert m.delta(eps) >= _attained_deltas(n, q, b, sigma, eps) * (1.0 - 1e-4)


def test_close_to_the_attained_pair_when_always_truncated() -> None:
    # t = P(Bin(999, 0.05) >= 30) is 0.999: every batch is cut, and the datasets above
    # attain the dominating pair up to the spread of the rate q B / (s + 1) over s.
    m = TruncatedPoissonSubsample(0.05, 1000, 30)(Gaussian(2.0))
    assert m.delta(0.1) <= 1.06 * _attained_deltas(1000, 0.05, 30, 2.0, 0.1)


def test_shape_in_max_batch_size() -> None:
    # Not monotone: tiny batches hide the record among few sampled ones (B = 1 is far
    # below Poisson), and the bound peaks near the mean batch size n q = 50, then falls
    # to Poisson's as truncation becomes rare. Checked on each side of the peak.
    eps = {b: TruncatedPoissonSubsample(0.05, 1000, b)(Gaussian(2.0)).epsilon(1e-6)
           for b in (1, 5, 20, 40, 60, 80, 100)}
    poisson = PoissonSubsample(0.05)(Gaussian(2.0)).epsilon(1e-6)
    assert eps[1] < eps[5] < eps[20] < eps[40]
    assert eps[60] > eps[80] > eps[100] >= poisson
    assert eps[1] < poisson < eps[40]


def _kept_rate_exact(q: float, n: int, b: int) -> Fraction:
    """q E[min(1, b / (s + 1))], s ~ Binomial(n - 1, q), in rationals (q as the float it is)."""
    qq = Fraction(q)
    return qq * sum(math.comb(n - 1, s) * qq ** s * (1 - qq) ** (n - 1 - s) * min(Fraction(1), Fraction(b, s + 1))
                    for s in range(n))


@pytest.mark.parametrize(("q", "n", "b"), [(0.05, 1000, 50), (0.05, 1000, 20), (0.05, 1000, 60), (0.3, 40, 5),
                                           (0.01, 500, 1)])
def test_kept_rate_is_below_the_exact_one(q: float, n: int, b: int) -> None:
    # The rate at which the differing record is in the cut batch, against the exact rational
    # sum: below it, and within 1e-8 (Jensen's inequality over groups of counts, the binomial
    # tails' allowance; one group over all counts s >= B was 14% low at B = 1).
    from autoacct.subsampling.truncated import kept_rate

    exact = _kept_rate_exact(q, n, b)
    got = Fraction(kept_rate(q, n, b))
    assert got <= exact
    assert got >= exact * (1 - Fraction(1, 10**8))


def test_lower_ends_are_the_kept_pairs_when_truncated() -> None:
    # Every other record's gradient 0, x's at the sensitivity: one pair of datasets attains
    # PoissonSubsample(r)(Gaussian(2)) at every run, r = q E[min(1, B / (s + 1))] (0.04726 here),
    # so its eps is a lower end of the mechanism's. It was 0 (the dominating union is not
    # attained). One step: the attained pair's removal delta, in closed form at the exact
    # rate, is at least delta at the lower end; ten steps: below the attained pair's upper end.
    q, n, b, sigma, delta = 0.05, 1000, 50, 2.0, 1e-6
    rate = float(_kept_rate_exact(q, n, b))
    lo, hi = _truncated(q, n, b, sigma).epsilon_bounds(delta)
    x = sigma * sigma * math.log((math.expm1(lo) + rate) / rate) + 0.5
    exact = ((1 - rate) * stats.norm.sf(x / sigma) + rate * stats.norm.sf((x - 1) / sigma)
             - math.exp(lo) * stats.norm.sf(x / sigma))
    assert 0.0 < lo < hi and exact >= delta * (1 - 1e-9)
    lo10, hi10 = _truncated(q, n, b, sigma, 10).epsilon_bounds(delta)
    attained = _poisson(math.nextafter(rate, 1.0), sigma, 10).epsilon_bounds(delta)
    assert attained[0] * (1 - 1e-3) <= lo10 <= attained[1] < hi10


def test_full_sampling_is_a_fixed_size_batch() -> None:
    # q = 1, B < n: every batch is a uniform B-subset (t = 1); finite and below the
    # batch's own sum without subsampling (Gaussian of shift 2 C: the record replaces one).
    m = TruncatedPoissonSubsample(1.0, 100, 10)(Gaussian(2.0))
    assert m.truncation_probability() == 1.0
    assert 0.0 < m.epsilon(1e-6) < Gaussian(1.0).epsilon(1e-6)


@pytest.mark.parametrize(("args", "name"), [
    ((-0.1, 100, 10), "q"), ((1.5, 100, 10), "q"), ((math.nan, 100, 10), "q"),
    ((0.1, 0, 1), "dataset_size"), ((0.1, 2.5, 1), "dataset_size"), ((0.1, 2**52 + 1, 5), "dataset_size"),
    ((0.1, 100, 0), "max_batch_size"), ((0.1, 100, 101), "max_batch_size"),
])
def test_bad_parameters(args: tuple, name: str) -> None:
    with pytest.raises((ValueError, TypeError), match=name):
        TruncatedPoissonSubsample(*args)
    with pytest.raises((ValueError, TypeError), match=name):
        TruncatedPoissonSubsampledMechanism(Gaussian(1.0), *args)


def test_bad_base() -> None:
    with pytest.raises(ValueError, match="mechanism"):
        TruncatedPoissonSubsample(0.1, 100, 10)(Laplace(1.0))
    with pytest.raises(TypeError, match="mechanism"):
        TruncatedPoissonSubsample(0.1, 100, 10)("gaussian")  # type: ignore[arg-type]


def _exact_tails(q: float, n: int, b: int) -> tuple[Fraction, Fraction]:
    """(P(s < B), P(s >= B)) for s ~ Binomial(n - 1, q), exactly in rationals (q as the float it
    is, a / d): P(s = j) = C(n - 1, j) a^j c^(n - 1 - j) / d^(n - 1) with c = d - a, so
    P(s < B) = c^(n - B) sum_{j < B} C(n - 1, j) a^j c^(B - 1 - j) / d^(n - 1), and the rest of
    (a + c)^(n - 1) = d^(n - 1) is P(s >= B)."""
    a, d = Fraction(q).as_integer_ratio()
    c = d - a
    lower = c ** (n - b) * sum(math.comb(n - 1, j) * a ** j * c ** (b - 1 - j) for j in range(b))
    scale = d ** (n - 1)
    return Fraction(lower, scale), Fraction(scale - lower, scale)


def _exact_group_masses(q: float, n: int, b: int, starts: np.ndarray) -> list[Fraction]:
    """P(s < B), then P(start_g <= s < start_{g+1}) for s ~ Binomial(n - 1, q), the last group
    open above, from the binomial pmf summed exactly in rationals (q as the float it is)."""
    qf = Fraction(q)
    pmf = [math.comb(n - 1, s) * qf ** s * (1 - qf) ** (n - 1 - s) for s in range(n)]
    bounds = [0] + list(starts) + [n]
    return [sum(pmf[lo:hi], Fraction(0)) for lo, hi in zip(bounds[:-1], bounds[1:])]


@pytest.mark.parametrize(("q", "n", "b"), [(0.05, 1000, 50), (0.05, 1000, 30), (0.5, 200, 20), (0.01, 1000, 60)])
def test_group_weights_move_mass_only_to_larger_rates(q: float, n: int, b: int) -> None:
    # The groups' weights, now differences of the binomial's tails instead of a sum of its pmf
    # over every count: against exact rational sums, the mass of the groups up to any g (those
    # at the larger rates) is at least the truth, all of them included (t = P(s >= B), which
    # scipy gave 1.9e-14 relatively below it at (0.01, 1000, 60), is rounded up), and so is
    # P(s < B); each weight is within 1e-9 of the truth (the far tail below DRAW_TAIL is in the
    # last group, which the old sum lost to rounding).
    untruncated, w, r = truncated_groups(q, n, b)
    starts = np.round(q * b / r - 1.0).astype(int)
    below, *exact = _exact_group_masses(q, n, b, starts)
    running, truth = Fraction(0), Fraction(0)
    for got, mass in zip(w, exact):
        running, truth = running + Fraction(got), truth + mass
        assert running >= truth
    np.testing.assert_allclose(w[:-1], [float(x) for x in exact[:-1]], rtol=1e-9)
    assert below <= Fraction(untruncated) <= below * (1 + Fraction(2, 10 ** 12))


@pytest.mark.parametrize(("q", "n", "b"), [(0.1, 10**12, 5), (0.5, 10**9, 10**8), (0.1, 10**6, 5)])
def test_groups_of_a_huge_dataset_need_no_window_of_counts(q: float, n: int, b: int) -> None:
    # (0.1, 10**12, 5) raised MemoryError (a window of every count up to mean + 20 sd: 745 GiB)
    # and (0.5, 10**9, 10**8) was killed. The mean rate the groups give is at least the exact
    # E[q B / (s + 1); s >= B] = B P(Bin(n, q) > B) / n (q P(Bin(n - 1, q) = s) / (s + 1) =
    # P(Bin(n, q) = s + 1) / n) and within 0.1% of it: the groups are narrow where the mass is.
    untruncated, w, r = truncated_groups(q, n, b)
    assert len(w) <= TRUNCATED_GROUPS and np.all(np.diff(r) < 0)
    exact_mean = b * stats.binom.sf(b, n, q) / n
    assert exact_mean * (1 - 1e-12) <= float(np.dot(w, r)) <= exact_mean * 1.001
    # (t is 1 less a mass far below the floats: the weights, rounded up by binomial_rel(n), sum
    # to at least 1)
    assert untruncated == 0.0 and 1.0 <= math.fsum(w) <= 1.0 + 2.0 * binomial_rel(n)


def test_a_step_of_a_large_dataset_is_answered_from_its_closed_form_profile() -> None:
    # n = 10^6, q = 0.1, B = 5: the PLD of the union (975,243 cells) is beyond the time budget
    # and eps(1e-5) was [0, inf] with a BudgetWarning. The union's profile is the weighted sum
    # of its parts' closed forms; at eps = 0, the total variation, it is E[q_s] TV(N(2), N(0))
    # with E[q_s] = B P(Bin(n, q) > B) / n (above) and TV = 2 Phi(1) - 1 (the untruncated part,
    # P(s < 5), is 0 in double precision): 3.4135e-6 < 1e-5, so eps(1e-5) is 0.
    m = TruncatedPoissonSubsample(0.1, 10**6, 5)(Gaussian(1.0))
    union_tv = 5 * stats.binom.sf(5, 10**6, 0.1) / 10**6 * (2 * stats.norm.cdf(1.0) - 1)
    up = float(m.delta(0.0))
    assert union_tv <= up <= union_tv * 1.01
    assert m.epsilon_bounds(1e-5) == (0.0, 0.0)
    assert float(m.epsilon(1e-8)) > 0.0


@pytest.mark.parametrize(("n", "q", "b", "sigma"), [(200, 0.1, 10, 1.0), (1000, 0.05, 30, 2.0)])
def test_renyi_fallback_is_above_an_attained_pair(n: int, q: float, b: int, sigma: float) -> None:
    # Where the batch can be cut the RDP route was unavailable (no fallback behind the PLD);
    # it is now that of PoissonSubsample(q) at twice the shift, which dominates the union.
    m = TruncatedPoissonSubsample(q, n, b)(Gaussian(sigma))
    for eps in (0.1, 0.5, 1.0):
        assert m.delta(eps, via="rdp") >= _attained_deltas(n, q, b, sigma, eps)
        assert m.delta(eps, via="rdp") >= m.delta(eps)


@pytest.mark.parametrize(("q", "n", "b"), [(0.1, 10**12, 10**11), (0.9, 10**12, 900000150001)])
def test_kept_rate_is_below_the_exact_one_at_a_trillion_records(q: float, n: int, b: int) -> None:
    # scipy's binomial tails are off by up to a relative 4.5e-10 at 10^12 trials, beyond the
    # 1e-12 they were rounded by: the rate was above the exact one by a relative 4.5e-12 and
    # 1.1e-11 here (its Jensen gap, (sd / mean)^2, is about 1e-11 at q n >= 10^11).
    from closed_forms import binomial_kept_rate

    from autoacct.subsampling.truncated import kept_rate

    exact = binomial_kept_rate(q, n, b)
    got = kept_rate(q, n, b)
    assert exact * (1 - 1e-6) <= got <= exact * (1 - 1e-12)
