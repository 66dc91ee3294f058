"""The command line's words: argument types, the run options, and did-you-mean checks.

Split from :mod:`autoacct.cli` so that the command module holds the commands: this
one says which words the parser knows and what a mistyped one was likely meant to be.
"""

from __future__ import annotations

import argparse
import difflib
import math
from collections.abc import Sequence
from typing import NoReturn

from autoacct.subsampling.schemes import SCHEMES


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr, with exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


class UsageError(Exception):
    """Bad or contradictory command-line input (reported on one line, exit status 2)."""


def _number(text: str) -> float:
    """``text`` as a float, or the argparse error every numeric option reports."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def positive_float(text: str) -> float:
    x = _number(text)
    if not math.isfinite(x) or x <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return x


def _probability(text: str) -> float:
    x = _number(text)
    if not 0.0 < x < 1.0:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1), got {text!r}")
    return x


def _rate(text: str) -> float:
    x = _number(text)
    if not 0.0 < x <= 1.0:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1], got {text!r}")
    return x


def _positive_int(text: str) -> int:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not (math.isfinite(x) and x.is_integer() and x >= 1):
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return int(x)


def nonnegative_float(text: str) -> float:
    x = _number(text)
    if not math.isfinite(x) or x < 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    return x


def _tolerance(text: str) -> float:
    x = positive_float(text)
    if not 1e-7 <= x <= 0.5:
        raise argparse.ArgumentTypeError(f"must lie in [1e-07, 0.5], got {text!r}")
    return x


def add_run_options(p: argparse.ArgumentParser, *, noise: bool, delta: bool = True) -> None:
    run = p.add_argument_group(
        "the run (the sampling rate as --sample-rate or as --batch-size over --dataset-size; the "
        "length as --steps or --epochs; TF Privacy's --N, --batch_size, --epochs, "
        "--noise_multiplier and --delta are accepted)")
    run.add_argument("--sample-rate", "-q", type=_rate, metavar="Q",
                     help="sampling rate q in (0, 1]")
    run.add_argument("--steps", "-k", type=_positive_int, metavar="K", help="number of steps")
    run.add_argument("--dataset-size", "-n", "--N", type=_positive_int, metavar="N",
                     help="number of examples")
    run.add_argument("--batch-size", "-b", "--batch_size", type=_positive_int, metavar="B",
                     help="(expected) batch size, at most N")
    run.add_argument("--epochs", "-e", type=positive_float, metavar="E",
                     help="number of passes over the data, may be fractional: "
                          "K = ceil(E ceil(N / B)) steps")
    if noise:
        run.add_argument("--noise-multiplier", "-s", "--noise_multiplier", type=positive_float,
                         metavar="SIGMA", required=True, help="noise std / clipping norm (> 0)")
    run.add_argument("--sampling", choices=tuple(SCHEMES), default="poisson",
                     help="batch sampling and neighbouring relation (default: poisson, "
                          "add/remove; without-replacement is replace-one)")
    run.add_argument("--examples-per-user", "-m", type=_positive_int, default=None, metavar="M",
                     help="user level: neighbouring datasets differ in one user with at most M "
                          "examples, each sampled independently with probability q (Poisson "
                          "sampling only; exact)")
    if delta:
        p.add_argument("--delta", "-d", type=_probability, default=1e-5, metavar="D",
                       help="target delta in (0, 1) (default: 1e-5)")
    p.add_argument("--tol", type=_tolerance, default=None, metavar="T",
                   help=("relative accuracy of the certified epsilon" if delta else
                         "relative accuracy of the PLD accountant, as for epsilon")
                        + " (default: 1e-3)")


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands of ``parser`` by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _did_you_mean(word: str, known: dict[str, str]) -> str:
    """'; did you mean X?' for the known words closest to a mistyped one ('' when none is close).

    ``known`` maps each accepted spelling to the one to suggest (an option's first long name).
    """
    def norm(w: str) -> str:
        return w.lstrip("-").lower().replace("_", "-")

    same = [k for k in known if norm(k) == norm(word)]  # --sample_rate, -sample-rate, --s
    prefixed = [k for k in known if len(word.strip("-")) >= 2 and k.startswith(word)]
    close = same or prefixed or difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    names = list(dict.fromkeys(known[k] if k not in same else k for k in close))
    if not names:
        return ""
    note = " (abbreviations are not accepted)" if not same and prefixed else ""
    return f"; did you mean {' or '.join(names)}?{note}"


def _unknown_option(name: str, command: str, commands: dict[str, argparse.ArgumentParser]) -> str:
    elsewhere = [c for c, p in commands.items()
                 if c != command and name in p._option_string_actions]
    if elsewhere:
        where = ", ".join(elsewhere[:-1]) + (" and " if len(elsewhere) > 1 else "") + elsewhere[-1]
        return f"{name} is an option of autoacct {where}, not of autoacct {command}"
    known = {o: next((s for s in a.option_strings if s.startswith("--")), o)
             for o, a in commands[command]._option_string_actions.items()
             if o not in ("-h", "--help")}
    hint = _did_you_mean(name, known) or f" (see autoacct {command} --help)"
    return f"unrecognized option {name}{hint}"


#: Words that name what a subcommand does rather than the subcommand (TF Privacy's script).
_SUBCOMMAND_HINTS = {"dpsgd": "epsilon", "dp-sgd": "epsilon", "compute_dp_sgd_privacy": "epsilon"}


def check_words(parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
    """Exit with status 2 on an unknown subcommand or option, suggesting the nearest known one.

    argparse checks required options before unknown ones, so a mistyped
    ``--noise-multiplier`` would be reported as a missing one; this check runs
    first and names the word that is wrong.
    """
    commands = _commands(parser)
    if not argv or argv[0] in ("-h", "--help", "--version"):
        return  # argparse reports a missing subcommand, prints help or the version
    command = argv[0]
    if command.startswith("-"):
        parser.error(f"the subcommand ({', '.join(commands)}) comes first, before {command}")
    if command not in commands:
        hint = (f"; did you mean {_SUBCOMMAND_HINTS[command]}? (every subcommand is about DP-SGD)"
                if command in _SUBCOMMAND_HINTS else _did_you_mean(command, {c: c for c in commands}))
        parser.error(f"unknown subcommand {command!r}{hint} (choose from {', '.join(commands)})")
    sub = commands[command]
    known = sub._option_string_actions
    words = iter(argv[1:])
    for word in words:
        if word == "--":
            break
        if not word.startswith("-") or word == "-" or _is_number(word):
            continue
        name = word.split("=", 1)[0] if word.startswith("--") else word
        action = known.get(name)
        if (action is None and not word.startswith("--") and word[:2] in known
                and not any(o.lstrip("-") == word.lstrip("-") for o in known)):
            continue  # a short option with its value attached (-q0.1), not -sample-rate
        if action is None:
            sub.error(_unknown_option(name, command, commands))
        if action.nargs != 0 and name == word:
            next(words, None)  # the option's value, whatever it looks like
