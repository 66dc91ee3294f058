"""dp_accounting's ``DpEvent`` as autoacct mechanisms, and a dp_accounting accountant backed by autoacct.

``from_dp_event(event)`` translates a ``DpEvent`` of dp_accounting 0.6 into the
mechanism with the same guarantee; :class:`AutoacctAccountant` is a
``dp_accounting.PrivacyAccountant``, so a dp_accounting user swaps one line::

    accountant = AutoacctAccountant()          # was: dp_accounting.pld.PLDAccountant()
    accountant.compose(event, count)
    accountant.get_epsilon(1e-5)               # certified upper bound

dp_accounting is an optional dependency: this module imports it when used.

Conventions, translated rather than guessed:

* Sensitivities and noise multipliers mean what dp_accounting says they mean:
  a noise multiplier is the noise's scale over the sensitivity, so
  ``GaussianDpEvent(s)`` is ``Gaussian(s)`` under add/remove. Under replace-one
  dp_accounting's two accountants disagree, and the larger pair is taken: its
  PLD accountant reads a plain ``GaussianDpEvent(s)`` as the pair (N(-1, s^2),
  N(1, s^2)), a shift of 2 (the value moves from -1 to 1 when a record is
  replaced), where its RDP accountant reads N(1, s^2) against N(0, s^2). So a
  Gaussian or Laplace event (or a discrete Laplace one, its sensitivity doubled)
  not inside a sampling event is ``Gaussian(s / 2)`` under replace-one, as the
  PLD accountant that ``AutoacctAccountant`` replaces has it. Inside
  ``SampledWithoutReplacementDpEvent`` and ``SampledWithReplacementDpEvent``,
  which only the RDP accountant supports, the noise multiplier is over the
  replace-one sensitivity, as there: a DP-SGD step sampled without replacement,
  whose clipped sum moves by 2 C when a record is replaced, is
  ``GaussianDpEvent(sigma / 2)``.
* Relations: ``ADD_OR_REMOVE_ONE`` is :attr:`Neighboring.ADD_REMOVE`,
  ``REPLACE_ONE`` is :attr:`Neighboring.REPLACE_ONE`. ``REPLACE_SPECIAL``
  (a record replaced by a special record that contributes nothing, the zero
  record of Kairouz et al. 2021) is accounted as add/remove wherever a mechanism
  is a function of the records' sum: replacing a record by one that adds
  nothing gives the output distribution of removing it. Randomized response is
  the exception: a special record is answered uniformly at random, so its pair
  is (the response to a value, the uniform distribution).
* Poisson subsampling is accounted under add/remove (or replace-special);
  sampling with and without replacement under replace-one: the relations their
  analyses refer to (dp_accounting's RDP accountant asks the same).
* ``TruncatedSubsampledGaussianDpEvent`` is :class:`TruncatedPoissonSubsample` under add/remove,
  whose truncated part is the add/remove pair of a replaced record (dp_accounting accounts it
  under replace-one, a larger pair), so its answers are at or below dp_accounting's.
* ``NonPrivateDpEvent`` has no finite guarantee: ``from_dp_event`` raises
  :class:`NonPrivateEventError`, and the accountant reports epsilon inf and
  delta 1, as dp_accounting's accountants do. ``NoOpDpEvent`` (and an event
  that never touches the record: count 0, sampling probability 0, one bucket)
  is the mechanism with epsilon 0 and delta 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from autoacct import _validation as check
from autoacct.accountant import Accountant
from autoacct.mechanism import MIN_DELTA, Mechanism, Neighboring
from autoacct.subsampling import (
    PoissonSubsample,
    SampleWithoutReplacement,
    SampleWithReplacement,
    TruncatedPoissonSubsample,
)
from autoacct.zoo import (
    ZCDP,
    DiscreteLaplace,
    DiscretePair,
    Gaussian,
    KaryRandomizedResponse,
    Laplace,
    MixtureOfGaussians,
    PureDP,
    RandomizedResponse,
    RepeatAndSelect,
    TreeAggregation,
)

#: The epsilon at which a query for epsilon = inf is answered (delta is non-increasing in epsilon).
_LARGE_EPSILON = 1e300

#: One translated event: the mechanisms it composes, with their counts.
Parts = list[tuple[Mechanism, int]]


class UnsupportedDpEventError(ValueError):
    """A DpEvent autoacct cannot account for; ``event`` is the offending (sub)event."""

    def __init__(self, event: Any, why: str) -> None:
        super().__init__(f"{type(event).__name__} is not supported: {why} (event: {event!r})")
        self.event = event


class NonPrivateEventError(UnsupportedDpEventError):
    """The event contains a ``NonPrivateDpEvent`` (or a zero noise parameter): no finite guarantee."""


def _dp() -> Any:
    try:
        import dp_accounting
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError("autoacct.integrations.dp_accounting needs dp-accounting: "
                          "pip install dp-accounting") from err
    return dp_accounting


def _events() -> Any:
    """dp_accounting's module of event classes (not all of them are exported by the package)."""
    return _dp().dp_event


