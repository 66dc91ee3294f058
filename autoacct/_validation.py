"""Validation of user-facing parameters.

Every public constructor and query checks its input here, so a bad value is
reported as a ``ValueError`` (or ``TypeError``) naming the parameter and the
value it got, before any numerical code runs.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence, Sized
from typing import Any, cast

import numpy as np


def real(name: str, value: Any, *, low: float = -math.inf, high: float = math.inf,
         low_open: bool = False, high_open: bool = False, allow_inf: bool = False) -> float:
    """Return ``value`` as a float after checking it is a real number in the interval.

    The interval is ``[low, high]``, with either end open when ``low_open`` or
    ``high_open`` is set. NaN is always rejected; infinity only with ``allow_inf``.
    """
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    huge = False
    try:
        x = float(value)
    except OverflowError:
        # An integer beyond every float (10**400): as large as infinity for every range here.
        huge = True
        x = math.inf if cast(Any, value) > 0 else -math.inf
    if math.isnan(x):
        raise ValueError(f"{name} must be a number, got NaN")
    if math.isinf(x) and not allow_inf:
        raise ValueError(f"{name} must be finite, got an integer beyond floating point ({x})" if huge
                         else f"{name} must be finite, got {value!r}")
    too_low = x <= low if low_open else x < low
    too_high = x >= high if high_open else x > high
    if too_low or too_high:
        # (an infinite end the value may not take is an open end)
        lo_b = "(" if low_open or (math.isinf(low) and not allow_inf) else "["
        hi_b = ")" if high_open or (math.isinf(high) and not allow_inf) else "]"
        raise ValueError(f"{name} must lie in {lo_b}{low}, {high}{hi_b}, got {value!r}")
    return x


def positive_int(name: str, value: Any) -> int:
    """Return ``value`` as an int after checking it is an integer >= 1."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    if isinstance(value, (numbers.Integral, np.integer)):
        n = int(value)
    elif isinstance(value, (numbers.Real, np.floating)) and float(value).is_integer():
        n = int(float(value))
    else:
        if isinstance(value, (numbers.Real, np.floating)):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
        raise TypeError(f"{name} must be a positive integer, got {value!r} ({type(value).__name__})")
    if n < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return n


def real_array(name: str, value: Any, *, low: float = -math.inf, high: float = math.inf,
               low_open: bool = False, high_open: bool = False,
               allow_inf: bool = False) -> np.ndarray:
    """Vectorised :func:`real`: a float array whose every entry lies in the interval.

    Only integer and floating-point entries are accepted: booleans, strings,
    complex numbers and other objects raise ``TypeError``.
    """
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a real number or array of them, got {value!r}") from exc
    if raw.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real number or array of them, got {value!r} "
                        f"(dtype {raw.dtype})")
    # A boolean among numbers does not show in the dtype: np.asarray((0, True)) is an int array
    # (MixtureOfGaussians read True as the sensitivity 1.0). An array of numeric dtype holds none.
    if not isinstance(value, np.ndarray) and _holds_bool(value):
        raise TypeError(f"{name} must hold real numbers, not booleans, got {value!r}")
    arr = raw.astype(float)
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not contain NaN, got {value!r}")
    if not allow_inf and np.isinf(arr).any():
        raise ValueError(f"{name} must be finite, got {value!r}")
    too_low = arr <= low if low_open else arr < low
    too_high = arr >= high if high_open else arr > high
    if np.any(too_low | too_high):
        lo_b = "(" if low_open or (math.isinf(low) and not allow_inf) else "["
        hi_b = ")" if high_open or (math.isinf(high) and not allow_inf) else "]"
        bad = float(arr[too_low | too_high].ravel()[0])
        raise ValueError(f"{name} must lie in {lo_b}{low}, {high}{hi_b}, got {bad!r}")
    return arr


def _holds_bool(value: Any) -> bool:
    """Whether ``value``, a number or a (nested) sequence of numbers and arrays, has a boolean
    entry (Python's or numpy's). A flat sequence is read through the set of its entries' types
    (a million entries in 25 ms; an isinstance test per entry took 0.6 s)."""
    if isinstance(value, (bool, np.bool_)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind == "b" or (value.dtype.kind == "O" and _holds_bool(value.ravel().tolist()))
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        return False
    kinds = {type(x) for x in value}
    if kinds & {bool, np.bool_}:
        return True
    if any(issubclass(k, (Sequence, np.ndarray)) and not issubclass(k, (str, bytes)) for k in kinds):
        return any(_holds_bool(x) for x in value)
    return False


def same_length(names: tuple[str, str], a: Sized, b: Sized) -> None:
    """Raise ``ValueError`` unless the two sequences have the same length."""
    if len(a) != len(b):
        raise ValueError(f"{names[0]} and {names[1]} must have the same length, "
                         f"got {len(a)} and {len(b)}")


#: Integer parameters must stay exactly representable as floats.
INT_MAX = 2 ** 52


def nonzero_int(name: str, value: Any) -> int:
    """``value`` as a nonzero int; ValueError or TypeError naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, float, np.floating)):
        raise TypeError(f"{name} must be a nonzero integer, got {value!r} ({type(value).__name__})")
    if isinstance(value, (float, np.floating)) and not float(value).is_integer():
        raise ValueError(f"{name} must be a nonzero integer, got {value!r}")
    n = int(value)
    if n == 0:
        raise ValueError(f"{name} must be a nonzero integer, got {value!r}")
    return n


def bounded_int(name: str, value: Any, high: int = INT_MAX) -> int:
    n = positive_int(name, value)
    if n > high:
        raise ValueError(f"{name} must be at most {high}, got {value!r}")
    return n


def store(obj: object, **values: Any) -> None:
    """Set validated field values on a frozen dataclass from its ``__post_init__``.

    Frozen dataclasses refuse attribute assignment; their own ``__post_init__`` is the
    one place where normalised values (a float for an int, a tuple for a list) are stored.
    """
    for key, value in values.items():
        object.__setattr__(obj, key, value)
