"""The README's Python examples run as written, and every value they show is what the code gives.

Each ```python block is executed statement by statement, in a module of its own. A bare
expression statement must end in a comment that starts with the value it gives, written as a
Python literal (a number, string, tuple, list or dict), optionally followed by ``...`` and a
note: ``m.epsilon(1e-5)  # 5.1943, certified upper bound``. Strings, integers and keys must be
equal; a float printed with d decimals must be the value rounded to d decimals (within half a
unit of its last digit), so a printed value that goes stale fails here. Statements other than
bare expressions check themselves with ``assert``.
"""

from __future__ import annotations

import ast
import io
import pathlib
import re
import sys
import tokenize
import types
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _section(title: str) -> str:
    text = README.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None]


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


BLOCKS = python_blocks(README.read_text())

# ----- the value comments ------------------------------------------------------------------------

_LITERAL_NODES = (ast.Expression, ast.Constant, ast.Tuple, ast.List, ast.Dict, ast.UnaryOp, ast.USub,
                  ast.UAdd, ast.Load)


def shown_value(comment: str) -> tuple[ast.expr, str] | None:
    """The literal a comment starts with (its node and source), or None if it starts with prose."""
    text = comment.lstrip("#").strip().replace("...", "")
    for end in range(len(text), 0, -1):
        candidate = text[:end].strip().rstrip(",:;").strip()
        if not candidate:
            continue
        try:
            tree = ast.parse(candidate, mode="eval")
        except SyntaxError:
            continue
        if all(isinstance(node, _LITERAL_NODES) for node in ast.walk(tree)):
            return tree.body, candidate
    return None


def mismatches(node: ast.expr, source: str, actual: Any, where: str = "value") -> list[str]:
    """How ``actual`` differs from the literal ``node`` (empty when it matches)."""
    if isinstance(node, ast.Tuple | ast.List):
        items = list(actual) if isinstance(actual, tuple | list | np.ndarray) else None
        if items is None or len(items) != len(node.elts):
            return [f"{where}: shown {ast.get_source_segment(source, node)}, got {actual!r}"]
        return [m for i, (elt, item) in enumerate(zip(node.elts, items))
                for m in mismatches(elt, source, item, f"{where}[{i}]")]
    if isinstance(node, ast.Dict):
        got = dict(actual)
        keys = [ast.literal_eval(k) for k in node.keys]
        if set(keys) != set(got):
            return [f"{where}: shown keys {sorted(map(str, keys))}, got {sorted(map(str, got))}"]
        return [m for k, v in zip(keys, node.values) for m in mismatches(v, source, got[k], f"{where}[{k!r}]")]
    shown = ast.literal_eval(node)
    text = ast.get_source_segment(source, node)
    if isinstance(shown, float):
        mantissa, _, exponent = text.lstrip("+-").lower().partition("e")
        decimals = len(mantissa.partition(".")[2])
        half_unit = 0.5 * 10.0 ** (int(exponent or 0) - decimals)
        ok = isinstance(actual, int | float | np.floating) and abs(float(actual) - shown) <= half_unit * (1 + 1e-9)
    elif isinstance(shown, int) and not isinstance(shown, bool):
        ok = isinstance(actual, int | float | np.integer | np.floating) and actual == shown
    else:
        ok = type(actual) is type(shown) and actual == shown
    return [] if ok else [f"{where}: shown {text}, got {actual!r}"]


def check_block(code: str, filename: str = str(README)) -> list[str]:
    """Run a block statement by statement; return its failures (values that differ from the
    ones shown, and bare expressions that show no value)."""
    comments = {tok.start[0]: tok.string for tok in tokenize.generate_tokens(io.StringIO(code).readline)
                if tok.type == tokenize.COMMENT}
    module = types.ModuleType("readme_example")      # dataclasses look their class's module up
    sys.modules[module.__name__] = module
    failures = []
    try:
        for stmt in ast.parse(code).body:
            if not isinstance(stmt, ast.Expr):
                exec(compile(ast.Module([stmt], type_ignores=[]), filename, "exec"), module.__dict__)
                continue
            value = eval(compile(ast.Expression(stmt.value), filename, "eval"), module.__dict__)
            line = ast.get_source_segment(code, stmt)
            shown = shown_value(comments.get(stmt.end_lineno, ""))
            if shown is None:
                if value is not None:
                    failures.append(f"{line}: shows no value (gives {value!r})")
                continue
            failures += [f"{line}: {m}" for m in mismatches(*shown, value)]
    finally:
        del sys.modules[module.__name__]
    return failures


# ----- the README ----------------------------------------------------------------------------

def test_readme_has_python_examples():
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs_and_shows_what_it_gives(code: str):
    assert check_block(code) == []


def test_adding_a_mechanism_example_runs():
    blocks = python_blocks(_section("Adding a mechanism"))
    assert len(blocks) == 1
    module = types.ModuleType("readme_example")
    sys.modules[module.__name__] = module
    try:
        exec(compile(blocks[0], str(README), "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    mech = module.ClippedSum(2.0, 5.0)
    assert mech.params == {"ClippedSum.bound": 2.0, "ClippedSum.noise_std": 5.0}
    assert mech.routes == ("exact", "pld", "phi", "rdp")  # one hook gives every route
    # alpha mu^2 / 2 = 8/25 exactly at alpha = 4, mu = 2/5: rounded up past mu's own rounding,
    # within a few ulps
    assert Fraction(8, 25) <= Fraction(mech.rdp(4.0)) <= Fraction(8, 25) * (1 + Fraction(1, 10**14))


# ----- the checker itself: a stale value fails -----------------------------------------------

def test_checker_accepts_values_rounded_to_their_digits():
    code = ("import math\n"
            "math.pi                 # 3.1416...  a note\n"
            "math.pi                 # 3.14159, another note\n"
            "(math.e, [1, 2])        # (2.718, [1, 2]): a tuple\n"
            "{'a': 1.25}             # {'a': 1.2}\n"
            "'text'                  # 'text'\n"
            "-1e-7 * math.pi         # -3.14e-07\n"
            "print('side effect')    # prints; None needs no value\n")
    assert check_block(code) == []


@pytest.mark.parametrize("line", [
    "math.pi   # 3.1415...   truncated, not rounded",
    "math.pi   # 3.1417",
    "(1.0, 2.0)   # (1.0, 2.0, 3.0)",
    "'a'   # 'b'",
    "{'a': 1}   # {'b': 1}",
    "math.pi   # pi, a note instead of a value",
    "math.pi",
])
def test_checker_rejects_stale_or_missing_values(line: str):
    assert len(check_block("import math\n" + line + "\n")) == 1