def _relation(value: Any) -> Neighboring:
    """autoacct's relation for a Neighboring or a dp_accounting NeighboringRelation.

    Replace-special is kept apart (as itself) only by :func:`_translate`'s randomized
    response; everywhere else it is add/remove (module docstring).
    """
    if isinstance(value, Neighboring):
        return value
    rel = _dp().NeighboringRelation
    if value in (rel.ADD_OR_REMOVE_ONE, rel.REPLACE_SPECIAL):
        return Neighboring.ADD_REMOVE
    if value == rel.REPLACE_ONE:
        return Neighboring.REPLACE_ONE
    raise TypeError(f"neighboring must be an autoacct Neighboring or a dp_accounting "
                    f"NeighboringRelation, got {value!r}")


def _is_special(value: Any) -> bool:
    return not isinstance(value, Neighboring) and value == _dp().NeighboringRelation.REPLACE_SPECIAL


def _make(event: Any, build: Callable[[], Mechanism]) -> Mechanism:
    """``build()``, with a bad parameter reported against the event that carries it."""
    try:
        return build()
    except (TypeError, ValueError) as err:
        raise UnsupportedDpEventError(event, f"invalid parameters: {err}") from err


def _no_op() -> Mechanism:
    return PureDP(0.0, name="NoOp")


def _single(event: Any, parts: Parts) -> Mechanism:
    """The one mechanism the parts compose to (the mechanism itself for one run of one).

    Consecutive equal parts are merged by the stateful ledger (:class:`autoacct.Accountant`),
    so a self-composed step is one law composed by one spectrum power.
    """
    if not parts:
        return _no_op()
    if len(parts) == 1 and parts[0][1] == 1:
        return parts[0][0]
    ledger = Accountant()
    try:
        for m, k in parts:
            ledger.step(m, k)
    except (TypeError, ValueError) as err:
        raise UnsupportedDpEventError(event, f"its parts do not compose: {err}") from err
    entries = ledger.history
    if len(entries) == 1 and entries[0].count == 1:
        return entries[0].mechanism
    return _make(event, ledger.mechanism)


def _randomized_response(event: Any, special: bool) -> Parts:
    p, k = event.noise_parameter, event.num_buckets
    if not (isinstance(k, int) and k >= 1):
        raise UnsupportedDpEventError(event, f"num_buckets must be a positive integer, got {k!r}")
    if not 0.0 <= p <= 1.0:
        raise UnsupportedDpEventError(event, f"noise_parameter must be in [0, 1], got {p!r}")
    if k == 1 or p == 1.0:
        return []
    if p == 0.0:
        raise NonPrivateEventError(event, "noise_parameter 0 answers truthfully")
    if special:
        # A special record is answered uniformly: (M(x), uniform). Outcomes other than x share one
        # likelihood ratio, so two outcome classes carry the whole pair.
        return [(_make(event, lambda: DiscretePair((1.0 - p * (k - 1) / k, p * (k - 1) / k),
                                                   (1.0 / k, (k - 1) / k))), 1)]
    if k == 2:
        # Truthful with probability 1 - p + p/2 = 1 - p/2 (replace-one: the two answers' laws swap).
        return [(_make(event, lambda: RandomizedResponse(1.0 - p / 2.0)), 1)]
    return [(_make(event, lambda: KaryRandomizedResponse(p, k)), 1)]


