"""DP-SGD helpers, checked against the reference values of ../shared/reference/visible.json
(dp_accounting 0.6.0 and prv_accountant 0.2.0, run independently of this project) and
against dp_accounting itself."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import mpmath
import numpy as np
import pytest
from closed_forms import gaussian_eps_closed, mp_gaussian_delta, mp_gaussian_tradeoff
from scipy import optimize, special
from warning_policy import strict_warnings

from autoacct.dpsgd import dpsgd, dpsgd_schedule
from autoacct.mechanism import Neighboring
from autoacct.routes import PLD
from autoacct.subsampling import PoissonSubsample, SampleWithoutReplacement
from autoacct.zoo import Composition, Gaussian

_REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "visible.json"
#: Copy of visible.json's "dpsgd_poisson_add_remove" cases, used when the file is not there.
_DPSGD_CASES = [
    {"q": 0.01, "sigma": 1.5, "k": 10000, "delta": 1e-05, "epsilon_upper_dp_accounting_1e-4": 3.185637,
     "prv_accountant_interval": [3.1754, 3.1958], "rdp_dp_accounting": 3.459385},
    {"q": 0.0042667, "sigma": 1.1, "k": 14040, "delta": 1e-05,
     "epsilon_upper_dp_accounting_1e-4": 2.379644, "prv_accountant_interval": [2.3694, 2.3897],
     "rdp_dp_accounting": 2.594363},
    {"q": 0.001, "sigma": 0.8, "k": 100000, "delta": 1e-05, "epsilon_upper_dp_accounting_1e-4": 2.57556,
     "prv_accountant_interval": [2.5648, 2.5852], "rdp_dp_accounting": 2.825069},
]


def _cases() -> list[dict]:
    if _REFERENCE.exists():
        return json.loads(_REFERENCE.read_text())["dpsgd_poisson_add_remove"]
    return _DPSGD_CASES


@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"q{c['q']}-s{c['sigma']}-k{c['k']}")
def test_visible_dpsgd_cases(case):
    m = dpsgd(case["q"], case["sigma"], case["k"])
    delta = case["delta"]
    lo_prv, hi_prv = case["prv_accountant_interval"]
    mid = 0.5 * (lo_prv + hi_prv)
    eps = m.epsilon(delta)
    assert abs(eps - mid) <= 1e-3 * mid
    assert eps >= lo_prv
    lower, upper = m.epsilon_bounds(delta)
    assert lower <= eps == upper <= lower * (1 + 1e-3)
    # consistent with the PRV accountant's interval and dp_accounting's pessimistic
    # (upper) estimate, whose own discretisation error at 1e-4 is well below 0.1%
    assert lower <= hi_prv and upper >= lo_prv
    dp_upper = case["epsilon_upper_dp_accounting_1e-4"]
    assert lower <= dp_upper
    assert upper >= dp_upper * (1 - 1e-3)
    # the RDP route converts more tightly than dp_accounting's RDP accountant
    assert upper <= m.epsilon(delta, via="rdp") <= case["rdp_dp_accounting"] * (1 + 1e-6)


@pytest.mark.parametrize("n,b,epochs", [(60_000, 256, 3), (50_000, 250, 2), (10, 10, 5), (7, 3, 4)])
def test_steps_from_epochs(n, b, epochs):
    m = dpsgd(noise_multiplier=1.0, dataset_size=n, batch_size=b, epochs=epochs)
    assert m.counts == (epochs * math.ceil(n / b),)
    assert m.params["PoissonSubsample.q"] == b / n
    assert m.params["Gaussian.sigma"] == 1.0
    same = dpsgd(b / n, 1.0, epochs * math.ceil(n / b))
    assert m.epsilon(1e-5) == same.epsilon(1e-5)


def test_steps_with_sizes():
    m = dpsgd(noise_multiplier=2.0, steps=123, dataset_size=1000, batch_size=10)
    assert m.counts == (123,)
    assert m.params["PoissonSubsample.q"] == 0.01


@pytest.mark.parametrize("kwargs,name", [
    (dict(sample_rate=0.01, steps=10), "noise_multiplier"),
    (dict(sample_rate=0.0, noise_multiplier=1.0, steps=10), "sample_rate"),
    (dict(sample_rate=float("nan"), noise_multiplier=1.0, steps=10), "sample_rate"),
    (dict(sample_rate=1.5, noise_multiplier=1.0, steps=10), "sample_rate"),
    (dict(sample_rate=0.01, noise_multiplier=-1.0, steps=10), "noise_multiplier"),
    (dict(sample_rate=0.01, noise_multiplier=1.0, steps=0), "steps"),
    (dict(sample_rate=0.01, noise_multiplier=1.0), "steps"),
    (dict(noise_multiplier=1.0, steps=10), "sample_rate"),
    (dict(noise_multiplier=1.0, dataset_size=100, batch_size=200, epochs=1), "batch_size"),
    (dict(noise_multiplier=1.0, dataset_size=100, epochs=1), "batch_size"),
    (dict(sample_rate=0.01, noise_multiplier=1.0, epochs=2), "epochs"),
    (dict(sample_rate=0.01, noise_multiplier=1.0, dataset_size=100, batch_size=1, steps=3), "sample_rate"),
    (dict(noise_multiplier=1.0, dataset_size=100, batch_size=1, steps=3, epochs=1), "epochs"),
    (dict(sample_rate=0.01, noise_multiplier=1.0, steps=10, sampling="shuffle"), "sampling"),
])
def test_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        dpsgd(**kwargs)


def test_without_replacement_at_full_batch_is_the_gaussian():
    """q = 1: every step sees every record; replace-one moves the clipped sum by 2C, so
    k steps are (2 sqrt(k) / sigma)-GDP (closed form of Balle and Wang 2018)."""
    sigma, k, delta = 4.0, 25, 1e-6
    m = dpsgd(1.0, sigma, k, sampling="without-replacement")
    assert m.neighboring is Neighboring.REPLACE_ONE
    mu = 2.0 * math.sqrt(k) / sigma

    def log_gap(eps: float) -> float:
        la = special.log_ndtr(-eps / mu + mu / 2)
        lb = special.log_ndtr(-eps / mu - mu / 2)
        return la + math.log(-math.expm1(eps + lb - la)) - math.log(delta)

    exact = optimize.brentq(log_gap, 1e-9, 100.0, xtol=1e-14)
    lower, upper = m.epsilon_bounds(delta)
    assert lower <= exact <= upper
    assert upper == pytest.approx(exact, rel=1e-9)


def test_without_replacement_dominates_poisson_with_doubled_sensitivity():
    q, sigma, k = 0.02, 2.0, 200
    wor = dpsgd(q, sigma, k, sampling="without-replacement")
    poisson_2c = Composition()([PoissonSubsample(q)(Gaussian(sigma / 2))], [k])
    assert wor.epsilon_bounds(1e-5)[1] >= poisson_2c.epsilon_bounds(1e-5)[0]
    assert wor.name == "Compose:{SampleWithoutReplacement(Gaussian): 200}"
    assert wor.epsilon(1e-5) == Composition()(
        [SampleWithoutReplacement(q)(Gaussian(sigma / 2))], [k]).epsilon(1e-5)


def test_schedule_equals_composition_and_merges_equal_phases():
    one = dpsgd_schedule([(0.01, 1.2, 300)])
    assert one.epsilon(1e-5) == dpsgd(0.01, 1.2, 300).epsilon(1e-5)
    split = dpsgd_schedule([(0.01, 1.2, 100), (0.01, 1.2, 200)])
    assert split.epsilon(1e-5) == one.epsilon(1e-5)
    mixed = dpsgd_schedule([(0.01, 1.2, 100), (0.05, 3.0, 50), (0.01, 1.2, 20)])
    assert mixed.counts == (100, 50, 20)
    assert len(PLD.accountant(mixed)._parts) == 2
    assert dict(mixed.params)["[1]PoissonSubsample.q"] == 0.05


def test_schedule_against_dp_accounting():
    pytest.importorskip("dp_accounting")
    logging.getLogger().setLevel(logging.ERROR)
    from dp_accounting.pld import privacy_loss_distribution as pld
    phases = [(0.01, 1.0, 300), (0.03, 2.0, 100)]
    m = dpsgd_schedule(phases)
    lower, upper = m.epsilon_bounds(1e-6)
    assert upper <= lower * (1 + 1e-3)
    pess = opt = None
    for q, s, k in phases:
        p = pld.from_gaussian_mechanism(s, sampling_prob=q, value_discretization_interval=1e-4,
                                        use_connect_dots=True).self_compose(k)
        o = pld.from_gaussian_mechanism(s, sampling_prob=q, value_discretization_interval=1e-4,
                                        pessimistic_estimate=False).self_compose(k)
        pess = p if pess is None else pess.compose(p)
        opt = o if opt is None else opt.compose(o)
    assert lower <= pess.get_epsilon_for_delta(1e-6) * (1 + 1e-9)
    assert upper >= opt.get_epsilon_for_delta(1e-6) * (1 - 1e-9)


@pytest.mark.parametrize("phases,exc", [([], ValueError), ("abc", TypeError), ([(0.1, 1.0)], ValueError),
                                        ([(0.1, 1.0, 0)], ValueError), ([(2.0, 1.0, 5)], ValueError)])
def test_bad_schedules(phases, exc):
    with pytest.raises(exc, match="phases"):
        dpsgd_schedule(phases)


def test_sampling_modes_of_schedule():
    wor = dpsgd_schedule([(0.01, 1.0, 10)], sampling="without-replacement")
    assert wor.neighboring is Neighboring.REPLACE_ONE
    with pytest.raises(ValueError, match="sampling"):
        dpsgd_schedule([(0.01, 1.0, 10)], sampling="Poisson")
    assert np.isfinite(wor.epsilon(1e-5))


# ----- user level (examples_per_user) -----------------------------------------------------

def test_one_example_per_user_is_plain_dpsgd():
    user, plain = dpsgd(0.01, 1.1, 300, examples_per_user=1), dpsgd(0.01, 1.1, 300)
    assert dict(user.params) == dict(plain.params) and user.name == plain.name
    assert user.epsilon_bounds(1e-5) == plain.epsilon_bounds(1e-5)


@pytest.fixture(scope="module")
def dp_accounting_two_examples():
    """dp_accounting's PLD of 30 steps at q = 0.05, sigma = 1.5, two examples per user: its
    mixture of N(0), N(1), N(2) with the binomial weights written out by hand."""
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    logging.getLogger().setLevel(logging.ERROR)
    q = 0.05
    weights = [(1 - q) ** 2, 2 * q * (1 - q), q * q]
    one = pld.from_mixture_gaussian_mechanism(1.5, [0.0, 1.0, 2.0], weights,
                                              value_discretization_interval=1e-3)
    return one.self_compose(30)


def test_two_examples_per_user_against_dp_accounting(dp_accounting_two_examples):
    m = dpsgd(0.05, 1.5, 30, examples_per_user=2)
    for d in (1e-3, 1e-6):
        lower, upper = m.epsilon_bounds(d)
        ref = dp_accounting_two_examples.get_epsilon_for_delta(d)
        assert upper == pytest.approx(ref, rel=2e-3)
        assert lower <= ref * (1 + 1e-9)  # dp_accounting's is pessimistic: above the truth


def test_user_level_schedule_against_dp_accounting(dp_accounting_two_examples):
    """Two phases at two examples per user: the fixture's 30 steps, then 3 full batches (q = 1:
    both examples in every batch, the Gaussian of sensitivity 2); one phase is dpsgd's run, and
    other samplings refuse user level."""
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    phases = [(0.05, 1.5, 30), (1.0, 8.0, 3)]
    m = dpsgd_schedule(phases, examples_per_user=2)
    full = pld.from_gaussian_mechanism(8.0 / 2.0, value_discretization_interval=1e-3).self_compose(3)
    expected = dp_accounting_two_examples.compose(full).get_epsilon_for_delta(1e-6)
    lower, upper = m.epsilon_bounds(1e-6)
    assert upper == pytest.approx(expected, rel=2e-3)
    assert lower <= expected * (1 + 1e-9)  # dp_accounting's is pessimistic: above the truth
    one = dpsgd_schedule(phases[:1], examples_per_user=2)
    assert one.epsilon_bounds(1e-6) == dpsgd(0.05, 1.5, 30, examples_per_user=2).epsilon_bounds(1e-6)
    with pytest.raises(ValueError, match="examples_per_user"):
        dpsgd_schedule(phases, examples_per_user=2, sampling="without-replacement")
    with pytest.raises(ValueError, match="examples_per_user"):
        dpsgd_schedule(phases, examples_per_user=0)


@pytest.mark.parametrize("m", [2, 5])
def test_user_level_between_example_level_and_the_loose_bound(m):
    q, sigma, k, d = 0.01, 1.1 * m, 200, 1e-5
    user_lo, user_up = dpsgd(q, sigma, k, examples_per_user=m).epsilon_bounds(d)
    example_lo, _ = dpsgd(q, sigma, k).epsilon_bounds(d)
    # The old bound: the user joins with probability 1 - (1 - q)^m and then moves the sum by m C.
    q_user = 1 - (1 - q) ** m
    _, loose_up = dpsgd(q_user, sigma / m, k).epsilon_bounds(d)
    assert example_lo <= user_up and user_up <= loose_up
    assert user_lo > example_lo * 1.01  # several examples do cost privacy


def test_full_batches_are_the_gaussian_of_m_sensitivities():
    # q = 1: all m examples are in every batch; K steps are sqrt(K) m / sigma-GDP.
    m, sigma, k = 3, 6.0, 4
    mech = dpsgd(1.0, sigma, k, examples_per_user=m)
    mu = math.sqrt(k) * m / sigma
    lower, upper = mech.epsilon_bounds(1e-5)
    exact = optimize.brentq(lambda e: special.ndtr(-e / mu + mu / 2)
                            - math.exp(e) * special.ndtr(-e / mu - mu / 2) - 1e-5, 1e-9, 50, xtol=1e-14)
    assert lower <= exact * (1 + 1e-9) and exact <= upper <= exact * (1 + 1e-3)


def test_cut_binomial_tail_brackets_the_exact_mixture():
    # m = 60, q = 0.01: counts above about 20 carry less than 1e-30 and are cut. The exact
    # mixture of all 61 components (with scipy's binomial pmf) lies between the two sides.
    from scipy import stats

    from autoacct.dpsgd import dpsgd_lower_run
    from autoacct.zoo import MixtureOfGaussians
    q, m, sigma, k, d = 0.01, 60, 60.0, 100, 1e-6
    up = dpsgd(q, sigma, k, examples_per_user=m)
    below = dpsgd_lower_run(q, sigma, k, examples_per_user=m)
    assert below is not None and dpsgd_lower_run(q, sigma, k, examples_per_user=5) is None
    exact = Composition()([MixtureOfGaussians(sigma, tuple(range(m + 1)),
                                              tuple(stats.binom.pmf(np.arange(m + 1), m, q)))], [k])
    e_lo, e_up = exact.epsilon_bounds(d)
    assert up.epsilon_bounds(d)[0] == 0.0  # the dominating side certifies no lower end
    assert below.epsilon_bounds(d)[0] <= e_up and e_lo <= up.epsilon(d)
    assert up.epsilon(d) == pytest.approx(e_up, rel=1e-6)


@pytest.mark.parametrize("kwargs, match", [
    (dict(examples_per_user=0), "examples_per_user"),
    (dict(examples_per_user=2.5), "examples_per_user"),
    (dict(examples_per_user=2, sampling="without-replacement"), "examples_per_user.*poisson"),
])
def test_bad_examples_per_user(kwargs, match):
    with pytest.raises(ValueError, match=match):
        dpsgd(0.01, 1.0, 10, **kwargs)


def test_without_replacement_lower_end_from_the_attained_pair():
    """Lebeda, Regehr, Kamath and Steinke (2024)'s example: at q = 0.002, unit-sensitivity noise
    0.9 (DP-SGD noise 1.8, replace-one sensitivity 2 C), 20000 steps and delta 1e-6, a fixed
    pair of datasets used at every step gives epsilon 2.056, below the dominating pair's
    composition (2.6758). That pair is the Poisson-subsampled Gaussian's, whose epsilon
    dp_accounting's pessimistic PLD bounds from above: the run's own lower end must not exceed
    it, and it is no longer the dominating pair's lower end (2.6753)."""
    pytest.importorskip("dp_accounting")
    logging.getLogger().setLevel(logging.ERROR)
    from dp_accounting.pld import privacy_loss_distribution as dpa_pld

    from autoacct.dpsgd import dpsgd_lower_run
    run = dpsgd(0.002, 1.8, 20_000, sampling="without-replacement")
    lower, upper = run.epsilon_bounds(1e-6)
    attained = dpa_pld.from_gaussian_mechanism(0.9, sampling_prob=0.002, value_discretization_interval=1e-4,
                                               pessimistic_estimate=True).self_compose(20_000)
    above = attained.get_epsilon_for_delta(1e-6)  # 2.0565, within 1e-4 per step of the truth
    assert above * (1 - 2e-3) <= lower <= above
    assert upper == pytest.approx(2.6758, abs=2e-3)
    d_lower, d_upper = run.delta_bounds(1.0)
    assert 0.0 < d_lower <= attained.get_delta_for_epsilon(1.0) <= d_upper
    # One step certifies the symmetrised pair's own lower end, within tol of its upper end.
    one_lo, one_up = dpsgd(0.002, 1.8, 1, sampling="without-replacement").epsilon_bounds(1e-6)
    assert 0.0 < one_up - one_lo <= 1e-3 * one_up
    # No separate lower run is needed any more, but for a user-level cut tail.
    assert dpsgd_lower_run(0.002, 1.8, 20_000, sampling="without-replacement") is None
    assert dpsgd_lower_run(0.002, 1.8, 10) is None


