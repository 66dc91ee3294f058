"""Shared fixtures: the independent reference values and closed forms used across tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run, so that what passes in CI is what a
# newcomer gets.
settings.register_profile("autoacct", derandomize=True)
settings.load_profile("autoacct")

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "visible.json"


@pytest.fixture(scope="session")
def reference() -> dict:
    """Reference values with their sources (../shared/reference/visible.json)."""
    if not REFERENCE.exists():
        pytest.skip(f"reference values not found at {REFERENCE}")
    return json.loads(REFERENCE.read_text())