def _mixture(event: Any, relation: Neighboring) -> Parts:
    if relation is not Neighboring.ADD_REMOVE:
        raise UnsupportedDpEventError(event, "a mixture of Gaussians is the pair of adding a record "
                                      "(ADD_OR_REMOVE_ONE or REPLACE_SPECIAL), as in dp_accounting")
    sens, probs = tuple(event.sensitivities), tuple(event.sampling_probs)
    if all(s == 0 or w == 0 for s, w in zip(sens, probs)) and len(sens) == len(probs):
        return []
    if event.standard_deviation == 0:
        raise NonPrivateEventError(event, "standard_deviation 0 adds no noise")
    return [(_make(event, lambda: MixtureOfGaussians(event.standard_deviation, sens, probs)), 1)]


def _tree(event: Any) -> Parts:
    # A record takes part in one step of one tree (the event's premise), so only the deepest
    # tree matters: TreeAggregation's levels are dp_accounting's ceil(log2(steps + 1)).
    counts = event.step_counts if isinstance(event.step_counts, (list, tuple)) else [event.step_counts]
    if not counts or not all(isinstance(c, int) and c >= 0 for c in counts):
        raise UnsupportedDpEventError(event, f"step_counts must be a non-negative integer or a non-empty "
                                      f"list of them, got {event.step_counts!r}")
    if max(counts) == 0:
        return []
    if event.noise_multiplier == 0:
        raise NonPrivateEventError(event, "noise_multiplier 0 adds no noise")
    return [(_make(event, lambda: TreeAggregation(event.noise_multiplier, max(counts))), 1)]


def _truncated(event: Any, relation: Neighboring) -> Parts:
    # dataset_size counts the differing record too (dp_accounting's truncation probability is
    # that of the n - 1 others), as TruncatedPoissonSubsample's does.
    if relation is not Neighboring.ADD_REMOVE:
        raise UnsupportedDpEventError(event, "truncated Poisson subsampling is accounted under add/remove "
                                      "(ADD_OR_REMOVE_ONE or REPLACE_SPECIAL)")
    if event.sampling_probability == 0 or event.truncated_batch_size == 0 or event.dataset_size == 0:
        return []
    if event.noise_multiplier == 0:
        raise NonPrivateEventError(event, "noise_multiplier 0 adds no noise")
    return [(_make(event, lambda: TruncatedPoissonSubsample(
        event.sampling_probability, event.dataset_size, event.truncated_batch_size)(
            Gaussian(event.noise_multiplier))), 1)]


def _subsampled(event: Any, relation: Neighboring, special: bool) -> Parts:
    dp = _events()
    if isinstance(event, dp.PoissonSampledDpEvent) and event.sampling_probability == 0.0:
        return []  # the record is never sampled, whatever the event (a non-private one too)
    inner = _single(event.event, _translate(event.event, relation, special, sampled=True))
    if isinstance(event, dp.PoissonSampledDpEvent):
        if relation is not Neighboring.ADD_REMOVE:
            raise UnsupportedDpEventError(event, "Poisson subsampling is accounted under add/remove "
                                          "(ADD_OR_REMOVE_ONE or REPLACE_SPECIAL), not replace-one")
        return [(_make(event, lambda: PoissonSubsample(event.sampling_probability)(inner)), 1)]
    if relation is not Neighboring.REPLACE_ONE:
        raise UnsupportedDpEventError(event, "sampling a fixed-size batch is accounted under replace-one "
                                      "(NeighboringRelation.REPLACE_ONE), as in dp_accounting")
    n, b = event.source_dataset_size, event.sample_size
    if isinstance(event, dp.SampledWithoutReplacementDpEvent):
        if not (isinstance(n, int) and n >= 1):
            raise UnsupportedDpEventError(event, f"source_dataset_size must be a positive integer, got {n!r}")
        return [(_make(event, lambda: SampleWithoutReplacement(b / n)(inner)), 1)]
    return [(_make(event, lambda: SampleWithReplacement(b, n)(inner)), 1)]