def test_a_noise_multiplier_below_what_a_sampled_gaussian_takes_is_refused() -> None:
    # dpsgd(0.01, 1e-99, 10).epsilon(1e-5) raised "cannot convert float NaN to integer" from
    # inside the grid; 1e-60 overflowed in a shifted law. Found by a probe.
    with pytest.raises(ValueError, match="noise_multiplier"):
        dpsgd(0.01, 1e-99, 10)
    with pytest.raises(ValueError, match="noise multiplier"):
        PoissonSubsample(0.01)(Gaussian(1e-30))
    lo, up = dpsgd(0.01, 1e-20, 3).epsilon_bounds(1e-5)
    assert 0.0 <= lo <= up
    # Without replacement the step's Gaussian has sigma / 2: the floor is twice as high, and
    # the refusal names the argument given (it named the internal Gaussian's 5e-21).
    with pytest.raises(ValueError, match=r"noise_multiplier must lie in \[2e-20, inf\), got 1.5e-20"):
        dpsgd(0.01, 1.5e-20, 10, sampling="without-replacement")


def test_a_tiny_noise_multiplier_at_2_pow_52_steps_answers_a_valid_bracket() -> None:
    # The PLD window asked for 4.6e18 points, and scipy's next_fast_len raised "Target length is
    # too large to perform an FFT" before the window was capped. The truth: each step's loss is
    # about 1 / (2 sigma^2) = 5e39 when the record is sampled (probability 1/2) and at least
    # -log 2 otherwise, so with probability above 1 - 1e-5 the loss is at least
    # (k / 2 - 2.5 sqrt(k)) 5e39 (1 - 1e-18) - k log 2 = 1.1259e55: eps(1e-5) is above 1.12e55.
    with strict_warnings():
        lo, up = dpsgd(0.5, 1e-20, 2 ** 52).epsilon_bounds(1e-5)
    assert 0.0 <= lo <= up
    assert 1.12e55 <= up < math.inf


