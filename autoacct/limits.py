"""The resource budget of a query: the memory and the time one public query may use.

Every query of the FFT accountant answers within a memory budget (default 1 GB) and
a time budget (default 10 s). Before each large step (discretising a law on a grid,
composing on an FFT window, a refinement pass) the accountant estimates what the
step will take; a step the budget cannot afford is not started. The accountant
then answers from what it has already composed: every profile it made is a
certified bound, so the bracket stays valid (upper >= truth >= lower), only wider
than ``tol``; an :class:`~autoacct.errors.BudgetWarning` says which budget ran out
and what to change. When nothing certified was affordable the bracket is the
trivial one (eps in [0, inf], delta in [0, 1]): the "auto" route then still takes
the Renyi-DP bound, which costs little memory.

Why a warning and not an error: the bounds returned are true, and a caller who
composes many queries (a calibrator's search, a curve) is better served by a valid
loose answer than by an exception; ``warnings.simplefilter("error", BudgetWarning)``
turns it into one for those who want it.

The budget is settable globally (:func:`set_limits`) and for a block of code::

    with autoacct.limits(memory=4e9, seconds=60):
        m.epsilon(1e-12)

Use ``from autoacct.limits import ...`` for the module's other names:
``autoacct.limits`` itself is the context manager.

What is measured. ``memory`` bounds the working arrays of each step plus the arrays
the accountant keeps, by estimates of bytes per grid cell and per FFT point
(measured with tracemalloc on the largest steps, rounded up); the interpreter and
its libraries (about 100 MB) come on top. ``seconds`` bounds the predicted time of
a query's large steps (discretisations and FFTs), summed: each step's time is
predicted from its size by rates measured on a loaded 2-core machine (see
:mod:`autoacct.pld.grid` and :mod:`autoacct.pld.compose`), and a step whose
prediction would take the sum past the budget is not started. The clock is a
prediction rather than the wall clock on purpose: an answer then does not depend
on the machine's speed or load (a query asked twice gets the same bounds), and
the wall time is bounded in proportion to that speed. Work that is not a grid
step (Chernoff bounds, tilts) is not counted.

The Renyi-DP and characteristic-function routes are bounded by the wall clock
instead: their cost is that of series expansions and quadratures whose length no
size predicts. Each such route of a query starts a deadline (:func:`deadline`, three
times the time budget from its start), which the composition of many mechanisms checks between
its parts (:func:`check_deadline`), and the characteristic function's direct sums between
their blocks (one law composed 1e9 times took minutes there): a Renyi-DP query on one part
is never cut. A route stopped
there answers with what it has (the search over Renyi orders keeps its best order,
every order's bound being valid; a curve not summed over all its parts bounds
nothing, so +inf) and a :class:`BudgetWarning`. Only a query that reaches the
deadline can depend on the machine's speed.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from autoacct.errors import BudgetExceeded

#: Default memory budget of one query, in bytes.
DEFAULT_MEMORY = 1e9
#: Default time budget of one query, in seconds.
DEFAULT_SECONDS = 10.0


@dataclass(frozen=True)
class Limits:
    """A memory budget in bytes and a time budget in seconds (either may be ``inf``)."""

    memory: float = DEFAULT_MEMORY
    seconds: float = DEFAULT_SECONDS

    def __post_init__(self) -> None:
        object.__setattr__(self, "memory", _positive("memory", self.memory))
        object.__setattr__(self, "seconds", _positive("seconds", self.seconds))


def _positive(name: str, value: Any) -> float:
    """``value`` as a float if it is a positive real number (``inf`` allowed), else ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a positive number (or inf), got {value!r}")
    return float(value)


#: The budget set by :func:`set_limits` (for every thread), and the one of the innermost
#: ``with limits(...)`` block in this context, if any.
_GLOBAL = [Limits()]
_CURRENT: ContextVar[Limits | None] = ContextVar("autoacct_limits", default=None)


@dataclass
class _Query:
    """The running query: the predicted seconds of the steps it has started, and the bytes
    its accountant already holds (its cached PLDs), which every step's estimate adds to."""

    held: Callable[[], float]
    spent: float = 0.0


_QUERY: ContextVar[_Query | None] = ContextVar("autoacct_query", default=None)
#: Share of the memory budget that one step's working arrays may take when a grid or an
#: FFT window is sized: the rest is left for the interpreter, the cached PLDs and the
#: arrays a step keeps (its result).
STEP_SHARE = 0.5


def current() -> Limits:
    """The budget in force: the innermost ``with limits(...)`` block's, else the global one."""
    return _CURRENT.get() or _GLOBAL[0]


def set_limits(memory: float | None = None, seconds: float | None = None) -> Limits:
    """Set the global budget of every later query, in every thread (a ``with limits(...)``
    block still overrides it inside); None keeps a value. Returns the previous global
    budget. Raises ValueError naming ``memory`` or ``seconds`` for a value that is not a
    positive number, and then changes nothing."""
    old = _GLOBAL[0]
    _GLOBAL[0] = Limits(old.memory if memory is None else memory, old.seconds if seconds is None else seconds)
    return old


