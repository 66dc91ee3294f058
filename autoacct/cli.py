"""The ``autoacct`` command: privacy accounting and noise calibration for DP-SGD.

Subcommands::

    autoacct epsilon   --sample-rate Q --noise-multiplier SIGMA --steps K [--delta D]
    autoacct calibrate --epsilon EPS --sample-rate Q --steps K [--delta D]
    autoacct plot      --sample-rate Q --noise-multiplier SIGMA --steps K [--output tradeoff.png]

A run is described either by (--sample-rate, --steps) or by (--dataset-size,
--batch-size, --epochs). Bad input exits with status 2 and a one-line message
on stderr; a numerical failure inside the accountant (an overflow, or a numpy
warning that would make a printed number untrustworthy) exits with status 1 and
a one-line message; warnings are printed on one line each.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

from autoacct import __version__
from autoacct.errors import RouteUnavailableError
from autoacct.mechanism import Mechanism
from autoacct.subsampling.schemes import SCHEMES

CONVENTIONS = """\
conventions:
  DP-SGD runs K steps of the subsampled Gaussian mechanism. The noise multiplier
  sigma is the noise standard deviation divided by the clipping norm (the L2
  sensitivity of one example's clipped gradient).
  --sampling poisson              each example is used independently with probability
                                  q = --sample-rate; neighbouring datasets differ by
                                  adding or removing one example (add/remove).
  --sampling without-replacement  each step uses a uniformly random batch of fixed size
                                  q n; neighbouring datasets differ by replacing one
                                  example (replace-one), which moves the clipped sum
                                  by up to twice the clipping norm.
  With --dataset-size N --batch-size B --epochs E: q = B / N and K = E ceil(N / B).
  Every epsilon printed is a certified upper bound on the true epsilon(delta),
  every 'lower' value a certified lower bound; 'RDP' is the (looser) Renyi-DP
  conversion that RDP-based accountants report.
"""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr, with exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


class UsageError(Exception):
    """Bad or contradictory command-line input (reported on one line, exit status 2)."""


def _positive_float(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return x


def _probability(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < x < 1.0:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1), got {text!r}")
    return x


def _rate(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
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


def _tolerance(text: str) -> float:
    x = _positive_float(text)
    if not 1e-7 <= x <= 0.5:
        raise argparse.ArgumentTypeError(f"must lie in [1e-07, 0.5], got {text!r}")
    return x


def _add_run(p: argparse.ArgumentParser, *, noise: bool) -> None:
    run = p.add_argument_group("the run (give --sample-rate and --steps, "
                               "or --dataset-size, --batch-size and --epochs)")
    run.add_argument("--sample-rate", "-q", type=_rate, metavar="Q",
                     help="sampling rate q in (0, 1]")
    run.add_argument("--steps", "-k", type=_positive_int, metavar="K", help="number of steps")
    run.add_argument("--dataset-size", "-n", type=_positive_int, metavar="N",
                     help="number of examples")
    run.add_argument("--batch-size", "-b", type=_positive_int, metavar="B",
                     help="(expected) batch size, at most N")
    run.add_argument("--epochs", "-e", type=_positive_int, metavar="E",
                     help="number of passes over the data")
    if noise:
        run.add_argument("--noise-multiplier", "-s", type=_positive_float, metavar="SIGMA",
                         required=True, help="noise std / clipping norm (> 0)")
    run.add_argument("--sampling", choices=tuple(SCHEMES), default="poisson",
                     help="batch sampling and neighbouring relation (default: poisson, "
                          "add/remove; without-replacement is replace-one)")
    p.add_argument("--delta", "-d", type=_probability, default=1e-5, metavar="D",
                   help="target delta in (0, 1) (default: 1e-5)")
    p.add_argument("--tol", type=_tolerance, default=None, metavar="T",
                   help="relative accuracy of the certified epsilon (default: 1e-3)")


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


def _did_you_mean(word: str, known: Sequence[str]) -> str:
    """'; did you mean X?' for the known words closest to a mistyped one ('' when none is close)."""
    def norm(w: str) -> str:
        return w.lstrip("-").lower().replace("_", "-")

    same = [k for k in known if norm(k) == norm(word)]  # --sample_rate, -sample-rate, --s
    prefixed = [k for k in known if len(word.strip("-")) >= 2 and k.startswith(word)]
    close = same or prefixed or difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    if not close:
        return ""
    note = " (abbreviations are not accepted)" if not same and prefixed else ""
    return f"; did you mean {' or '.join(close)}?{note}"


def _unknown_option(name: str, command: str, commands: dict[str, argparse.ArgumentParser]) -> str:
    elsewhere = [c for c, p in commands.items()
                 if c != command and name in p._option_string_actions]
    if elsewhere:
        return (f"{name} is an option of {' and '.join(f'autoacct {c}' for c in elsewhere)}, "
                f"not of autoacct {command}")
    known = [o for o in commands[command]._option_string_actions if o not in ("-h", "--help")]
    hint = _did_you_mean(name, known) or f" (see autoacct {command} --help)"
    return f"unrecognized option {name}{hint}"


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
        parser.error(f"unknown subcommand {command!r}" + _did_you_mean(command, list(commands))
                     + f" (choose from {', '.join(commands)})")
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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``autoacct`` command."""
    fmt = argparse.RawDescriptionHelpFormatter
    # No abbreviations: a prefix accepted today would change meaning when an option is added.
    parser = _Parser(prog="autoacct", formatter_class=fmt, allow_abbrev=False,
                     description="Certified differential-privacy accounting for DP-SGD.",
                     epilog=CONVENTIONS)
    parser.add_argument("--version", action="version", version=f"autoacct {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{epsilon,calibrate,plot}",
                                parser_class=_Parser)
    fmt_kw: dict[str, Any] = dict(formatter_class=fmt, epilog=CONVENTIONS, allow_abbrev=False)
    sub.required = True

    p = sub.add_parser("epsilon", **fmt_kw,
                       help="certified epsilon of a DP-SGD run",
                       description="Certified epsilon(delta) of DP-SGD: the tight (PLD) upper "
                                   "and lower bounds, and the Renyi-DP conversion beside them.")
    _add_run(p, noise=True)
    p.add_argument("--json", action="store_true", help="print one JSON object")

    p = sub.add_parser("calibrate", **fmt_kw,
                       help="noise multiplier for a privacy budget",
                       # argparse %-formats help= strings, not descriptions: one % here.
                       description="Smallest noise multiplier whose certified epsilon(delta) "
                                   "meets --epsilon (within 0.2% of the optimum).")
    p.add_argument("--epsilon", type=_positive_float, required=True, metavar="EPS",
                   help="target epsilon (> 0)")
    _add_run(p, noise=False)
    p.add_argument("--json", action="store_true", help="print one JSON object")

    p = sub.add_parser("plot", **fmt_kw,
                       help="PNG of the tradeoff curve and privacy profile",
                       description="Write a PNG with the f-DP tradeoff curve (lower bound on "
                                   "the type II error) and the privacy profile delta(eps) "
                                   "(upper bound) of a DP-SGD run.")
    _add_run(p, noise=True)
    p.add_argument("--output", "-o", default="tradeoff.png", metavar="PATH",
                   help="output PNG file (default: tradeoff.png)")
    return parser


# ----- the run ---------------------------------------------------------------------------

def _run_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The dpsgd keyword arguments describing the run, after checking they are consistent."""
    direct = {"--sample-rate": args.sample_rate, "--steps": args.steps}
    shaped = {"--dataset-size": args.dataset_size, "--batch-size": args.batch_size,
              "--epochs": args.epochs}
    given_d = [k for k, v in direct.items() if v is not None]
    given_s = [k for k, v in shaped.items() if v is not None]
    if given_d and given_s:
        raise UsageError(f"{', '.join(given_d)} contradicts {', '.join(given_s)}: describe the run "
                         "by --sample-rate and --steps, or by --dataset-size, --batch-size and "
                         "--epochs")
    if given_s:
        missing = [k for k, v in shaped.items() if v is None]
        if missing:
            raise UsageError(f"missing {', '.join(missing)} (with {', '.join(given_s)})")
        if args.batch_size > args.dataset_size:
            raise UsageError(f"--batch-size ({args.batch_size}) must not exceed --dataset-size "
                             f"({args.dataset_size})")
        return dict(dataset_size=args.dataset_size, batch_size=args.batch_size,
                    epochs=args.epochs, sampling=args.sampling)
    missing = [k for k, v in direct.items() if v is None]
    if missing:
        raise UsageError(f"missing {', '.join(missing)} (or give --dataset-size, --batch-size "
                         "and --epochs)")
    return dict(sample_rate=args.sample_rate, steps=args.steps, sampling=args.sampling)


def _mechanism(args: argparse.Namespace, noise: float) -> Mechanism:
    from autoacct.dpsgd import dpsgd  # noqa: PLC0415 - heavy import only when a command runs

    return dpsgd(noise_multiplier=noise, **_run_kwargs(args))


def _inputs(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("sample_rate", "steps", "dataset_size", "batch_size", "epochs"):
        val = getattr(args, key)
        if val is not None:
            out[key] = val
    out["sampling"] = args.sampling
    out["neighboring"] = SCHEMES[args.sampling].relation.value
    out["delta"] = args.delta
    return out


def _rdp_epsilon(mech: Mechanism, delta: float) -> float | None:
    try:
        return float(mech.epsilon(delta, via="rdp"))
    except RouteUnavailableError:
        return None


def _describe(inputs: dict[str, Any], noise: float | None) -> str:
    parts = [f"{k.replace('_', ' ')} = {inputs[k]:g}" for k in
             ("sample_rate", "steps", "dataset_size", "batch_size", "epochs") if k in inputs]
    if noise is not None:
        parts.append(f"noise multiplier = {noise:.6g}")
    return (f"DP-SGD, {inputs['sampling']} sampling ({inputs['neighboring']}): "
            + ", ".join(parts))


def _json_number(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return x


# ----- subcommands -------------------------------------------------------------------------

def _cmd_epsilon(args: argparse.Namespace) -> int:
    mech = _mechanism(args, args.noise_multiplier)
    lower, upper = mech.epsilon_bounds(args.delta, tol=args.tol)
    rdp = _rdp_epsilon(mech, args.delta)
    inputs = _inputs(args)
    if args.json:
        out = {"epsilon": _json_number(upper), "epsilon_lower": _json_number(lower),
               "epsilon_rdp": _json_number(rdp), "noise_multiplier": args.noise_multiplier,
               **inputs}
        print(json.dumps(out))
        return 0
    print(_describe(inputs, args.noise_multiplier))
    print(f"epsilon = {upper:.6g} at delta = {args.delta:g}  (certified upper bound; "
          f"the true epsilon lies in [{lower:.6g}, {upper:.6g}])")
    if rdp is not None:
        print(f"RDP conversion: epsilon <= {rdp:.6g}  "
              f"({(rdp / upper - 1) * 100 if upper > 0 else 0:+.1f}% vs the tight bound)")
    else:
        print("RDP conversion: not available for this mechanism")
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from autoacct.calibrators import calibrate_dpsgd_result  # noqa: PLC0415

    run = _run_kwargs(args)
    res = calibrate_dpsgd_result(args.epsilon, args.delta, tol=args.tol, **run)
    inputs = _inputs(args)
    if args.json:
        out = {"noise_multiplier": res.value, "epsilon": res.epsilon,
               "epsilon_lower": res.epsilon_lower, "target_epsilon": args.epsilon,
               "optimality_gap": _json_number(res.optimality_gap), **inputs}
        print(json.dumps(out))
        return 0
    print(_describe(inputs, None))
    print(f"noise multiplier = {res.value:.6g}  for epsilon <= {args.epsilon:g} at "
          f"delta = {args.delta:g}")
    if math.isfinite(res.optimality_gap):
        where = (f"within {res.optimality_gap * 100:.2g}% of the smallest noise multiplier "
                 "meeting the budget")
    else:
        where = "optimality not certified"
    print(f"achieved epsilon = {res.epsilon:.6g}  (certified upper bound; lower bound "
          f"{res.epsilon_lower:.6g}); {where}")
    return 0


def _cmd_plot(args: argparse.Namespace) -> int:
    folder = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(folder):
        raise UsageError(f"--output {args.output!r}: directory {folder!r} does not exist")
    mech = _mechanism(args, args.noise_multiplier)
    import matplotlib  # noqa: PLC0415 - only this subcommand needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    from autoacct.plotting import plot_privacy_profile, plot_tradeoff  # noqa: PLC0415

    eps_at = mech.epsilon(args.delta, tol=args.tol)
    fig, (ax_f, ax_d) = plt.subplots(1, 2, figsize=(11, 4.6))
    label = [f"DP-SGD, sigma = {args.noise_multiplier:g}"]
    plot_tradeoff(mech, ax=ax_f, labels=label)
    plot_privacy_profile(mech, ax=ax_d, labels=label)
    ax_d.plot([eps_at], [args.delta], "o", color="C3",
              label=f"eps({args.delta:g}) = {eps_at:.4g}")
    ax_d.legend(loc="best", fontsize="small")
    fig.suptitle(_describe(_inputs(args), args.noise_multiplier), fontsize=9)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120, format="png")
    plt.close(fig)
    print(f"wrote {args.output} (epsilon = {eps_at:.6g} at delta = {args.delta:g})")
    return 0


_COMMANDS = {"epsilon": _cmd_epsilon, "calibrate": _cmd_calibrate, "plot": _cmd_plot}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``autoacct`` command with ``argv`` (default: sys.argv[1:]); return the exit status."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    check_words(parser, argv)
    args = parser.parse_args(argv)
    prog = f"autoacct {args.command}"

    def show_warning(message: Warning | str, category: type[Warning], *_: Any,
                     **__: Any) -> None:
        sys.stderr.write(f"{prog}: warning: {' '.join(str(message).split())}\n")

    try:
        with warnings.catch_warnings():
            # A numpy RuntimeWarning means a number may be wrong: fail rather than print it.
            warnings.simplefilter("error", RuntimeWarning)
            warnings.showwarning = show_warning
            return _COMMANDS[args.command](args)
    except (UsageError, ValueError) as exc:
        msg = " ".join(str(exc).split())
        sys.stderr.write(f"{prog}: error: {msg}\n")
        return 2
    except OSError as exc:
        sys.stderr.write(f"{prog}: error: {exc}\n")
        return 1
    except (ArithmeticError, RuntimeWarning) as exc:
        msg = " ".join(str(exc).split())
        sys.stderr.write(f"{prog}: error: numerical failure for these inputs "
                         f"({type(exc).__name__}: {msg}); no certified value to report\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
