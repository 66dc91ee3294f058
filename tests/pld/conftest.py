"""Fixtures shared by the PLD accountant's tests."""

from __future__ import annotations

import pytest

from autoacct.pld import terms


@pytest.fixture
def split_calls(monkeypatch) -> list:
    """The (args, kwargs) of each split composition (:func:`terms.split_profiles`) the test makes."""
    calls: list = []
    inner = terms.split_profiles

    def spy(*args, **kwargs):
        calls.append((args, kwargs))
        return inner(*args, **kwargs)
    monkeypatch.setattr(terms, "split_profiles", spy)
    return calls
