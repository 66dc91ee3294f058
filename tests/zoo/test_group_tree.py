"""Group privacy and tree aggregation against closed forms and dp_accounting.

References: the analytic Gaussian (Balle and Wang 2018) at sensitivity g or at
mu = sqrt(levels) / noise_multiplier, with the level count ceil(log2(steps + 1))
computed here in floating point; randomized response's binomial closed form for
pure DP scaled by g; dp_accounting's RDP accountant on SingleEpochTreeAggregationDpEvent.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from closed_forms import gaussian_delta_closed, gaussian_eps_closed, rr_eps_closed

from autoacct.zoo import (
    ZCDP,
    ApproxDP,
    Composition,
    Gaussian,
    Group,
    Laplace,
    NoisyGD,
    PureDP,
    RandomizedResponse,
    TreeAggregation,
)

# ----- Group --------------------------------------------------------------------------------------


@pytest.mark.parametrize("sigma, g", [(2.0, 3), (0.8, 2), (10.0, 7)])
def test_group_of_a_gaussian_is_the_gaussian_with_sensitivity_g(sigma, g):
    m = Group(g)(Gaussian(sigma))
    mu = g / sigma
    assert m.exact_gdp_mu() == pytest.approx(mu, rel=1e-15)
    for d in (1e-3, 1e-6, 1e-10):
        truth = gaussian_eps_closed(mu, d)
        lo, up = m.epsilon_bounds(d)
        assert lo <= truth * (1 + 1e-9) and truth * (1 - 1e-9) <= up <= truth * (1 + 1e-6)
    assert float(m.rdp(2.0)) == pytest.approx(2.0 * mu * mu / 2.0, rel=1e-12)


def test_group_of_a_composed_gdp_mechanism():
    m = Group(2)(Composition()([NoisyGD([1.0, 2.0]), Gaussian(3.0)], [2, 1]))
    mu = 2.0 * math.sqrt(2 * (1 + 1 / 4) + 1 / 9)
    assert m.delta(1.0) == pytest.approx(gaussian_delta_closed(mu, 1.0), rel=1e-9)


def test_group_of_pure_dp_is_g_eps_dp():
    m = Group(4)(PureDP(0.25))
    assert m.dp_guarantee() == (1.0, 0.0)
    # Dominated by the group pair of Dong, Roth and Su (2022), whose eps(d) is the upper end
    # (it was randomized response's with log-odds g eps, 0.98623 at d = 1e-2 against the pair's
    # 0.98205). PureDP(eps), any eps-DP mechanism, includes the geometric mechanism on a count,
    # whose group pair is that pair: the lower end is its eps(d) too (it was randomized response's
    # with log-odds g eps / 2, 0.5 below it at d = 1e-5).
    from closed_forms import mp_group_pure_dp_delta

    for d in (1e-2, 1e-5):
        up = m.epsilon(d)
        assert up < rr_eps_closed(1.0, 1, d)
        # delta decreases in eps: at most d at the upper end, above it a little below.
        assert mp_group_pure_dp_delta(0.25, 4, 1, up) <= d <= mp_group_pure_dp_delta(0.25, 4, 1, up * (1 - 1e-6))
        lo = m.epsilon_bounds(d)[0]
        assert rr_eps_closed(0.5, 1, d) < lo and up - lo <= 1e-9 * up
        assert mp_group_pure_dp_delta(0.25, 4, 1, lo) >= d
    # A pure-DP child that is one mechanism (randomized response on the record's own bit) is
    # not claimed tight: its lower end is at most the child's own eps.
    rr = Group(4)(RandomizedResponse(0.75))
    assert rr.epsilon_bounds(1e-5)[0] <= rr_eps_closed(math.log(3.0), 1, 1e-5) * (1 + 1e-9)
    lap = Group(3)(Laplace(2.0))
    assert lap.epsilon(1e-300) <= 1.5 * (1 + 1e-12)


@pytest.mark.parametrize("child", [ZCDP(0.5), ApproxDP(1.0, 1e-6)])
def test_group_of_other_mechanisms_is_refused(child):
    with pytest.raises(ValueError, match="only exact for Gaussian"):
        Group(2)(child)


@pytest.mark.parametrize("g", [0, -1, 1.5, math.nan])
def test_group_size_is_validated(g):
    with pytest.raises(ValueError, match="g must"):
        Group(g)


def test_a_group_mu_beyond_the_gaussians_range_is_refused_naming_g():
    # g mu = 2^52 * 1e300 overflowed to inf, and the group answered (1e308, inf) from it.
    with pytest.raises(ValueError, match=r"g=4503599627370496 gives the group mu = .* = inf .* overflows"):
        Group(2 ** 52)(Gaussian(1e-300))
    # The largest g the message names is accepted: its mu, g / sigma (the Gaussian with
    # sensitivity g), is within Gaussian(1e-300)'s 1e300; one more is refused.
    sigma = 3e-291
    with pytest.raises(ValueError, match=r"g may be at most \d+") as info:
        Group(2 ** 52)(Gaussian(sigma))
    most = int(re.search(r"at most (\d+)$", str(info.value)).group(1))
    assert most == math.floor(1e300 * sigma) or most == math.floor(1e300 * sigma) - 1
    assert Group(most)(Gaussian(sigma)).exact_gdp_mu() == pytest.approx(most / sigma, rel=1e-15)
    with pytest.raises(ValueError, match="overflows"):
        Group(most + 1)(Gaussian(sigma))


def test_group_rejects_non_mechanisms():
    with pytest.raises(TypeError, match="mechanism"):
        Group(2)(3.0)


# ----- TreeAggregation ---------------------------------------------------------------------------


@pytest.mark.parametrize("nm, steps", [(1.0, 1), (2.0, 3), (4.0, 4), (3.0, 100), (10.0, 1024)])
def test_tree_aggregation_is_the_gaussian_at_sqrt_levels_over_noise(nm, steps):
    levels = math.ceil(math.log2(steps + 1))     # dp_accounting's depth
    m = TreeAggregation(nm, steps)
    assert m.levels == levels
    mu = math.sqrt(levels) / nm
    for d in (1e-3, 1e-6, 1e-9):
        truth = gaussian_eps_closed(mu, d)
        assert truth * (1 - 1e-9) <= m.epsilon(d) <= truth * (1 + 1e-6)
    alpha = np.array([2.0, 8.0])
    assert np.allclose(m.rdp(alpha), alpha * levels / (2 * nm * nm), rtol=1e-12)


@pytest.mark.parametrize("nm, steps, epochs", [(2.0, 100, 1), (5.0, 1000, 10), (1.0, 7, 3)])
def test_tree_aggregation_is_below_dp_accountings_rdp_answer(nm, steps, epochs):
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import RdpAccountant
    acc = RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_SPECIAL)
    acc.compose(dpa.SelfComposedDpEvent(dpa.SingleEpochTreeAggregationDpEvent(nm, steps), epochs))
    m = Composition()([TreeAggregation(nm, steps)], [epochs])
    for d in (1e-5, 1e-9):
        theirs = acc.get_epsilon(d)
        ours = m.epsilon(d)
        assert ours <= theirs
        # Their RDP of the same Gaussian: converted, within the conversion's usual gap.
        assert ours >= 0.5 * theirs
        assert m.epsilon(d, via="rdp") <= theirs * (1 + 1e-9)


@pytest.mark.parametrize("make, name", [
    (lambda: TreeAggregation(0.0, 10), "noise_multiplier"),
    (lambda: TreeAggregation(-1.0, 10), "noise_multiplier"),
    (lambda: TreeAggregation(1.0, 0), "steps"),
    (lambda: TreeAggregation(1.0, 2.5), "steps"),
])
def test_tree_aggregation_parameters_are_validated(make, name):
    with pytest.raises(ValueError, match=name):
        make()


@pytest.mark.parametrize(("g", "eps", "k"), [(3, 0.1, 20), (5, 0.02, 200), (2, 2.0, 1), (2, 1.0, 5)])
def test_composed_group_of_pure_dp_is_below_the_group_pair(g: int, eps: float, k: int) -> None:
    # Any eps-DP mechanism includes the geometric mechanism on a count, whose pair between the
    # datasets without and with the group is the group pair that dominates every eps-DP
    # mechanism's (Dong, Roth and Su 2022): the lower ends are its k-fold ones, at most those of
    # that pair and within 1e-9 of them. They were randomized response's with log-odds g eps,
    # above that pair (g = 3, eps = 0.1, k = 20, eps(1e-5) 5.3868 against 5.2858; g = 2, eps = 2,
    # one run, delta(0) 0.9640 against 1 - e^-2 = 0.8647), then with log-odds g eps / 2, below it
    # (2.568 there).
    from closed_forms import mp_group_pure_dp_delta, rr_delta_closed

    m = Composition()([Group(g)(PureDP(eps))], [k]) if k > 1 else Group(g)(PureDP(eps))
    lo, up = m.epsilon_bounds(1e-5)
    assert rr_eps_closed(g * eps / 2, k, 1e-5) * (1 - 1e-6) <= lo <= up <= lo * (1 + 1e-9)
    assert lo == 0.0 or mp_group_pure_dp_delta(eps, g, k, lo) >= 1e-5
    for x in (0.0, eps):
        low = float(m.delta_bounds(x)[0])
        truth = mp_group_pure_dp_delta(eps, g, k, x)
        assert truth * (1 - 1e-9) <= low <= truth
        assert low >= rr_delta_closed(g * eps / 2, k, x) * (1 - 1e-6)


@pytest.mark.filterwarnings("ignore:eps\\(1e-05\\) bounds")
def test_composed_group_of_pure_dp_at_the_largest_eps_is_answered() -> None:
    # g eps / 2 = 2e100 is beyond PureDP's range (1e100): the attained pair raised ValueError on
    # every composed query; it is now capped there (a post-processing, also attained).
    lo, up = Composition()([Group(4)(PureDP(1e100))], [2]).epsilon_bounds(1e-5)
    assert 0.0 <= lo <= up


@pytest.mark.parametrize(("g", "eps", "k"), [(3, 0.1, 20), (2, 2.0, 1), (5, 0.3, 10), (40, 0.05, 4)])
def test_group_of_pure_dp_upper_end_is_the_group_pairs(g: int, eps: float, k: int) -> None:
    # The upper ends are those of Dong, Roth and Su's group pair (its k-fold delta at 50
    # digits: at most delta at the upper end, within 1e-3 of it), below randomized response's
    # with log-odds g eps, which they were (5.3868 against 5.2858 at g = 3, eps = 0.1, k = 20;
    # delta(0) 0.9640 against 0.8647 at g = 2, eps = 2); the laws' masses total 1.
    from closed_forms import mp_group_pure_dp_delta

    from autoacct.zoo.group_pure import group_pure_dp_loss

    law = group_pure_dp_loss(eps, g)
    assert abs(float(np.sum(law.p_mass)) - 1.0) < 1e-12 and abs(float(np.sum(law.q_mass)) - 1.0) < 1e-12
    m = Composition()([Group(g)(PureDP(eps))], [k]) if k > 1 else Group(g)(PureDP(eps))
    up = float(m.epsilon_bounds(1e-5)[1])
    assert mp_group_pure_dp_delta(eps, g, k, up) <= 1e-5 <= mp_group_pure_dp_delta(eps, g, k, up * (1 - 1e-3))
    assert up < rr_eps_closed(g * eps, k, 1e-5)
    d_up = float(m.delta_bounds(0.0)[1])
    assert mp_group_pure_dp_delta(eps, g, k, 0.0) <= d_up <= mp_group_pure_dp_delta(eps, g, k, 0.0) * (1 + 1e-9)
