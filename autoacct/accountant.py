"""A stateful privacy ledger: record the mechanisms a run releases, ask for its privacy at any time.

A training loop calls :meth:`Accountant.step` (or :meth:`Accountant.step_dpsgd`) after each
release and asks :meth:`Accountant.epsilon` when it wants to know where it stands. The ledger
is a list of (mechanism, count) entries; the guarantee it certifies is that of the adaptive
composition of all of them, :meth:`Accountant.mechanism`, so every answer is the answer of

    ``Composition()([m_1, m_2, ...], [k_1, k_2, ...])``

with consecutive equal steps merged into one entry (their count summed). Two mechanisms are
equal here when they have the same class and the same field values (mechanisms compare by
identity otherwise); a mechanism the ledger cannot describe by its fields is merged only
with itself. Merging changes nothing mathematically (k runs then j runs of M are k + j runs
of M) and makes a DP-SGD run one entry, which the accountant composes by one spectrum power.

Asked again after more steps, the ledger composes the new count afresh, but what does not
depend on the exact count is shared by value through the PLD accountant's process-wide
caches (discretised laws on ranges that follow the count by powers of 2, their log-MGF
tables, tail sides): the answer is the same bits as that of a fresh ``Composition``, and a
query every 100 of 10,000 DP-SGD steps costs about half a query asked once.

The ledger round-trips through JSON (:meth:`Accountant.to_json`,
:meth:`Accountant.from_json`) when each mechanism is one of autoacct's own (a zoo mechanism,
possibly subsampled or composed): it is written as its class and its fields, and rebuilt from
them, so the resumed ledger answers every query exactly as the saved one would have.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import json
import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from autoacct import _validation as check
from autoacct.calibrators.calibrate import calibrate_result
from autoacct.errors import InfeasibleBudgetError
from autoacct.mechanism import MIN_DELTA, Mechanism, Neighboring
from autoacct.subsampling.schemes import scheme
from autoacct.zoo.transformers import Composition, common_neighboring

__all__ = ["Accountant", "Entry"]

#: Identifies the JSON a ledger is saved as, and the version of its layout.
_FORMAT = "autoacct.Accountant"
_VERSION = 1
#: Default cap on the number of steps :meth:`Accountant.remaining` searches.
_MAX_STEPS = 10 ** 9


@dataclass(frozen=True)
class Entry:
    """One entry of the ledger: ``count`` consecutive runs of ``mechanism``."""

    mechanism: Mechanism
    count: int


# ----- mechanisms as plain data ------------------------------------------------------------

def _encode(value: Any, where: str) -> Any:
    """``value`` as JSON data; TypeError naming ``where`` and the value's type when it has none.

    A mechanism is written as its class (module and name, autoacct's own classes only) and
    its init fields; the cache is not a field of the description (it is recomputed).
    """
    if isinstance(value, Mechanism):
        cls = type(value)
        if not cls.__module__.startswith("autoacct."):
            raise TypeError(f"{where}: cannot serialise mechanism {cls.__qualname__} (module "
                            f"{cls.__module__}): only autoacct's own mechanisms are written to JSON")
        fields = {f.name: _encode(getattr(value, f.name), f"{where}.{f.name}")
                  for f in dataclasses.fields(value) if f.init}
        # Init-only arguments (dataclasses.InitVar) are no fields: each is written from the
        # field that stores it (ApproxDP's delta, kept as delta0). Left out, two ApproxDP steps
        # of different deltas compared equal and merged into one entry of the smaller delta.
        for arg, stored in getattr(cls, "INIT_ONLY", {}).items():
            fields[arg] = _encode(getattr(value, stored), f"{where}.{arg}")
        return {"class": f"{cls.__module__}:{cls.__qualname__}", "fields": fields}
    if isinstance(value, Neighboring):
        return {"neighboring": value.value}
    if isinstance(value, enum.Enum):
        raise TypeError(f"{where}: cannot serialise enum member {value!r}")
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        x = float(value)
        # JSON has no infinities or NaN: written as strings, read back exactly.
        return x if math.isfinite(x) else {"float": repr(x)}
    if isinstance(value, (tuple, list)):
        return {"tuple": [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    raise TypeError(f"{where}: cannot serialise a value of type {type(value).__name__} "
                    f"({value!r:.60})")


def _decode(data: Any, where: str) -> Any:
    """The value :func:`_encode` wrote (ValueError naming ``where`` for anything else)."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, dict):
        if set(data) == {"class", "fields"}:
            return _mechanism_of(data["class"], data["fields"], where)
        if set(data) == {"neighboring"}:
            return Neighboring(data["neighboring"])
        if set(data) == {"float"} and data["float"] in ("inf", "-inf", "nan"):
            return float(data["float"])
        if set(data) == {"tuple"} and isinstance(data["tuple"], list):
            return tuple(_decode(v, f"{where}[{i}]") for i, v in enumerate(data["tuple"]))
    raise ValueError(f"{where}: not a value written by Accountant.to_json: {data!r:.80}")


def _mechanism_of(name: Any, fields: Any, where: str) -> Mechanism:
    """The autoacct mechanism class ``module:qualname`` built from its decoded fields."""
    if not isinstance(name, str) or ":" not in name or not name.startswith("autoacct.") \
            or not isinstance(fields, dict):
        raise ValueError(f"{where}: not an autoacct mechanism: {name!r}")
    module, qualname = name.split(":", 1)
    try:
        cls = getattr(importlib.import_module(module), qualname)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{where}: unknown mechanism class {name!r}") from exc
    if not (isinstance(cls, type) and issubclass(cls, Mechanism)):
        raise ValueError(f"{where}: {name!r} is not a Mechanism")
    kwargs = {k: _decode(v, f"{where}.{k}") for k, v in fields.items()}
    return cls(**kwargs)


def _key(mechanism: Mechanism) -> Hashable:
    """Equality of ledger entries: class and fields when they can be written, else identity."""
    try:
        return json.dumps(_encode(mechanism, "mechanism"), sort_keys=True)
    except TypeError:
        return ("id", id(mechanism))


# ----- the ledger ----------------------------------------------------------------------------

def _merged(entries: list[Entry], keys: list[Hashable], mechanism: Mechanism,
            key: Hashable, count: int) -> tuple[list[Entry], list[Hashable]]:
    """The ledger with ``count`` more runs of ``mechanism``: merged into the last entry when equal."""
    if entries and keys[-1] == key:
        return entries[:-1] + [Entry(entries[-1].mechanism, entries[-1].count + count)], keys
    return entries + [Entry(mechanism, count)], keys + [key]


def _count(count: Any) -> int:
    return check.bounded_int("count", count)


def _dpsgd_step(noise_multiplier: Any, sample_rate: Any) -> Mechanism:
    """One DP-SGD step, Poisson sampling under add/remove (as :func:`autoacct.dpsgd` builds it)."""
    sigma = check.real("noise_multiplier", noise_multiplier, low=0.0, low_open=True)
    q = check.real("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True)
    return scheme("poisson").step(q, sigma)


class Accountant:
    """A ledger of the mechanisms a run has released, certified as their adaptive composition.

    Every query (epsilon, delta and their bounds) is that of :meth:`mechanism`, the
    composition of the ledger's entries: an epsilon is a certified upper bound on the
    true epsilon(delta) of everything released so far. An empty ledger has released
    nothing: epsilon and delta are 0.

    Example::

        acc = Accountant()
        for _ in range(1000):
            acc.step_dpsgd(noise_multiplier=1.1, sample_rate=0.01)
        acc.epsilon(1e-5)
    """

    def __init__(self) -> None:
        self._entries: list[Entry] = []
        self._keys: list[Hashable] = []
        self._mechanism: Mechanism | None = None
        # DP-SGD steps already built, by (sigma, q): a training loop records the same step
        # thousands of times, and building and describing it again costs more than the merge.
        self._dpsgd_steps: dict[tuple[float, float], tuple[Mechanism, Hashable]] = {}

    # ----- recording ----------------------------------------------------------------------
    def step(self, mechanism: Mechanism, count: int = 1) -> Accountant:
        """Record ``count`` >= 1 runs of ``mechanism`` (adaptively composed); returns self.

        The mechanism's neighbouring relation must agree with the ledger's (ValueError).
        """
        if not isinstance(mechanism, Mechanism):
            raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
        return self._record(mechanism, _key(mechanism), _count(count))

    def _record(self, mechanism: Mechanism, key: Hashable, count: int) -> Accountant:
        if self._entries and self._keys[-1] == key:
            last = self._entries[-1]
            check.bounded_int("count", last.count + count)  # the merged count stays exact as a float
            self._entries[-1] = Entry(last.mechanism, last.count + count)
        else:
            common_neighboring([*(e.mechanism for e in self._entries), mechanism])
            self._entries.append(Entry(mechanism, count))
            self._keys.append(key)
        self._mechanism = None
        return self

    def step_dpsgd(self, noise_multiplier: float, sample_rate: float, count: int = 1) -> Accountant:
        """Record ``count`` DP-SGD steps: ``PoissonSubsample(sample_rate)(Gaussian(noise_multiplier))``.

        ``noise_multiplier`` sigma > 0 is the noise std over the clipping norm; ``sample_rate``
        q in (0, 1] is the probability that a record joins a batch (Poisson sampling, add/remove
        neighbouring, as ``autoacct.dpsgd(sample_rate, noise_multiplier, steps)``).
        """
        sigma = check.real("noise_multiplier", noise_multiplier, low=0.0, low_open=True)
        q = check.real("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True)
        k = _count(count)
        made = self._dpsgd_steps.get((sigma, q))
        if made is None:
            mech = _dpsgd_step(sigma, q)
            made = self._dpsgd_steps[(sigma, q)] = (mech, _key(mech))
        return self._record(made[0], made[1], k)

    # ----- the ledger ---------------------------------------------------------------------
    @property
    def history(self) -> list[Entry]:
        """The entries (mechanism, count), consecutive equal steps merged, oldest first."""
        return list(self._entries)

    @property
    def steps(self) -> int:
        """Total number of runs recorded."""
        return sum(e.count for e in self._entries)

    def __len__(self) -> int:
        return self.steps

    def mechanism(self) -> Mechanism:
        """``Composition()`` of the entries: the mechanism whose privacy the ledger certifies.

        Kept until the next step, so that repeated queries reuse its accountant.
        """
        if not self._entries:
            raise ValueError("the ledger is empty: no mechanism has been recorded")
        if self._mechanism is None:
            self._mechanism = Composition()([e.mechanism for e in self._entries],
                                            [e.count for e in self._entries])
        return self._mechanism

    # ----- queries --------------------------------------------------------------------------
    def _empty(self, name: str, value: Any, high: float) -> Any:
        # The same ranges as a mechanism's queries (Mechanism.epsilon, Mechanism.delta), so that
        # a value refused after the first step is refused before it too.
        if name == "delta":
            arr = check.real_array(name, value, low=MIN_DELTA, high=high, high_open=True)
        else:
            arr = check.real_array(name, value, low=0.0)
        return 0.0 if arr.ndim == 0 else np.zeros_like(arr)

    def epsilon(self, delta: Any, via: str = "auto", tol: float | None = None) -> Any:
        """Certified upper bound on epsilon(delta) of the ledger, delta in (0, 1)."""
        if not self._entries:
            return self._empty("delta", delta, 1.0)
        return self.mechanism().epsilon(delta, via=via, tol=tol)

    def epsilon_bounds(self, delta: Any, tol: float | None = None) -> tuple[Any, Any]:
        """(lower, upper): certified bounds around the ledger's true epsilon(delta)."""
        if not self._entries:
            z = self._empty("delta", delta, 1.0)
            return z, z
        return self.mechanism().epsilon_bounds(delta, tol=tol)

    def delta(self, epsilon: Any, via: str = "auto", tol: float | None = None) -> Any:
        """Certified upper bound on delta(epsilon) of the ledger, epsilon >= 0."""
        if not self._entries:
            return self._empty("epsilon", epsilon, math.inf)
        return self.mechanism().delta(epsilon, via=via, tol=tol)

    def delta_bounds(self, epsilon: Any, tol: float | None = None) -> tuple[Any, Any]:
        """(lower, upper): certified bounds around the ledger's true delta(epsilon)."""
        if not self._entries:
            z = self._empty("epsilon", epsilon, math.inf)
            return z, z
        return self.mechanism().delta_bounds(epsilon, tol=tol)

    def remaining(self, epsilon: float, delta: float, mechanism: Mechanism | None = None, *,
                  noise_multiplier: float | None = None, sample_rate: float | None = None,
                  tol: float | None = None, max_steps: int = _MAX_STEPS) -> int:
        """How many more runs of one kind fit the budget (epsilon, delta): certified.

        The kind is ``mechanism``, or a DP-SGD step given by ``noise_multiplier`` and
        ``sample_rate`` (as :meth:`step_dpsgd`). Returns the largest n in [0, ``max_steps``]
        such that the ledger with n more runs has certified ``epsilon(delta, tol=tol) <=
        epsilon``: n runs fit, and (unless n is ``max_steps``) n + 1 do not, by the same
        certified upper bound, the one the ledger will report after those steps. A first
        guess from :func:`autoacct.calibrators.calibrate` over integer counts (epsilon grows
        with the count), then galloping and bisection to two adjacent counts; each trial is
        the ledger's own composition with the new runs merged into its last entry.
        """
        eps_target = check.real("epsilon", epsilon, low=0.0, low_open=True)
        d = check.real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
        cap = check.bounded_int("max_steps", max_steps)
        if mechanism is None:
            if noise_multiplier is None or sample_rate is None:
                raise ValueError("give mechanism, or noise_multiplier and sample_rate")
            mechanism = _dpsgd_step(noise_multiplier, sample_rate)
        elif noise_multiplier is not None or sample_rate is not None:
            raise ValueError("give mechanism, or noise_multiplier and sample_rate, not both")
        elif not isinstance(mechanism, Mechanism):
            raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
        common_neighboring([*(e.mechanism for e in self._entries), mechanism])
        key = _key(mechanism)

        def ledger_with(n: int) -> Mechanism:
            entries, _ = _merged(self._entries, self._keys, mechanism, key, n)
            return Composition()([e.mechanism for e in entries], [e.count for e in entries])

        def fits(n: int) -> bool:
            return bool(ledger_with(n).epsilon(d, tol=tol) <= eps_target)

        if not fits(1):
            return 0
        if cap == 1:
            return 1
        try:
            # A first guess only: with the loosest rtol the calibrator stops once it has a
            # safe count and an unsafe one within a factor 1.5 (one cheap certificate).
            lo = int(calibrate_result(ledger_with, eps_target, d, (1, cap), integer=True,
                                      increasing=True, tol=tol, rtol=0.5, name="steps").value)
        except InfeasibleBudgetError:
            lo = 1
        # lo fits. Gallop up to a count that does not, then bisect, so that the answer n fits
        # and n + 1 does not, both by the certified bound the ledger will report.
        if not fits(lo):
            lo = 1
        step, hi = 1, cap + 1
        while lo < cap:
            cand = min(lo + step, cap)
            if not fits(cand):
                hi = cand
                break
            lo, step = cand, 2 * step
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if fits(mid):
                lo = mid
            else:
                hi = mid
        return lo

    # ----- saving and resuming ---------------------------------------------------------------
    def to_json(self) -> str:
        """The ledger as JSON text, read back exactly by :meth:`from_json`.

        Raises TypeError naming the entry and the field that cannot be written (a
        mechanism class outside autoacct, or a field value that is not a number, string,
        tuple or mechanism).
        """
        entries = [{"mechanism": _encode(e.mechanism, f"history[{i}].mechanism"), "count": e.count}
                   for i, e in enumerate(self._entries)]
        return json.dumps({"format": _FORMAT, "version": _VERSION, "entries": entries})

    @classmethod
    def from_json(cls, text: str) -> Accountant:
        """The ledger :meth:`to_json` wrote (ValueError for any other text)."""
        if not isinstance(text, (str, bytes)):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"text is not JSON: {exc}") from exc
        if not isinstance(data, dict) or data.get("format") != _FORMAT \
                or data.get("version") != _VERSION or not isinstance(data.get("entries"), list):
            raise ValueError(f"text is not a ledger written by Accountant.to_json "
                             f"(format {_FORMAT!r}, version {_VERSION})")
        acc = cls()
        for i, item in enumerate(data["entries"]):
            if not isinstance(item, dict) or set(item) != {"mechanism", "count"}:
                raise ValueError(f"entries[{i}] must be {{'mechanism', 'count'}}, got {item!r:.80}")
            mech = _decode(item["mechanism"], f"entries[{i}].mechanism")
            if not isinstance(mech, Mechanism):
                raise ValueError(f"entries[{i}].mechanism is not a mechanism")
            acc.step(mech, item["count"])
        return acc

    def __repr__(self) -> str:
        inner = ", ".join(f"{e.mechanism.name} x {e.count}" for e in self._entries)
        return f"Accountant([{inner}])"
