"""from_dp_event and AutoacctAccountant against dp_accounting's own accountants and contract."""

from __future__ import annotations

import math

import pytest
from closed_forms import rr_eps_closed

dp_accounting = pytest.importorskip("dp_accounting")

from dp_accounting import dp_event as ev  # noqa: E402
from dp_accounting import privacy_accountant_test as contract  # noqa: E402
from dp_accounting.pld import PLDAccountant  # noqa: E402
from dp_accounting.rdp import RdpAccountant  # noqa: E402

from autoacct import Composition, Gaussian, Laplace, Neighboring, PoissonSubsample  # noqa: E402
from autoacct.integrations.dp_accounting import (  # noqa: E402
    AutoacctAccountant,
    NonPrivateEventError,
    from_dp_event,
)
from autoacct.subsampling import (  # noqa: E402
    SampleWithoutReplacement,
    SampleWithReplacement,
    TruncatedPoissonSubsample,
)
from autoacct.zoo import (  # noqa: E402
    ZCDP,
    DiscreteLaplace,
    DiscretePair,
    KaryRandomizedResponse,
    MixtureOfGaussians,
    RandomizedResponse,
    RepeatAndSelect,
)

NR = dp_accounting.NeighboringRelation
ADD, REPLACE = NR.ADD_OR_REMOVE_ONE, NR.REPLACE_ONE
DELTAS = (1e-5, 1e-8)

