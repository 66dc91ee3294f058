"""Two-tree benchmark scripts: the trees compared, and one case run in a fresh worker process
on a given tree (``script --worker CASE``, its last line of output a JSON result)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any


def trees(other: str | None) -> dict[str, str]:
    """This tree (the checkout the script lives in), and ``other`` where given."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return {"this": here} | ({"other": other} if other else {})


def run_in_tree(script: str, tree: str, case: object) -> dict:
    """The JSON result of ``script --worker CASE`` run with ``tree`` first on the import path."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    res = subprocess.run([sys.executable, script, "--worker", json.dumps(case)], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def parse_or_work(ap: argparse.ArgumentParser, worker: Callable[[Any], None]) -> argparse.Namespace | None:
    """The arguments of a two-tree script (``ap``'s own, OTHER_TREE and ``--worker``); in a
    worker process (``--worker CASE``) runs ``worker`` on the case instead and returns None."""
    ap.add_argument("other", nargs="?")
    ap.add_argument("--worker")
    args = ap.parse_args()
    if args.worker:
        worker(json.loads(args.worker))
        return None
    return args
