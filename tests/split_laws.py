"""The PLD split's settings (autoacct/pld/jumps.py) and the law it splits, shared by the split's tests
(tests/pld/test_jumps.py, test_jumps_bulk.py, test_jumps_spikes.py)."""

from __future__ import annotations

import pytest

import autoacct
from autoacct.pld import jumps


def force_split(mp: pytest.MonkeyPatch, loose: bool = True) -> None:
    """The split taken for every law with a tail side, whatever its bulk's share (with
    ``loose``, whatever its range against the answer's scale too)."""
    mp.setattr(jumps, "MIN_CELLS", 0)
    mp.setattr(jumps, "MAX_BULK_SHARE", 1.0)
    mp.setattr(jumps, "PAYING_SHARE", 1.0)
    if loose:
        mp.setattr(jumps, "LOOSE_BULK_SHARE", 1.0)


#: The split's thresholds as the package sets them (the property test of test_jumps.py forces the
#: split for the rest of that module through a module-scoped fixture).
SPLIT_DEFAULTS = {name: getattr(jumps, name) for name in ("MIN_CELLS", "MAX_BULK_SHARE", "LOOSE_BULK_SHARE",
                                                          "PAYING_SHARE", "FEW_CELLS", "MANY_CELLS")}


def step_law(q: float, sigma: float):
    """The remove-direction loss of one DP-SGD step: Poisson rate q, noise multiplier sigma."""
    return autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=1).loss_parts()[0].forward