# (id, event, relation, dp_accounting's PLD accountant takes it, its RDP accountant takes it)
CASES = [
    ("gaussian", ev.SelfComposedDpEvent(ev.GaussianDpEvent(2.0), 10), ADD, True, True),
    ("laplace", ev.SelfComposedDpEvent(ev.LaplaceDpEvent(3.0), 5), ADD, True, True),
    ("discrete-laplace", ev.SelfComposedDpEvent(ev.DiscreteLaplaceDpEvent(0.5, 2), 3), ADD, True, False),
    ("rr-binary", ev.RandomizedResponseDpEvent(0.5, 2), REPLACE, True, True),
    # dp_accounting 0.6's PLD accountant drops the count of a self-composed randomized response
    # (it answers log 3 here), so only its RDP accountant is a reference.
    ("rr-binary-20", ev.SelfComposedDpEvent(ev.RandomizedResponseDpEvent(0.5, 2), 20), REPLACE, False, True),
    ("poisson-gaussian", ev.SelfComposedDpEvent(ev.PoissonSampledDpEvent(0.01, ev.GaussianDpEvent(1.1)), 300),
     ADD, True, True),
    ("poisson-laplace", ev.SelfComposedDpEvent(ev.PoissonSampledDpEvent(0.05, ev.LaplaceDpEvent(2.0)), 50),
     ADD, True, False),
    ("composed", ev.ComposedDpEvent([
        ev.SelfComposedDpEvent(ev.GaussianDpEvent(3.0), 4),
        ev.SelfComposedDpEvent(ev.PoissonSampledDpEvent(0.02, ev.GaussianDpEvent(0.9)), 100),
        ev.NoOpDpEvent(),
        ev.GaussianDpEvent(5.0)]), ADD, True, True),
    ("zcdp", ev.SelfComposedDpEvent(ev.ZCDpEvent(0.05), 4), ADD, False, True),
    ("zcdp-xi", ev.SelfComposedDpEvent(ev.ZCDpEvent(0.05, 0.01), 4), ADD, False, True),
    ("rr-kary", ev.RandomizedResponseDpEvent(0.3, 5), REPLACE, True, True),
    ("rr-kary-20", ev.SelfComposedDpEvent(ev.RandomizedResponseDpEvent(0.3, 5), 20), REPLACE, False, True),
    ("rr-special", ev.RandomizedResponseDpEvent(0.5, 4), NR.REPLACE_SPECIAL, True, True),
    # dp_accounting accounts tree aggregation under replace-special only; autoacct under add/remove too.
    ("tree", ev.SelfComposedDpEvent(ev.SingleEpochTreeAggregationDpEvent(2.0, [100, 37]), 3),
     NR.REPLACE_SPECIAL, False, True),
    # At or below dp_accounting's: it accounts the truncated part under replace-one (see the module).
    ("truncated", ev.SelfComposedDpEvent(ev.TruncatedSubsampledGaussianDpEvent(1000, 0.05, 50, 2.0), 10),
     ADD, False, False),
    ("repeat-select", ev.RepeatAndSelectDpEvent(
        ev.SelfComposedDpEvent(ev.PoissonSampledDpEvent(0.01, ev.GaussianDpEvent(1.0)), 300), 5.0, 1.0),
     ADD, False, True),
    ("without-replacement", ev.SelfComposedDpEvent(
        ev.SampledWithoutReplacementDpEvent(10_000, 100, ev.GaussianDpEvent(1.0)), 200), REPLACE, False, True),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_against_dp_accounting(case: tuple) -> None:
    """Within 0.1% of dp_accounting's PLD answer, whose value lies in (or just above) the bracket,
    and never above its RDP answer (deltas >= 1e-8, where its defaults are reliable)."""
    _, event, relation, has_pld, has_rdp = case
    acc = AutoacctAccountant(relation).compose(event)
    for delta in DELTAS:
        lo, up = acc.epsilon_bounds(delta)
        assert lo <= up == acc.get_epsilon(delta)
        if has_pld:
            theirs = PLDAccountant(relation).compose(event).get_epsilon(delta)
            assert abs(up - theirs) <= 1e-3 * theirs, (delta, up, theirs)
            # Their pessimistic PLD is an upper bound up to its discretisation (interval 1e-4).
            assert lo <= theirs + 1e-4, (delta, lo, theirs)
        if has_rdp:
            rdp = RdpAccountant(neighboring_relation=relation).compose(event).get_epsilon(delta)
            assert up <= rdp, (delta, up, rdp)


def test_self_composed_randomized_response_is_exact() -> None:
    """20 runs of binary randomized response (truthful with probability 3/4): the bracket holds the
    exact epsilon of the binomial sum."""
    acc = AutoacctAccountant(REPLACE).compose(ev.SelfComposedDpEvent(ev.RandomizedResponseDpEvent(0.5, 2), 20))
    for delta in DELTAS:
        lo, up = acc.epsilon_bounds(delta)
        assert lo <= rr_eps_closed(math.log(3.0), 20, delta) <= up


def test_a_replace_one_gaussian_event_is_the_pld_accountants_pair() -> None:
    # It was Gaussian(s), below dp_accounting's PLD accountant (4.37718 at s = 2, delta 1e-5)
    # that AutoacctAccountant stands in for: eps 1.99309. Found by a probe.
    event = ev.SelfComposedDpEvent(ev.GaussianDpEvent(2.0), 5)
    theirs = PLDAccountant(REPLACE, value_discretization_interval=1e-5).compose(event).get_epsilon(1e-5)
    lo, up = AutoacctAccountant(REPLACE).compose(event).epsilon_bounds(1e-5)
    assert lo <= theirs and abs(up - theirs) <= 1e-6 * theirs


def test_translations_are_the_mechanisms_they_name() -> None:
    """Each event becomes the autoacct mechanism with dp_accounting's stated semantics."""
    q, s = 0.01, 1.1
    pairs = [
        (ev.SelfComposedDpEvent(ev.PoissonSampledDpEvent(q, ev.GaussianDpEvent(s)), 300), ADD,
         Composition()([PoissonSubsample(q)(Gaussian(s))], [300])),
        # dp_accounting's pmf e^{-a|x|} tanh(a/2) has autoacct's scale t = 1/a.
        (ev.DiscreteLaplaceDpEvent(0.5, 2), ADD, DiscreteLaplace(2.0, sensitivity=2)),
        # Truthful with probability (1 - p) + p / 2.
        (ev.RandomizedResponseDpEvent(0.4, 2), REPLACE, RandomizedResponse(0.8)),
        (ev.SampledWithoutReplacementDpEvent(1000, 10, ev.GaussianDpEvent(s)), REPLACE,
         SampleWithoutReplacement(0.01)(Gaussian(s))),
        (ev.SampledWithReplacementDpEvent(1000, 10, ev.GaussianDpEvent(s)), REPLACE,
         SampleWithReplacement(10, 1000)(Gaussian(s))),
        # Under replace-one a plain event's value moves by twice its sensitivity, as
        # dp_accounting's PLD accountant has it (its RDP accountant reads a shift of 1).
        (ev.GaussianDpEvent(s), REPLACE, Gaussian(s / 2)),
        (ev.LaplaceDpEvent(s), REPLACE, Laplace(s / 2)),
        (ev.DiscreteLaplaceDpEvent(0.5, 2), REPLACE, DiscreteLaplace(2.0, sensitivity=4)),
        (ev.ZCDpEvent(0.05), ADD, ZCDP(0.05)),
        (ev.ZCDpEvent(0.05, 0.2), ADD, ZCDP(0.05, 0.2)),
        (ev.RandomizedResponseDpEvent(0.3, 5), REPLACE, KaryRandomizedResponse(0.3, 5)),
        # A special record is answered uniformly: (M(x), uniform over the 4 buckets).
        (ev.RandomizedResponseDpEvent(0.5, 4), NR.REPLACE_SPECIAL,
         DiscretePair((0.625, 0.125, 0.125, 0.125), (0.25, 0.25, 0.25, 0.25))),
        # (MixtureOfGaussians meets dp_accounting's PLD in tests/zoo/test_mixture.py; building theirs
        # takes 25 s at its default discretisation.)
        (ev.MixtureOfGaussiansDpEvent(1.5, [0.0, 1.0], [0.9, 0.1]), ADD,
         MixtureOfGaussians(1.5, (0.0, 1.0), (0.9, 0.1))),
        # A record is in one step of one tree: the deepest tree's levels, ceil(log2(100 + 1)) = 7.
        (ev.SingleEpochTreeAggregationDpEvent(2.0, [100, 37]), ADD, Gaussian(2.0 / math.sqrt(7.0))),
        (ev.RepeatAndSelectDpEvent(ev.GaussianDpEvent(2.0), 3.0, 1.0), ADD, RepeatAndSelect(Gaussian(2.0), 3.0, 1.0)),
        (ev.ComposedDpEvent([ev.LaplaceDpEvent(2.0), ev.SelfComposedDpEvent(ev.LaplaceDpEvent(2.0), 2)]), ADD,
         Composition()([Laplace(2.0)], [3])),
    ]
    for event, relation, mechanism in pairs:
        ours = from_dp_event(event, relation)
        assert ours.epsilon(1e-6) == pytest.approx(mechanism.epsilon(1e-6), rel=1e-12), event
        assert ours.delta(0.5) == pytest.approx(mechanism.delta(0.5), rel=1e-12), event


def test_truncated_poisson_is_at_most_dp_accountings() -> None:
    event = ev.SelfComposedDpEvent(ev.TruncatedSubsampledGaussianDpEvent(1000, 0.05, 50, 2.0), 10)
    ours = AutoacctAccountant().compose(event).get_epsilon(1e-6)
    theirs = PLDAccountant(ADD, value_discretization_interval=1e-3).compose(event).get_epsilon(1e-6)
    assert ours <= theirs * (1 + 1e-3)
    assert ours == Composition()([TruncatedPoissonSubsample(0.05, 1000, 50)(Gaussian(2.0))], [10]).epsilon(1e-6)


def test_with_replacement_is_accepted_under_replace_one() -> None:
    """dp_accounting's accountants take no SampledWithReplacementDpEvent; autoacct does (replace-one)."""
    event = ev.SelfComposedDpEvent(ev.SampledWithReplacementDpEvent(1000, 10, ev.GaussianDpEvent(1.0)), 50)
    assert not PLDAccountant(REPLACE).supports(event)
    assert not RdpAccountant(neighboring_relation=REPLACE).supports(event)
    acc = AutoacctAccountant(REPLACE)
    assert acc.supports(event)
    lo, up = acc.compose(event).epsilon_bounds(1e-6)
    # Each draw sees the record with probability at most 1 - (1 - 1/n)^B; without replacement
    # the same batch sees it with probability B / n, and the differing record at most once.
    swor = Composition()([SampleWithoutReplacement(0.01)(Gaussian(1.0))], [50]).epsilon(1e-6)
    assert 0 < lo <= up and up >= swor * (1 - 1e-3)


def test_replace_special_is_add_remove_for_sums() -> None:
    event = ev.SelfComposedDpEvent(ev.PoissonSampledDpEvent(0.02, ev.GaussianDpEvent(1.0)), 50)
    special = AutoacctAccountant(NR.REPLACE_SPECIAL).compose(event).get_epsilon(1e-6)
    assert special == AutoacctAccountant(ADD).compose(event).get_epsilon(1e-6)
    assert special == pytest.approx(PLDAccountant(NR.REPLACE_SPECIAL).compose(event).get_epsilon(1e-6), rel=1e-3)


@pytest.mark.parametrize("event, relation, words", [
    (ev.UnsupportedDpEvent(), ADD, "UnsupportedDpEvent"),
    (ev.TruncatedSubsampledGaussianDpEvent(1000, 0.01, 12, 1.0), REPLACE, "add/remove"),
    (ev.PoissonSampledDpEvent(0.1, ev.GaussianDpEvent(1.0)), REPLACE, "add/remove"),
    (ev.SampledWithoutReplacementDpEvent(100, 10, ev.GaussianDpEvent(1.0)), ADD, "replace-one"),
    (ev.RandomizedResponseDpEvent(0.5, 2), ADD, "REPLACE_ONE"),
    (ev.PoissonSampledDpEvent(1.5, ev.GaussianDpEvent(1.0)), ADD, "1.5"),
    (ev.GaussianDpEvent(-1.0), ADD, "-1.0"),
    (ev.SelfComposedDpEvent(ev.GaussianDpEvent(1.0), -2), ADD, "count"),
    (ev.RandomizedResponseDpEvent(1.5, 2), REPLACE, "noise_parameter"),
    (ev.MixtureOfGaussiansDpEvent(1.0, [0.0, 1.0], [0.5, 0.5]), REPLACE, "adding a record"),
    (ev.MixtureOfGaussiansDpEvent(1.0, [0.0, -1.0], [0.5, 0.5]), ADD, "sensitivities"),
    (ev.SingleEpochTreeAggregationDpEvent(1.0, []), ADD, "step_counts"),
    (ev.RepeatAndSelectDpEvent(ev.GaussianDpEvent(1.0), 0.5, 1.0), ADD, "mean"),
])
def test_unsupported_events_raise_naming_them(event: object, relation: object, words: str) -> None:
    with pytest.raises(ValueError, match=words) as info:
        from_dp_event(event, relation)
    assert type(info.value.event).__name__ in str(info.value)
    assert not AutoacctAccountant(relation).supports(ev.ComposedDpEvent([ev.NoOpDpEvent(), event]))


def test_non_private_and_no_op() -> None:
    with pytest.raises(NonPrivateEventError, match="NonPrivateDpEvent"):
        from_dp_event(ev.ComposedDpEvent([ev.GaussianDpEvent(1.0), ev.NonPrivateDpEvent()]))
    with pytest.raises(NonPrivateEventError, match="noise_multiplier 0"):
        from_dp_event(ev.GaussianDpEvent(0.0))
    for event in (ev.NoOpDpEvent(), ev.SelfComposedDpEvent(ev.GaussianDpEvent(1.0), 0),
                  ev.PoissonSampledDpEvent(0.0, ev.GaussianDpEvent(1.0))):
        m = from_dp_event(event)
        assert m.epsilon(1e-9) == 0.0 and m.delta(0.0) == 0.0
    acc = AutoacctAccountant().compose(ev.GaussianDpEvent(1.0)).compose(ev.NonPrivateDpEvent())
    assert acc.get_epsilon(1e-5) == math.inf and acc.get_delta(3.0) == 1.0


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="event"):
        from_dp_event(Gaussian(1.0))
    with pytest.raises(TypeError, match="neighboring"):
        from_dp_event(ev.GaussianDpEvent(1.0), "add/remove")
    with pytest.raises(TypeError, match="neighboring_relation"):
        AutoacctAccountant(Neighboring.ADD_REMOVE)