@contextmanager
def limits(memory: float | None = None, seconds: float | None = None) -> Iterator[Limits]:
    """Run a block under another budget (None keeps a value); the previous one is restored
    on leaving it, also on an exception. The values are checked on entry."""
    new = Limits(current().memory if memory is None else memory,
                 current().seconds if seconds is None else seconds)
    token = _CURRENT.set(new)
    try:
        yield new
    finally:
        _CURRENT.reset(token)


@contextmanager
def query_clock(held: Callable[[], float]) -> Iterator[None]:
    """Start a query's clock, unless a query is already running (an inner query, e.g. a
    delta asked by an eps search, shares the outer one's deadline). ``held`` gives the
    bytes that the query's accountant holds."""
    if _QUERY.get() is not None:
        yield
        return
    token = _QUERY.set(_Query(held))
    try:
        yield
    finally:
        _QUERY.reset(token)


def afford(nbytes: float, seconds: float, what: str) -> None:
    """Raise :class:`BudgetExceeded` if a step needing ``nbytes`` of working memory (on top
    of what the running query's accountant holds) and about ``seconds`` of time does not
    fit the budget; ``what`` names the step in the message. Outside a query only the
    memory is checked."""
    lim = current()
    query = _QUERY.get()
    held = query.held() if query is not None else 0.0
    if nbytes + held > lim.memory:
        kept = f" with the {_size(held)} kept" if held > 0 else ""
        raise BudgetExceeded("memory", f"{what} needs about {_size(nbytes + held)}{kept}, over the "
                             f"memory budget of {_size(lim.memory)}")
    if query is not None:
        if query.spent + seconds > lim.seconds:
            raise BudgetExceeded("time", f"{what} would end past the time budget of {lim.seconds:g} s "
                                 f"(it takes about {seconds:.2g} s after {query.spent:.2g} s of such steps)")
        query.spent += seconds
        _PREDICTED.total = predicted_seconds() + seconds


def share_left(share: float) -> AbstractContextManager[Limits]:
    """The running query's time budget cut to what it has spent plus ``share`` of what it has
    left (the whole budget outside a query): a first try that may fail runs under it, so that
    what comes after it still has the rest."""
    query = _QUERY.get()
    spent = query.spent if query is not None else 0.0
    return limits(seconds=spent + share * max(current().seconds - spent, 0.0))


#: Predicted seconds of every step started in this thread (see :func:`predicted_seconds`).
_PREDICTED = threading.local()


def predicted_seconds() -> float:
    """The predicted seconds of every grid step started so far in this thread, all queries
    together: the difference across a call is that call's predicted work, a measure of its
    cost that, unlike the wall clock, does not depend on the machine or its load."""
    return float(getattr(_PREDICTED, "total", 0.0))


#: The wall-clock deadline of the running public query (time.monotonic() seconds), if any.
_DEADLINE: ContextVar[float | None] = ContextVar("autoacct_deadline", default=None)


#: The wall-clock deadline is this many times the time budget. The budget's predicted
#: seconds are rates measured on a loaded machine; on a shared machine a query that fits
#: them can take a few times longer by the wall clock (the phi route on a three-part DP-SGD
#: schedule took 14.5 s at a load average of 7.5 on 2 cores, and a deadline of the budget
#: itself cut it), and the deadline is there to stop work growing without bound, not to make
#: answers depend on the load.
DEADLINE_FACTOR = 3.0


@contextmanager
def deadline() -> Iterator[None]:
    """Start the running query's wall-clock deadline, DEADLINE_FACTOR times the time budget
    from now, unless one is running (an inner query shares the outer one's deadline)."""
    if _DEADLINE.get() is not None:
        yield
        return
    token = _DEADLINE.set(time.monotonic() + DEADLINE_FACTOR * current().seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check_deadline(what: str) -> None:
    """Raise :class:`BudgetExceeded` ("time") naming ``what`` if the running query's
    wall-clock deadline has passed (never outside a query that set one)."""
    end = _DEADLINE.get()
    if end is not None and time.monotonic() > end:
        raise BudgetExceeded("time", f"{what} ran past its deadline, {DEADLINE_FACTOR:g} times the time "
                             f"budget of {current().seconds:g} s")


def max_points(bytes_per_point: float, cap: int) -> int:
    """The most points a step of ``bytes_per_point`` working bytes per point may have: ``cap``,
    or fewer when the share STEP_SHARE of the memory budget affords fewer (then a power of
    two, at least 1024: sizes stay few, so that nearby queries share cached PLDs)."""
    lim = STEP_SHARE * current().memory
    if not math.isfinite(lim) or lim >= cap * bytes_per_point:
        return cap
    return min(cap, max(1 << 10, 1 << int(math.floor(math.log2(lim / bytes_per_point)))))


def _size(nbytes: float) -> str:
    """A byte count for a message: '1.2 GB'."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes / 1e3:.3g} kB"