def _translate(event: Any, relation: Neighboring, special: bool, sampled: bool = False) -> Parts:
    """The mechanisms (with counts) whose composition has ``event``'s guarantee; ``sampled``:
    inside a fixed-size sampling event (module docstring on replace-one)."""
    dp = _events()
    if isinstance(event, dp.NoOpDpEvent):
        return []
    if isinstance(event, dp.NonPrivateDpEvent):
        raise NonPrivateEventError(event, "the operation is not differentially private")
    if isinstance(event, dp.SelfComposedDpEvent):
        if not (isinstance(event.count, int) and event.count >= 0):
            raise UnsupportedDpEventError(event, f"count must be a non-negative integer, got {event.count!r}")
        if event.count == 0:
            return []  # never run, whatever the event (a non-private one too)
        return [(m, k * event.count) for m, k in _translate(event.event, relation, special, sampled)]
    if isinstance(event, dp.ComposedDpEvent):
        return [part for e in event.events for part in _translate(e, relation, special, sampled)]
    # A replaced record moves a plain event's value by twice its sensitivity (module docstring).
    spread = 2 if relation is Neighboring.REPLACE_ONE and not sampled else 1
    if isinstance(event, dp.GaussianDpEvent | dp.LaplaceDpEvent):
        s = event.noise_multiplier
        if s == 0:
            raise NonPrivateEventError(event, "noise_multiplier 0 adds no noise")
        kind = Gaussian if isinstance(event, dp.GaussianDpEvent) else Laplace
        return [(_make(event, lambda: kind(s / spread)), 1)]
    if isinstance(event, dp.DiscreteLaplaceDpEvent):
        # dp_accounting's mass e^{-a|x|} tanh(a/2) is autoacct's scale t = 1/a.
        a = event.noise_parameter
        if a == 0:
            raise NonPrivateEventError(event, "noise_parameter 0 adds no noise")
        return [(_make(event, lambda: DiscreteLaplace(1.0 / a, sensitivity=spread * event.sensitivity)), 1)]
    if isinstance(event, dp.ZCDpEvent):
        if event.rho == 0 and event.xi == 0:
            return []
        return [(_make(event, lambda: ZCDP(event.rho, event.xi)), 1)]
    if isinstance(event, dp.MixtureOfGaussiansDpEvent):
        return _mixture(event, relation)
    if isinstance(event, dp.SingleEpochTreeAggregationDpEvent):
        return _tree(event)
    if isinstance(event, dp.RandomizedResponseDpEvent):
        if relation is Neighboring.ADD_REMOVE and not special:
            raise UnsupportedDpEventError(event, "randomized response answers about one record's value: "
                                          "use REPLACE_ONE or REPLACE_SPECIAL, as in dp_accounting")
        return _randomized_response(event, special)
    if isinstance(event, dp.TruncatedSubsampledGaussianDpEvent):
        return _truncated(event, relation)
    if isinstance(event, dp.RepeatAndSelectDpEvent):
        inner = _single(event.event, _translate(event.event, relation, special, sampled))
        return [(_make(event, lambda: RepeatAndSelect(inner, event.mean, event.shape)), 1)]
    if isinstance(event, dp.PoissonSampledDpEvent | dp.SampledWithoutReplacementDpEvent
                  | dp.SampledWithReplacementDpEvent):
        return _subsampled(event, relation, special)
    raise UnsupportedDpEventError(event, "autoacct has no mechanism for it")


def from_dp_event(event: Any, neighboring: Any = Neighboring.ADD_REMOVE) -> Mechanism:
    """The autoacct mechanism with the guarantee of a dp_accounting ``DpEvent``.

    Parameters
    ----------
    event:
        A ``dp_accounting.DpEvent`` (module docstring for the conventions).
    neighboring:
        The relation D ~ D' the event's sensitivities refer to: an autoacct
        :class:`Neighboring` or a dp_accounting ``NeighboringRelation``
        (default add/remove, dp_accounting's default too).

    Raises
    ------
    UnsupportedDpEventError (a ValueError) naming the event autoacct cannot account
    for, NonPrivateEventError for a non-private one, TypeError for a non-event.
    """
    dp = _events()
    if not isinstance(event, dp.DpEvent):
        raise TypeError(f"event must be a dp_accounting DpEvent, got {event!r}")
    return _single(event, _translate(event, _relation(neighboring), _is_special(neighboring)))