#: Balls-in-bins runs (t = 1/q steps an epoch, sigma, K steps) whose Renyi DP (their only route:
#: sigma below about 0.77) is above the composed base Gaussians' closed form: one epoch in a
#: composition, whole epochs, whole epochs and one Poisson(1/t) step, and a partial epoch of 2 steps.
#: Before, eps(1e-5) <= 10.109, 62.217, 40.687, 68.827, 114.11 and 131.65; now 9.9973, 58.777,
#: 40.543, 67.353, 109.34 and 126.38.
_GAUSSIAN_TIGHTER_RUNS = [(2, 0.5, 2), (2, 0.3, 10), (2, 0.3, 5), (2, 0.3, 11), (3, 0.2, 15),
                          (4, 0.2, 22)]


@pytest.mark.parametrize("t,sigma,k", _GAUSSIAN_TIGHTER_RUNS)
def test_a_balls_in_bins_runs_upper_end_is_at_most_its_composed_gaussians(t, sigma, k):
    # Each epoch (and a last partial one) is dominated by the Gaussian of one step, so the run by
    # ceil(K / t) of them composed: mu = sqrt(ceil(K / t)) / sigma (Balle and Wang 2018).
    m = dpsgd(1.0 / t, sigma, k, sampling="balls-in-bins")
    mu = math.sqrt(math.ceil(k / t)) / sigma
    lo, up = m.epsilon_bounds(1e-5)
    assert mp_gaussian_delta(mu, up) <= 1e-5  # still an upper end of that Gaussian
    assert up <= gaussian_eps_closed(mu, 1e-5) * (1.0 + 1e-9)
    assert lo <= up
    eps = np.array([1.0, 10.0, 30.0])
    d_lo, d_up = m.delta_bounds(eps)
    ref = np.array([float(mp_gaussian_delta(mu, e)) for e in eps])
    assert np.all(d_lo <= d_up) and np.all(d_up <= ref * (1.0 + 1e-9) + 1e-300)
    fpr = np.array([1e-6, 1e-3, 0.1])
    ref_curve = np.array([float(mp_gaussian_tradeoff(mu, a)) for a in fpr])
    # (the Gaussian's closed form is rounded down by up to 1e-15 absolutely)
    assert np.all(m.tradeoff(fpr) >= ref_curve * (1.0 - 1e-9) - 1e-14)


