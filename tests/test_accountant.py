"""The stateful ledger: its answers are those of the Composition of its entries, checked against
closed forms (Gaussian compositions are exactly GDP, Balle and Wang 2018), and it round-trips
through JSON exactly."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pytest
from closed_forms import gaussian_delta_closed, gaussian_eps_closed

from autoacct import Accountant, Composition, Gaussian, Laplace, Mechanism, PoissonSubsample, dpsgd
from autoacct.zoo import SampleWithoutReplacement


def _step(sigma: float, q: float) -> Mechanism:
    return PoissonSubsample(q)(Gaussian(sigma))


def test_empty_ledger_has_released_nothing():
    acc = Accountant()
    assert acc.epsilon(1e-5) == 0.0 and acc.delta(0.5) == 0.0 and len(acc) == 0
    assert acc.epsilon_bounds(1e-5) == (0.0, 0.0)
    with pytest.raises(ValueError, match="empty"):
        acc.mechanism()


def test_answers_are_those_of_the_composition_of_merged_entries():
    acc = Accountant()
    for _ in range(40):
        acc.step_dpsgd(1.1, 0.01)
    acc.step(_step(1.1, 0.01), 10)          # the same step, given as a mechanism: merged
    acc.step(Laplace(3.0), 2)
    acc.step_dpsgd(1.1, 0.01, count=30)
    acc.step_dpsgd(1.0, 0.02, count=10)
    assert [e.count for e in acc.history] == [50, 2, 30, 10]
    assert len(acc) == 92
    fresh = Composition()([_step(1.1, 0.01), Laplace(3.0), _step(1.1, 0.01), _step(1.0, 0.02)],
                          [50, 2, 30, 10])
    assert acc.epsilon(1e-5) == fresh.epsilon(1e-5)
    assert acc.epsilon_bounds(1e-5) == fresh.epsilon_bounds(1e-5)
    assert acc.delta(1.0) == fresh.delta(1.0)
    assert acc.epsilon(1e-5, via="rdp") == fresh.epsilon(1e-5, via="rdp")


def test_dpsgd_ledger_is_dpsgd():
    acc = Accountant().step_dpsgd(1.1, 0.01, count=300)
    assert acc.epsilon(1e-5) == dpsgd(0.01, 1.1, 300).epsilon(1e-5)


def test_gaussian_ledger_against_closed_form():
    # Gaussians compose exactly: mu = sqrt(sum k_i / sigma_i^2), answered in closed form.
    acc = Accountant().step(Gaussian(2.0), 3).step(Gaussian(4.0)).step(Gaussian(2.0))
    mu = math.sqrt(4 / 4 + 1 / 16)
    eps = acc.epsilon(1e-5)
    truth = gaussian_eps_closed(mu, 1e-5)
    assert truth <= eps <= truth * (1 + 1e-9)
    assert acc.delta(1.0) >= gaussian_delta_closed(mu, 1.0) * (1 - 1e-12)


def test_remaining_is_certified_for_dpsgd():
    acc = Accountant().step_dpsgd(1.1, 0.01, count=500)
    n = acc.remaining(2.0, 1e-5, noise_multiplier=1.1, sample_rate=0.01)
    assert n > 0
    assert dpsgd(0.01, 1.1, 500 + n).epsilon(1e-5) <= 2.0 < dpsgd(0.01, 1.1, 501 + n).epsilon(1e-5)
    acc.step_dpsgd(1.1, 0.01, count=n)
    assert acc.epsilon(1e-5) <= 2.0
    assert acc.remaining(2.0, 1e-5, noise_multiplier=1.1, sample_rate=0.01) == 0


def test_remaining_of_gaussians_against_closed_form():
    # n more Gaussian(sigma) after the ledger's mu0: mu^2 = mu0^2 + n / sigma^2.
    acc = Accountant().step(Gaussian(1.0), 2)
    n = acc.remaining(8.0, 1e-6, Gaussian(3.0))
    fits = [k for k in range(max(n - 3, 0), n + 4)
            if gaussian_eps_closed(math.sqrt(2 + k / 9), 1e-6) <= 8.0]
    assert max(fits) - 1 <= n <= max(fits)   # the certified bound sits above the truth
    assert acc.remaining(1e-3, 1e-6, Gaussian(3.0)) == 0
    assert acc.remaining(1e6, 1e-6, Gaussian(3.0), max_steps=50) == 50


def test_remaining_with_a_different_kind_starts_a_new_entry():
    acc = Accountant().step(Laplace(1.0))
    n = acc.remaining(5.0, 1e-6, Laplace(2.0))
    # Pure DP: k runs of Laplace(b) are (k / b)-DP, and delta(eps) > 0 just below it.
    assert n in (8, 7)
    assert Composition()([Laplace(1.0), Laplace(2.0)], [1, n]).epsilon(1e-6) <= 5.0


def test_json_round_trip_is_exact():
    acc = Accountant().step_dpsgd(1.1, 0.01, 100).step(Laplace(0.1 + 0.2), 3)
    acc.step(Gaussian(1 / 3, name="g"))
    text = acc.to_json()
    back = Accountant.from_json(text)
    assert back.to_json() == text
    assert [e.count for e in back.history] == [100, 3, 1]
    assert back.history[1].mechanism.b == 0.1 + 0.2   # floats written exactly
    assert back.epsilon(1e-5) == acc.epsilon(1e-5)
    back.step_dpsgd(1.1, 0.01)   # resumed steps merge only with equal entries
    assert [e.count for e in back.history] == [100, 3, 1, 1]


def test_json_of_a_nested_composition():
    inner = Composition()([Gaussian(2.0), Laplace(1.0)], [2, 1])
    acc = Accountant().step(inner, 2)
    back = Accountant.from_json(acc.to_json())
    assert back.epsilon(1e-5) == Composition()([inner], [2]).epsilon(1e-5)


@dataclass(frozen=True, eq=False, repr=False)
class _Mine(Mechanism):
    mu: float

    def exact_gdp_mu(self) -> float:
        return self.mu


def test_json_names_what_cannot_be_written():
    acc = Accountant().step(Gaussian(1.0)).step(_Mine(0.5), 2)
    assert acc.epsilon(1e-5) == Composition()([Gaussian(1.0), _Mine(0.5)], [1, 2]).epsilon(1e-5)
    with pytest.raises(TypeError, match=r"history\[1\].*_Mine"):
        acc.to_json()


@pytest.mark.parametrize("text, match", [
    ("not json", "not JSON"),
    (json.dumps({"format": "other"}), "not a ledger"),
    (json.dumps({"format": "autoacct.Accountant", "version": 1,
                 "entries": [{"mechanism": {"class": "os:system", "fields": {}}, "count": 1}]}),
     "not an autoacct mechanism"),
    (json.dumps({"format": "autoacct.Accountant", "version": 1,
                 "entries": [{"mechanism": {"class": "autoacct.zoo.mechanisms:Gaussian",
                                            "fields": {"sigma": 1.0}}, "count": -2}]}),
     "count"),
])
def test_from_json_rejects_other_text(text: str, match: str):
    with pytest.raises(ValueError, match=match):
        Accountant.from_json(text)


@pytest.mark.parametrize("call, exc, match", [
    (lambda a: a.step(Gaussian(1.0), -1), ValueError, "count.*-1"),
    (lambda a: a.step(Gaussian(1.0), 0), ValueError, "count.*0"),
    (lambda a: a.step(Gaussian(1.0), 1.5), ValueError, "count.*1.5"),
    (lambda a: a.step(Gaussian(1.0), "2"), TypeError, "count.*'2'"),
    (lambda a: a.step("Gaussian"), TypeError, "mechanism"),
    (lambda a: a.step_dpsgd(0.0, 0.01), ValueError, "noise_multiplier.*0.0"),
    (lambda a: a.step_dpsgd(-1.0, 0.01), ValueError, "noise_multiplier.*-1.0"),
    (lambda a: a.step_dpsgd(1.0, 1.5), ValueError, "sample_rate.*1.5"),
    (lambda a: a.step_dpsgd(1.0, -0.1), ValueError, "sample_rate.*-0.1"),
    (lambda a: a.step_dpsgd(1.0, 0.1, count=-3), ValueError, "count.*-3"),
    (lambda a: a.epsilon(0.0), ValueError, "delta.*0.0"),
    (lambda a: a.epsilon(1.5), ValueError, "delta.*1.5"),
    (lambda a: a.remaining(1.0, 2.0, Gaussian(1.0)), ValueError, "delta.*2.0"),
    (lambda a: a.remaining(-1.0, 1e-5, Gaussian(1.0)), ValueError, "epsilon.*-1.0"),
    (lambda a: a.remaining(1.0, 1e-5), ValueError, "noise_multiplier and sample_rate"),
    (lambda a: a.remaining(1.0, 1e-5, noise_multiplier=0.0, sample_rate=0.1), ValueError,
     "noise_multiplier.*0.0"),
    (lambda a: a.step(SampleWithoutReplacement(0.1)(Gaussian(1.0))), ValueError, "neighbouring"),
])
def test_bad_input_is_named(call, exc, match):
    acc = Accountant().step_dpsgd(1.0, 0.1)
    with pytest.raises(exc, match=match):
        call(acc)
    assert len(acc) == 1   # a rejected step records nothing


def test_empty_ledger_validates_its_queries():
    with pytest.raises(ValueError, match="delta"):
        Accountant().epsilon(0.0)
    with pytest.raises(ValueError, match="epsilon"):
        Accountant().delta(-1.0)


def test_ledger_asked_often_equals_fresh_compositions_bitwise():
    """Asked every 120 of 600 DP-SGD steps, then after a Laplace release and more steps, the
    ledger reuses discretised laws, tail sides and log-MGF rows across its counts (process-wide
    caches); each answer equals, bit for bit, that of the same Composition built fresh after
    the caches are emptied (computed from nothing), and the ledger asked again after emptying
    them answers the same."""
    from autoacct.pld.lawcache import clear_caches

    acc = Accountant()
    asked = []
    for i in range(1, 601):
        acc.step_dpsgd(1.1, 0.01)
        if i % 120 == 0:
            asked.append(([_step(1.1, 0.01)], [i], acc.epsilon_bounds(1e-5)))
    acc.step(Laplace(3.0))
    for j in (40, 80):
        acc.step_dpsgd(1.1, 0.01, count=40)
        asked.append(([_step(1.1, 0.01), Laplace(3.0), _step(1.1, 0.01)], [600, 1, j], acc.epsilon_bounds(1e-5)))
    for mechanisms, counts, bounds in asked:
        clear_caches()
        assert Composition()(mechanisms, counts).epsilon_bounds(1e-5) == bounds
    clear_caches()
    assert Accountant.from_json(acc.to_json()).epsilon_bounds(1e-5) == asked[-1][2]


@pytest.mark.parametrize("query, value", [("epsilon", 1e-320), ("epsilon_bounds", 0.0), ("delta", math.inf),
                                          ("delta_bounds", -1.0)])
def test_an_empty_ledger_refuses_what_a_ledger_with_steps_refuses(query: str, value: float) -> None:
    # The empty ledger answered 0 to delta = 1e-320 and epsilon = inf, which one step later
    # raise ValueError.
    empty, used = Accountant(), Accountant()
    used.step(Gaussian(1.0))
    for acc in (used, empty):
        with pytest.raises(ValueError, match="delta" if query.startswith("epsilon") else "epsilon"):
            getattr(acc, query)(value)


def test_approx_dp_steps_of_different_deltas_stay_apart() -> None:
    # ApproxDP keeps its delta as an init-only argument: left out of the ledger's description,
    # a (1, 1e-3) step merged into a (1, 1e-9) one and epsilon(1e-4) read 1.9998, where no
    # finite eps holds (the (1, 1e-3) step alone has delta(eps) >= 1e-3 at every eps).
    from autoacct.zoo import ApproxDP
    acc = Accountant()
    acc.step(ApproxDP(1.0, 1e-9))
    acc.step(ApproxDP(1.0, 1e-3))
    direct = Composition()([ApproxDP(1.0, 1e-9), ApproxDP(1.0, 1e-3)], [1, 1])
    for ledger in (acc, Accountant.from_json(acc.to_json())):
        assert ledger.epsilon(1e-4) == math.inf == direct.epsilon(1e-4)
        assert ledger.delta(2.0) >= 1e-3
    one = Accountant()
    one.step(ApproxDP(1.0, 1e-9))
    assert one.remaining(3.0, 1e-4, ApproxDP(1.0, 1e-3)) == 0
