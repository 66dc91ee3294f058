"""A query's accuracy bookkeeping (autoacct/pld/query.py), against its definitions."""

from __future__ import annotations

import math

from autoacct.pld.query import within


def test_an_infinite_upper_end_is_not_within_tol():
    # [x, inf] is no answer within tol (inf - x <= tol * inf would say it is); [inf, inf] is.
    assert not within(0.5, math.inf, 1e-3) and not within(0.0, math.inf, 1.0)
    assert within(math.inf, math.inf, 1e-3)
    assert within(1.0, 1.0005, 1e-3) and not within(1.0, 1.002, 1e-3)
