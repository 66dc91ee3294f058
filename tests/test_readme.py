"""The README's "Adding a mechanism" example runs as written (its asserts are its checks)."""

from __future__ import annotations

import pathlib
import re
import sys
import types

import numpy as np

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _section(title: str) -> str:
    text = README.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None]


def test_adding_a_mechanism_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", _section("Adding a mechanism"), flags=re.S)
    assert len(blocks) == 1
    # A module of its own, registered as dataclasses expect of the class's module.
    module = types.ModuleType("readme_example")
    sys.modules[module.__name__] = module
    try:
        exec(compile(blocks[0], str(README), "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    mech = module.ClippedSum(2.0, 5.0)
    assert mech.params == {"ClippedSum.bound": 2.0, "ClippedSum.noise_std": 5.0}
    assert mech.routes == ("exact", "pld", "phi", "rdp")  # one hook gives every route
    assert mech.rdp(4.0) == np.nextafter(4.0 * (2.0 / 5.0) ** 2 / 2, np.inf)  # rounded up one ulp