def test_edge_deltas_are_sound() -> None:
    """delta 0 (or below the smallest query) is answered by the max divergence, an upper bound there."""
    acc = AutoacctAccountant().compose(ev.SelfComposedDpEvent(ev.LaplaceDpEvent(2.0), 3))
    assert acc.get_epsilon(0.0) == pytest.approx(1.5, rel=1e-15) and acc.get_epsilon(0.0) >= 1.5
    assert acc.get_epsilon(1e-320) == acc.get_epsilon(0.0)
    assert acc.get_epsilon(1.0) == 0.0
    assert AutoacctAccountant().compose(ev.GaussianDpEvent(1.0)).get_epsilon(0.0) == math.inf
    assert acc.get_delta(math.inf) == 0.0


def test_ledger_and_equal_steps_merge() -> None:
    step = ev.PoissonSampledDpEvent(0.01, ev.GaussianDpEvent(1.1))
    acc = AutoacctAccountant()
    for _ in range(3):
        acc.compose(step, 100)
    assert acc.ledger == ev.SelfComposedDpEvent(step, 300) or acc.ledger == ev.ComposedDpEvent(
        [ev.SelfComposedDpEvent(step, 100)] * 3)
    assert acc.get_epsilon(1e-5) == Composition()([PoissonSubsample(0.01)(Gaussian(1.1))], [300]).epsilon(1e-5)