def _accountant_base() -> type:
    return _dp().PrivacyAccountant


class AutoacctAccountant(_accountant_base()):  # type: ignore[misc]
    """A ``dp_accounting.PrivacyAccountant`` whose answers are autoacct's certified bounds.

    Parameters
    ----------
    neighboring_relation:
        dp_accounting's ``NeighboringRelation`` (default ``ADD_OR_REMOVE_ONE``).
    tol:
        Relative accuracy of autoacct's PLD route (default 1e-3).

    ``get_epsilon`` and ``get_delta`` return certified upper bounds (epsilon inf and
    delta 1 after a non-private event); ``epsilon_bounds`` and ``mechanism`` give the
    certified bracket and the composed mechanism.
    """

    def __init__(self, neighboring_relation: Any = None, tol: float | None = None) -> None:
        rel = _dp().NeighboringRelation
        relation = rel.ADD_OR_REMOVE_ONE if neighboring_relation is None else neighboring_relation
        if not isinstance(relation, rel):
            raise TypeError(f"neighboring_relation must be a dp_accounting NeighboringRelation, "
                            f"got {neighboring_relation!r}")
        super().__init__(relation)
        self._tol = tol
        self._ledger_parts = Accountant()
        self._non_private = False
        self._composed: Mechanism | None = None

    def _maybe_compose(self, event: Any, count: int, do_compose: bool) -> Any:
        try:
            parts = _translate(event, _relation(self.neighboring_relation),
                               _is_special(self.neighboring_relation))
        except NonPrivateEventError:
            if do_compose and count > 0:
                self._non_private = True
            return None
        except UnsupportedDpEventError as err:
            return self.CompositionErrorDetails(invalid_event=err.event, error_message=str(err))
        if do_compose and count > 0:
            for m, k in parts:
                self._ledger_parts.step(m, k * count)
            self._composed = None
        return None

    @property
    def _parts(self) -> Parts:
        return [(e.mechanism, e.count) for e in self._ledger_parts.history]

    def mechanism(self) -> Mechanism:
        """The composition of everything composed so far (epsilon 0 when nothing was)."""
        if self._non_private:
            raise NonPrivateEventError(_events().NonPrivateDpEvent(), "a non-private event was composed")
        if self._composed is None:
            self._composed = _single(self.ledger, self._parts)
        return self._composed

    def get_epsilon(self, target_delta: float) -> float:
        """Certified upper bound on epsilon at ``target_delta`` (inf after a non-private event)."""
        # (a negative delta was answered inf: a ValueError, as epsilon_bounds gives)
        target_delta = check.real("target_delta", target_delta, low=0.0)
        if self._non_private:
            return math.inf
        if target_delta >= 1.0 or not self._parts:
            return 0.0
        m = self.mechanism()
        if target_delta < MIN_DELTA:
            # eps(delta) <= eps(0), the max divergence: RDP of order infinity where known.
            return float(m.rdp(math.inf)) if "rdp" in m.routes else math.inf
        return float(m.epsilon(target_delta, tol=self._tol))

    def get_delta(self, target_epsilon: float) -> float:
        """Certified upper bound on delta at ``target_epsilon`` (1 after a non-private event)."""
        if self._non_private:
            return 1.0
        if not self._parts:
            return 0.0
        # delta(eps) does not increase with eps, so a bound at eps = 1e300 holds at any larger eps.
        return float(self.mechanism().delta(min(target_epsilon, _LARGE_EPSILON), tol=self._tol))

    def epsilon_bounds(self, target_delta: float) -> tuple[float, float]:
        """(lower, upper) around the true epsilon at ``target_delta``."""
        if self._non_private:
            return math.inf, math.inf
        if not self._parts:
            return 0.0, 0.0
        lo, up = self.mechanism().epsilon_bounds(target_delta, tol=self._tol)
        return float(lo), float(up)
