"""The package's own surface: subpackages as attributes, lazy plotting, the public names."""

from __future__ import annotations

import subprocess
import sys

import pytest

import autoacct


@pytest.mark.parametrize("name", ["calibrators", "converters", "losses", "phi", "pld", "routes",
                                  "subsampling", "zoo", "plotting", "cli"])
def test_subpackages_are_attributes(name):
    assert getattr(autoacct, name).__name__ == f"autoacct.{name}"


def test_plain_import_does_not_load_matplotlib():
    code = "import sys, autoacct; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="nope"):
        autoacct.nope  # noqa: B018


def test_every_public_name_resolves():
    for name in autoacct.__all__:
        assert getattr(autoacct, name) is not None