class TestDpAccountingContract(contract.PrivacyAccountantTest):
    """dp_accounting's own PrivacyAccountant contract (unsupported events, no events, no-op, non-private)."""

    def _make_test_accountants(self) -> list:
        return [AutoacctAccountant(), AutoacctAccountant(REPLACE), AutoacctAccountant(NR.REPLACE_SPECIAL)]


def test_get_epsilon_refuses_a_negative_delta_as_epsilon_bounds_does() -> None:
    # It answered inf (a delta below MIN_DELTA read as the max divergence). Found by a probe.
    acc = AutoacctAccountant().compose(ev.GaussianDpEvent(1.0))
    for ask in (acc.get_epsilon, acc.epsilon_bounds):
        with pytest.raises(ValueError, match="delta"):
            ask(-0.1)


@pytest.mark.parametrize("event", [ev.SelfComposedDpEvent(ev.GaussianDpEvent(0.0), 0),
                                   ev.PoissonSampledDpEvent(0.0, ev.GaussianDpEvent(0.0)),
                                   ev.SelfComposedDpEvent(ev.NonPrivateDpEvent(), 0)], ids=repr)
def test_an_event_that_never_touches_the_record_is_private_whatever_it_wraps(event) -> None:
    # As the module docstring says (count 0, sampling probability 0); the wrapped event was
    # translated first, and its zero noise reported the whole event non-private. Found by a probe.
    m = from_dp_event(event)
    assert m.epsilon(1e-5) == 0.0 and m.delta(1.0) == 0.0