def test_a_balls_in_bins_runs_lower_end_is_at_least_its_summed_outputs_gaussian():
    # Each epoch's t outputs summed are N(1, t sigma^2) against N(0, t sigma^2), a post-processing
    # of the epoch, so E epochs give mu = sqrt(E) / (sigma sqrt(t)) = 524.288 here (t = 2,
    # E = 2^39, sigma = 1000), whose eps(1e-5) (Balle and Wang 2018) bounds the run's from below.
    # Before, the epochs' cell sums composed on a capped grid gave [0.0013, 274943] and delta(1e5)
    # was [0, 1]. (The upper end, the epochs' Renyi DP, is below the composed base Gaussians',
    # mu = sqrt(E) / sigma = 741.46, eps(1e-5) = 278039.)
    with strict_warnings():
        m = dpsgd(0.5, 1000.0, 2 ** 40, sampling="balls-in-bins")
        lo, up = m.epsilon_bounds(1e-5)
        d_lo, d_up = m.delta_bounds(1e5)
    with mpmath.workdps(60):
        mu = mpmath.sqrt(mpmath.mpf(2) ** 39) / (1000 * mpmath.sqrt(2))
        below, above = mpmath.mpf(1.3e5), mpmath.mpf(1.5e5)
        for _ in range(100):  # bisection: delta(eps) decreases
            mid = (below + above) / 2
            below, above = (mid, above) if mp_gaussian_delta(mu, mid) > 1e-5 else (below, mid)
        eps_ref = above
    assert eps_ref * (1 - 1e-9) <= lo <= eps_ref <= up
    delta_ref = mp_gaussian_delta(mu, 1e5)
    assert delta_ref * (1 - 1e-9) <= d_lo <= delta_ref <= d_up


def test_a_balls_in_bins_run_keeps_its_own_upper_end_where_it_is_tighter():
    # t = 2, sigma = 0.6, 5 epochs: the epochs' Renyi DP (20.85) beats the Gaussian (22.17).
    m = dpsgd(0.5, 0.6, 10, sampling="balls-in-bins")
    up = m.epsilon_bounds(1e-5)[1]
    assert up < gaussian_eps_closed(math.sqrt(5.0) / 0.6, 1e-5) - 1.0
