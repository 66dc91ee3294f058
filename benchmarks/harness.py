"""Worker processes (memory cap, timeout, result protocol) and the snapshot of the autoacct tree."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from robustness import ROBUST, growth
from runners import _rss_mb, equal_accuracy, measure

#: The script a worker process runs (run.py beside this module, or its snapshot).
WORKER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run.py")


def worker_main(spec: dict) -> dict:
    task = spec["task"]
    try:
        if task == "measure":
            return measure(spec["acct"], spec["case"], tol=spec.get("tol"))
        if task == "equal_accuracy":
            return equal_accuracy(spec["case"], spec["eps_other"], spec["truth"])
        if task == "robust":
            return ROBUST[spec["part"]](spec["others"])
        if task == "growth":
            return growth(spec["cases"])
        raise ValueError(task)
    except MemoryError:
        return {"error": f"MemoryError (peak RSS {_rss_mb():.0f} MB)", "rss_peak_mb": _rss_mb()}
    except Exception as exc:  # noqa: BLE001 -- reported, not hidden
        return {"error": f"{type(exc).__name__}: {exc}"}


def run_worker(spec: dict, args: argparse.Namespace) -> dict:
    """Run one task in a subprocess with a memory cap and a timeout; return its JSON result."""
    if args.in_process:
        spec = dict(spec)
        res = worker_main(spec)
        res.pop("rss_base_mb", None)
        res.pop("rss_peak_mb", None)
        res.pop("mem_mb", None)
        return res
    cap = int(args.mem_limit_gb * (1 << 30))

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, WORKER_SCRIPT, "--worker", json.dumps(spec)],
                              capture_output=True, text=True, timeout=args.timeout, preexec_fn=limit)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        progress = [json.loads(ln[len("@@PROGRESS "):]) for ln in out.splitlines()
                    if ln.startswith("@@PROGRESS ")]
        return {"error": f"timeout after {args.timeout:.0f} s", "progress": progress}
    wall = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT ")]
    if not lines:
        tail = (proc.stderr or "").strip().splitlines()[-3:]
        return {"error": f"worker exit {proc.returncode}: {' | '.join(tail)}", "worker_wall": wall}
    res = json.loads(lines[-1][len("@@RESULT "):])
    res["worker_wall"] = wall
    return res


def _autoacct_dir() -> str:
    import importlib.util
    spec = importlib.util.find_spec("autoacct")
    if spec is None or spec.origin is None:
        raise SystemExit("autoacct is not importable; pip install -e . first")
    return os.path.dirname(spec.origin)


def _autoacct_hash() -> str:
    """sha256 over autoacct's .py sources (path and content), to tie numbers to code."""
    import hashlib
    h = hashlib.sha256()
    root = _autoacct_dir()
    for dirpath, dirnames, files in sorted(os.walk(root)):
        dirnames.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                full = os.path.join(dirpath, f)
                h.update(os.path.relpath(full, root).encode())
                with open(full, "rb") as fh:
                    h.update(fh.read())
    return h.hexdigest()[:16]


def _snapshot_autoacct() -> str:
    """Copy the autoacct package aside and make this process and its workers import the copy."""
    import shutil
    import tempfile
    src = _autoacct_dir()
    dest = tempfile.mkdtemp(prefix="autoacct-bench-")
    shutil.copytree(src, os.path.join(dest, "autoacct"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    here = os.path.dirname(os.path.abspath(__file__))
    for name in os.listdir(here):
        if name.endswith(".py"):
            shutil.copy2(os.path.join(here, name), os.path.join(dest, name))
    global WORKER_SCRIPT
    WORKER_SCRIPT = os.path.join(dest, "run.py")
    sys.path.insert(0, dest)
    os.environ["PYTHONPATH"] = dest + os.pathsep + os.environ.get("PYTHONPATH", "")
    return dest
