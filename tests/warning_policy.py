"""The suite's warning policy: every warning is an error, except autoacct's AccuracyWarning.

AccuracyWarning is documented: the bounds stay valid but are wider than asked.
A numpy RuntimeWarning or any other warning leaking from the library is a bug.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

from autoacct import AccuracyWarning


@contextlib.contextmanager
def strict_warnings() -> Iterator[None]:
    """Turn every warning into an error inside the block, except AccuracyWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", AccuracyWarning)
        yield
