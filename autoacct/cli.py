"""The ``autoacct`` command: privacy accounting and noise calibration for DP-SGD.

Subcommands::

    autoacct epsilon   --sample-rate Q --noise-multiplier SIGMA --steps K [--delta D]
    autoacct delta     --epsilon EPS --sample-rate Q --noise-multiplier SIGMA --steps K
    autoacct calibrate --epsilon EPS --sample-rate Q --steps K [--delta D]
    autoacct plot      --sample-rate Q --noise-multiplier SIGMA --steps K [--output tradeoff.png]
    autoacct statement --sample-rate Q --noise-multiplier SIGMA --steps K [--examples-per-user M]

The sampling rate is --sample-rate, or --batch-size over --dataset-size; the
length is --steps, or --epochs (with --dataset-size and --batch-size; may be
fractional). TF Privacy's flag names (--N, --batch_size, --noise_multiplier)
are accepted. Bad input exits with status 2 and a one-line message
on stderr; a numerical failure inside the accountant (an overflow, or a numpy
warning that would make a printed number untrustworthy) exits with status 1 and
a one-line message; warnings are printed on one line each; Ctrl-C exits with
status 130 and one line. Work taking over a second reports progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from autoacct import __version__
from autoacct._cli_words import (
    Parser,
    UsageError,
    add_run_options,
    check_words,
    nonnegative_float,
    positive_float,
)
from autoacct.errors import RouteUnavailableError
from autoacct.exactness import bound_text
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
  --sampling balls-in-bins        each example is used in exactly one of the t = ceil(1/q)
                                  steps of each epoch, chosen uniformly (add/remove);
                                  K steps are K // t epochs and the first K mod t steps
                                  of one more. Certified by the epochs' PLDs.
  --examples-per-user M          user level (Poisson only): neighbouring datasets differ
                                  in one user's at most M examples, each sampled
                                  independently; a step is exactly the mixture of
                                  Gaussians shifted by B C, B ~ Binomial(M, q).
  With --dataset-size N --batch-size B: q = B / N; with --epochs E (may be
  fractional): K = ceil(E ceil(N / B)), an epoch being the ceil(N / B) batches of a
  data loader that keeps its last, partial batch. TF Privacy counts ceil(E N / B)
  steps, Opacus int(E / q) at q = 1 / ceil(N / B); both are printed when they differ.
  Every epsilon or delta printed is a certified upper bound on the true
  epsilon(delta) or delta(epsilon), every 'lower' value a certified lower bound;
  'RDP' is the (looser) Renyi-DP conversion that RDP-based accountants report.
"""




def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``autoacct`` command."""
    fmt = argparse.RawDescriptionHelpFormatter
    # No abbreviations: a prefix accepted today would change meaning when an option is added.
    parser = Parser(prog="autoacct", formatter_class=fmt, allow_abbrev=False,
                     description="Certified differential-privacy accounting for DP-SGD.",
                     epilog=CONVENTIONS)
    parser.add_argument("--version", action="version", version=f"autoacct {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{epsilon,delta,calibrate,plot,statement}",
                                parser_class=Parser)
    fmt_kw: dict[str, Any] = dict(formatter_class=fmt, epilog=CONVENTIONS, allow_abbrev=False)
    sub.required = True

    p = sub.add_parser("epsilon", **fmt_kw,
                       help="certified epsilon of a DP-SGD run",
                       description="Certified epsilon(delta) of DP-SGD: the tight (PLD) upper "
                                   "and lower bounds, and the Renyi-DP conversion beside them.")
    add_run_options(p, noise=True)
    p.add_argument("--json", action="store_true", help="print one JSON object")

    p = sub.add_parser("delta", **fmt_kw,
                       help="certified delta of a DP-SGD run at a given epsilon",
                       description="Certified delta(epsilon) of DP-SGD: the tight (PLD) upper "
                                   "and lower bounds, and the Renyi-DP conversion beside them.")
    p.add_argument("--epsilon", type=nonnegative_float, required=True, metavar="EPS",
                   help="epsilon >= 0 at which delta is wanted")
    add_run_options(p, noise=True, delta=False)
    p.add_argument("--json", action="store_true", help="print one JSON object")

    p = sub.add_parser("calibrate", **fmt_kw,
                       help="noise multiplier for a privacy budget",
                       # argparse %-formats help= strings, not descriptions: one % here.
                       description="Smallest noise multiplier whose certified epsilon(delta) "
                                   "meets --epsilon (within 0.2% of the optimum).")
    p.add_argument("--epsilon", type=positive_float, required=True, metavar="EPS",
                   help="target epsilon (> 0)")
    add_run_options(p, noise=False)
    p.add_argument("--json", action="store_true", help="print one JSON object")

    p = sub.add_parser("plot", **fmt_kw,
                       help="PNG, PDF or SVG of the tradeoff curve and privacy profile",
                       description="Write a figure (PNG, PDF or SVG, from the --output suffix) "
                                   "with the f-DP tradeoff curve (lower bound on "
                                   "the type II error) and the privacy profile delta(eps) "
                                   "(upper bound) of a DP-SGD run.")
    add_run_options(p, noise=True)
    p.add_argument("--output", "-o", default="tradeoff.png", metavar="PATH",
                   help="output file; its suffix .png, .pdf or .svg sets the format "
                        "(default: tradeoff.png)")

    p = sub.add_parser("statement", **fmt_kw,
                       help="a privacy statement: what the run guarantees, and under which "
                            "assumptions",
                       description="A privacy statement of a DP-SGD run: the certified epsilon "
                                   "bracket, the RDP accountant's value beside it, the steps rule "
                                   "(and how TF Privacy and Opacus count the run), what the "
                                   "sampling assumption covers, and example- or user-level.")
    add_run_options(p, noise=True)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


# ----- progress --------------------------------------------------------------------------

#: Seconds of work after which a command reports on stderr what it is doing, and the
#: interval of the reports after that; the clock they are measured on.
PROGRESS_AFTER = 1.0
PROGRESS_EVERY = 10.0
PROGRESS_CLOCK: Callable[[], float] = time.monotonic


class Progress:
    """Lines on stderr saying what a command is doing, once it has run ``after`` seconds.

    ``stage(what)`` names the current work. It is reported when a stage starts
    after ``after`` seconds, and by a helper thread at ``after`` seconds and
    every ``every`` seconds after that; work that ends sooner writes nothing.
    The thread only sleeps and writes: the accounting stays on the calling thread.
    """

    def __init__(self, prog: str, *, after: float = 1.0, every: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.prog = prog
        self.after = after
        self.every = every
        self.clock = clock
        self.start = clock()
        self.what = "starting"
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Progress:
        self._thread = threading.Thread(target=self._watch, name="autoacct-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _watch(self) -> None:
        wait = self.after
        while not self._stop.wait(wait):
            self.report()
            wait = self.every

    def stage(self, what: str) -> None:
        """Start the stage ``what`` (reported at once if the command has run long enough)."""
        with self._lock:
            self.what = what
        self.report()

    def report(self) -> None:
        """Write the current stage and the elapsed time, if the command has run long enough."""
        with self._lock:
            elapsed = self.clock() - self.start
            if elapsed >= self.after:
                sys.stderr.write(f"{self.prog}: {self.what}... ({elapsed:.0f} s)\n")
                sys.stderr.flush()


# ----- the run ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    """A DP-SGD run as accounted: sampling rate q and steps K, and how they were obtained."""

    sample_rate: float
    steps: int
    sampling: str
    rate_rule: str   # how q was obtained, e.g. "q = B / N = 256 / 60000 = 0.00426667"
    steps_rule: str  # how K was obtained, e.g. "K = ceil(E ceil(N / B)) = ceil(2.5 x 235) = 588"
    #: How TF Privacy and Opacus count the same (N, B, E), when some count differs from ours.
    others: dict[str, dict[str, Any]] = field(default_factory=dict)
    given: dict[str, Any] = field(default_factory=dict)  # the options as given
    #: M of --examples-per-user (None: example level).
    examples_per_user: int | None = None

    @property
    def kwargs(self) -> dict[str, Any]:
        """The run's keyword arguments of :func:`autoacct.dpsgd.dpsgd` and the calibrators."""
        return dict(sample_rate=self.sample_rate, steps=self.steps, sampling=self.sampling,
                    examples_per_user=self.examples_per_user or 1)


def _num(x: float) -> int | float:
    """x as an int when it is one (2.0 -> 2), for printing and JSON."""
    return int(x) if float(x).is_integer() else x


def make_run(args: argparse.Namespace) -> Run:
    """The run the options describe, after checking that they describe exactly one.

    q is ``--sample-rate``, or B / N. K is ``--steps``, or, from ``--epochs`` E,
    ``ceil(E ceil(N / B))``: an epoch is ceil(N / B) steps (a data loader that keeps
    the last, partial batch), and a fractional epoch's last partial batch counts
    as a step (rounding up never understates epsilon). For integer E this is the
    ``epochs`` rule of :func:`autoacct.dpsgd.dpsgd`.
    """
    n, b, e = args.dataset_size, args.batch_size, args.epochs
    given = {k: _num(v) for k, v in (("dataset_size", n), ("batch_size", b), ("epochs", e),
                                     ("sample_rate", args.sample_rate), ("steps", args.steps))
             if v is not None}
    if args.sample_rate is not None and (n is not None or b is not None):
        shape = "--dataset-size" if n is not None else "--batch-size"
        raise UsageError(f"--sample-rate contradicts {shape}: give the sampling rate as "
                         "--sample-rate, or as --batch-size over --dataset-size")
    if (n is None) != (b is None):
        have, need = ("--dataset-size", "--batch-size") if b is None else ("--batch-size",
                                                                           "--dataset-size")
        raise UsageError(f"missing {need} (with {have}): the sampling rate is B / N")
    if args.steps is not None and e is not None:
        raise UsageError("--steps contradicts --epochs: give the length as --steps, or as "
                         "--epochs with --dataset-size and --batch-size")
    if e is not None and n is None:
        raise UsageError("--epochs needs --dataset-size and --batch-size (an epoch is "
                         "ceil(N / B) steps at sampling rate B / N); or give --steps")
    if args.sample_rate is None and n is None:
        raise UsageError("missing --sample-rate (or --dataset-size and --batch-size)")
    if args.steps is None and e is None:
        raise UsageError("missing --steps (or --epochs with --dataset-size and --batch-size)")
    users = getattr(args, "examples_per_user", None)
    # (as autoacct.statement refuses it: a user level is stated for Poisson sampling only, even of
    # one example per user, whose run is the example level's)
    if users is not None and args.sampling != "poisson":
        raise UsageError(f"--examples-per-user {users} needs --sampling poisson (user-level "
                         f"accounting is for Poisson sampling), got --sampling {args.sampling}")
    if users is not None and n is not None and users > n:
        raise UsageError(f"--examples-per-user ({users}) must not exceed --dataset-size ({n})")

    if n is None:
        q, rate_rule = args.sample_rate, f"q = {args.sample_rate:.6g}"
    else:
        if b > n:
            raise UsageError(f"--batch-size ({b}) must not exceed --dataset-size ({n})")
        q = b / n
        rate_rule = f"q = B / N = {b} / {n} = {q:.6g}"
    others: dict[str, dict[str, Any]] = {}
    if e is None:
        k, steps_rule = args.steps, f"K = {args.steps}"
    else:
        per_epoch = -(-n // b)
        exact_e = Fraction(repr(e))  # the decimal the user typed: 0.1 x 10 is 1, not 2
        k = math.ceil(exact_e * per_epoch)
        if exact_e.denominator == 1:
            steps_rule = f"K = E ceil(N / B) = {_num(e)} x {per_epoch} = {k}"
        else:
            steps_rule = f"K = ceil(E ceil(N / B)) = ceil({e:g} x {per_epoch}) = {k}"
        # TF Privacy (compute_dp_sgd_privacy): q = B / N, steps = ceil(epochs * N / batch_size).
        # Opacus (make_private_with_epsilon, get_noise_multiplier): q = 1 / len(data_loader),
        # len = ceil(N / B) batches, steps = int(epochs / q) in floating point.
        tf_k = math.ceil(exact_e * n / b)
        op_q = 1.0 / per_epoch
        op_k = int(e / op_q)
        if tf_k != k or op_k != k or per_epoch * b != n:
            others = {"tf_privacy": {"sample_rate": q, "steps": tf_k},
                      "opacus": {"sample_rate": op_q, "steps": op_k}}
    return Run(sample_rate=q, steps=k, sampling=args.sampling, rate_rule=rate_rule,
               steps_rule=steps_rule, others=others, given=given, examples_per_user=users)


def _mechanism(run: Run, noise: float) -> Mechanism:
    from autoacct.dpsgd import dpsgd  # noqa: PLC0415 - heavy import only when a command runs

    return dpsgd(noise_multiplier=noise, **run.kwargs)


def _below(run: Run, noise: float) -> Mechanism | None:
    """The run that gives the certified lower ends where the run's own are not certified
    (:func:`autoacct.dpsgd.dpsgd_lower_run`: a composition without replacement, a user-level
    run with a cut binomial tail), else None."""
    from autoacct.dpsgd import dpsgd_lower_run  # noqa: PLC0415

    return dpsgd_lower_run(noise_multiplier=noise, **run.kwargs)


def _inputs(run: Run, args: argparse.Namespace) -> dict[str, Any]:
    """The JSON description of the run: the options as given, q and K, and the rule for K."""
    out: dict[str, Any] = dict(run.given)
    out.update(sample_rate=run.sample_rate, steps=run.steps, steps_rule=run.steps_rule)
    if run.others:
        out["other_tools"] = run.others
    out["sampling"] = run.sampling
    out["neighboring"] = SCHEMES[run.sampling].relation.value
    out["sensitivity_factor"] = SCHEMES[run.sampling].sensitivity_factor
    if run.examples_per_user is not None:
        out["examples_per_user"] = run.examples_per_user
    if "delta" in args:  # the delta subcommand takes epsilon instead
        out["delta"] = args.delta
    return out


def _describe(run: Run, noise: float | None) -> str:
    """One line: the scheme, q, K and the noise multiplier (the plot's title)."""
    parts = [f"q = {run.sample_rate:.6g}", f"K = {run.steps}"]
    if noise is not None:
        parts.append(f"noise multiplier = {noise:.6g}")
    return (f"DP-SGD, {run.sampling} sampling ({SCHEMES[run.sampling].relation.value}): "
            + ", ".join(parts))


def _run_lines(run: Run, noise: float | None) -> list[str]:
    """The run as text: the scheme and noise, then q and K each with the rule that gave it."""
    head = f"DP-SGD, {run.sampling} sampling ({SCHEMES[run.sampling].relation.value})"
    if noise is not None:
        head += f", noise multiplier = {noise:.6g}"
    lines = [head, f"sampling rate: {run.rate_rule}", f"steps: {run.steps_rule}"]
    if run.examples_per_user is not None:
        m = run.examples_per_user
        lines.append(f"user level: neighbouring datasets differ in one user with at most {m} "
                     "examples, each sampled independently;")
        lines.append(f"  a step moves the clipped sum by B C, B ~ Binomial({m}, q): exactly "
                     f"MixtureOfGaussians over the counts 0..{m}")
    if "epochs" in run.given:
        n, b, e = run.given["dataset_size"], run.given["batch_size"], run.given["epochs"]
        per_epoch = -(-n // b)
        note = f"  an epoch is ceil(N / B) = {per_epoch} steps"
        note += " (its last batch partial)" if per_epoch * b != n else ""
        if "ceil(E" in run.steps_rule:
            note += f"; {e:g} epochs are {float(Fraction(repr(e)) * per_epoch):g} steps, rounded up"
        lines.append(note)
    if run.others:
        tf, op = run.others["tf_privacy"], run.others["opacus"]
        lines += ["other tools count this run differently (give --sample-rate and --steps to "
                  "reproduce theirs):",
                  f"  TF Privacy (compute_dp_sgd_privacy): q = B / N, K = ceil(E N / B) = "
                  f"{tf['steps']};",
                  "    its --used_microbatching, on by default, also halves the noise multiplier",
                  f"  Opacus (make_private_with_epsilon): q = 1 / len(data_loader) = "
                  f"1 / {round(1 / op['sample_rate'])} = {op['sample_rate']:.6g},",
                  f"    K = int(E / q) = {op['steps']}"]
    return lines


def _rdp_epsilon(mech: Mechanism, delta: float) -> float | None:
    try:
        return float(mech.epsilon(delta, via="rdp"))
    except RouteUnavailableError:
        return None


def _relation_lines(run: Run, noise: float | None) -> list[str]:
    """Why a scheme whose relation scales the sensitivity gives larger epsilons ([] for Poisson).

    Without replacement is accounted under replace-one neighbouring, whose sum
    moves by 2 C where add/remove's moves by C: its epsilons are typically
    several times Poisson's at the same q, K and sigma, for this reason more
    than the sampling itself.
    """
    mode = SCHEMES[run.sampling]
    if mode.sensitivity_factor == 1.0:
        return []
    f = f"{mode.sensitivity_factor:g}"
    lines = [f"neighbouring: {mode.relation.value} ({run.sampling} sampling): the datasets differ "
             "in one example's value,",
             f"  which moves the clipped gradient sum by up to {f} C, {f}x add/remove's C;"]
    if noise is not None:
        lines.append(f"  each step is a Gaussian with noise multiplier {noise:.6g} / {f} = "
                     f"{noise / mode.sensitivity_factor:.6g} at unit sensitivity,")
        lines.append("  so epsilon is typically several times Poisson's (add/remove) at the "
                     "same q, K and sigma")
    else:
        lines.append(f"  so it needs about {f}x (or a little more) the noise multiplier of "
                     "Poisson sampling (add/remove)")
    return lines


def _poisson_epsilon(run: Run, noise: float, delta: float, tol: float | None) -> float | None:
    """Poisson (add/remove) epsilon at the same q, K and sigma, for comparison (None if Poisson)."""
    if SCHEMES[run.sampling].sensitivity_factor == 1.0:
        return None
    poisson = Run(run.sample_rate, run.steps, "poisson", run.rate_rule, run.steps_rule)
    return _mechanism(poisson, noise).epsilon(delta, tol=tol)


def _json_number(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return x


# ----- subcommands -------------------------------------------------------------------------

def _cmd_epsilon(args: argparse.Namespace, progress: Progress) -> int:
    run = make_run(args)
    mech = _mechanism(run, args.noise_multiplier)
    progress.stage("computing the certified epsilon (PLD accountant)")
    lower, upper = mech.epsilon_bounds(args.delta, tol=args.tol)
    below = _below(run, args.noise_multiplier)
    if below is not None:
        lower = below.epsilon_bounds(args.delta, tol=args.tol)[0]
    progress.stage("computing the RDP conversion")
    rdp = _rdp_epsilon(mech, args.delta)
    inputs = _inputs(run, args)
    if args.json:
        out = {"epsilon": _json_number(upper), "epsilon_lower": _json_number(lower),
               "epsilon_rdp": _json_number(rdp), "noise_multiplier": args.noise_multiplier,
               **inputs}
        print(json.dumps(out))
        return 0
    print("\n".join(_run_lines(run, args.noise_multiplier)
                    + _relation_lines(run, args.noise_multiplier)))
    print(f"epsilon = {bound_text(upper, True)} at delta = {args.delta:g}  (certified upper bound; "
          f"the true epsilon lies in [{bound_text(lower, False)}, {bound_text(upper, True)}])")
    if rdp is not None:
        print(f"RDP conversion: epsilon <= {bound_text(rdp, True)}  "
              f"({(rdp / upper - 1) * 100 if upper > 0 else 0:+.1f}% vs the tight bound)")
    else:
        print("RDP conversion: not available for this mechanism")
    progress.stage("computing the Poisson (add/remove) epsilon for comparison")
    poisson = _poisson_epsilon(run, args.noise_multiplier, args.delta, args.tol)
    if poisson is not None:
        print(f"for comparison only: Poisson sampling (add/remove) at the same q, K and sigma "
              f"gives epsilon = {poisson:.6g},\n  which is not a guarantee for this run")
    return 0


def _cmd_delta(args: argparse.Namespace, progress: Progress) -> int:
    run = make_run(args)
    mech = _mechanism(run, args.noise_multiplier)
    progress.stage("computing the certified delta (PLD accountant)")
    lower, upper = (float(x) for x in mech.delta_bounds(args.epsilon, tol=args.tol))
    below = _below(run, args.noise_multiplier)
    if below is not None:
        lower = float(below.delta_bounds(args.epsilon, tol=args.tol)[0])
    progress.stage("computing the RDP conversion")
    try:
        rdp: float | None = float(mech.delta(args.epsilon, via="rdp"))
    except RouteUnavailableError:
        rdp = None
    inputs = _inputs(run, args)
    if args.json:
        print(json.dumps({"delta": upper, "delta_lower": lower, "delta_rdp": rdp,
                          "epsilon": args.epsilon, "noise_multiplier": args.noise_multiplier,
                          **inputs}))
        return 0
    print("\n".join(_run_lines(run, args.noise_multiplier)
                    + _relation_lines(run, args.noise_multiplier)))
    print(f"delta = {bound_text(upper, True)} at epsilon = {args.epsilon:g}  (certified upper bound; "
          f"the true delta lies in [{bound_text(lower, False)}, {bound_text(upper, True)}])")
    if rdp is None:
        print("RDP conversion: not available for this mechanism")
    elif upper > 0:
        print(f"RDP conversion: delta <= {bound_text(rdp, True)}  ({rdp / upper:.3g}x the tight bound)")
    else:
        print(f"RDP conversion: delta <= {bound_text(rdp, True)}")
    if SCHEMES[run.sampling].sensitivity_factor != 1.0:
        progress.stage("computing the Poisson (add/remove) delta for comparison")
        poisson = Run(run.sample_rate, run.steps, "poisson", run.rate_rule, run.steps_rule)
        d = float(_mechanism(poisson, args.noise_multiplier).delta(args.epsilon, tol=args.tol))
        print(f"for comparison only: Poisson sampling (add/remove) at the same q, K and sigma "
              f"gives delta = {d:.6g},\n  which is not a guarantee for this run")
    return 0


def _cmd_calibrate(args: argparse.Namespace, progress: Progress) -> int:
    from autoacct.calibrators import calibrate_dpsgd_result  # noqa: PLC0415

    run = make_run(args)
    progress.stage("calibrating the noise multiplier (one accountant run per trial value)")
    res = calibrate_dpsgd_result(args.epsilon, args.delta, tol=args.tol, **run.kwargs)
    lower = res.epsilon_lower
    below = _below(run, res.value)
    if below is not None:  # the accounted pair's lower end is not one on the run itself
        lower = below.epsilon_bounds(args.delta, tol=args.tol)[0]
    inputs = _inputs(run, args)
    if args.json:
        out = {"noise_multiplier": res.value, "epsilon": res.epsilon,
               "epsilon_lower": lower, "target_epsilon": args.epsilon,
               "optimality_gap": _json_number(res.optimality_gap), **inputs}
        print(json.dumps(out))
        return 0
    print("\n".join(_run_lines(run, None) + _relation_lines(run, None)))
    # (rounded up: a larger noise multiplier meets the budget too)
    print(f"noise multiplier = {bound_text(res.value, True)}  for epsilon <= {args.epsilon:g} at "
          f"delta = {args.delta:g}")
    if math.isfinite(res.optimality_gap):
        where = (f"within {res.optimality_gap * 100:.2g}% of the smallest noise multiplier "
                 "meeting the budget" + (" for the accounted pair" if below is not None else ""))
    else:
        where = "optimality not certified"
    print(f"achieved epsilon = {bound_text(res.epsilon, True)}  (certified upper bound; lower bound "
          f"{bound_text(lower, False)}); {where}")
    return 0


#: The figure formats of ``plot``, by file suffix.
PLOT_FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}


def _plot_format(path: str) -> str:
    """The format named by the suffix of ``path`` (UsageError for any other suffix)."""
    suffix = os.path.splitext(path)[1]
    fmt = PLOT_FORMATS.get(suffix.lower())
    if fmt is None:
        what = f"suffix {suffix!r}" if suffix else "no suffix"
        raise UsageError(f"--output {path!r} has {what}: end it in "
                         f"{', '.join(list(PLOT_FORMATS)[:-1])} or {list(PLOT_FORMATS)[-1]}, "
                         "which sets the format")
    return fmt


def _cmd_plot(args: argparse.Namespace, progress: Progress) -> int:
    fmt = _plot_format(args.output)
    folder = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(folder):
        raise UsageError(f"--output {args.output!r}: directory {folder!r} does not exist")
    run = make_run(args)
    mech = _mechanism(run, args.noise_multiplier)
    import matplotlib  # noqa: PLC0415 - only this subcommand needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    from autoacct.plotting import plot_privacy_profile, plot_tradeoff  # noqa: PLC0415

    progress.stage("computing the certified epsilon (PLD accountant)")
    eps_at = mech.epsilon(args.delta, tol=args.tol)
    fig, (ax_f, ax_d) = plt.subplots(1, 2, figsize=(11, 4.6))
    label = [f"DP-SGD, sigma = {args.noise_multiplier:g}"]
    progress.stage("drawing the tradeoff curve")
    plot_tradeoff(mech, ax=ax_f, labels=label)
    progress.stage("drawing the privacy profile")
    plot_privacy_profile(mech, ax=ax_d, labels=label)
    ax_d.plot([eps_at], [args.delta], "o", color="C3",
              label=f"eps({args.delta:g}) = {eps_at:.4g}")
    ax_d.legend(loc="best", fontsize="small")
    fig.suptitle(_describe(run, args.noise_multiplier), fontsize=9)
    fig.tight_layout()
    progress.stage(f"writing {args.output}")
    fig.savefig(args.output, dpi=120, format=fmt)
    plt.close(fig)
    for line in _relation_lines(run, args.noise_multiplier):
        print(line)
    print(f"wrote {args.output} ({fmt.upper()}; epsilon = {eps_at:.6g} at delta = {args.delta:g})")
    return 0


def _cmd_statement(args: argparse.Namespace, progress: Progress) -> int:
    from autoacct.statement import statement  # noqa: PLC0415

    make_run(args)  # the run's errors in the command line's words
    progress.stage("computing the certified epsilon and the RDP conversion")
    st = statement(noise_multiplier=args.noise_multiplier, delta=args.delta,
                   dataset_size=args.dataset_size, batch_size=args.batch_size, epochs=args.epochs,
                   steps=args.steps, sample_rate=args.sample_rate, sampling=args.sampling,
                   examples_per_user=args.examples_per_user, tol=args.tol)
    print(st.to_json() if args.json else st.text())
    return 0


_COMMANDS: dict[str, Callable[[argparse.Namespace, Progress], int]] = {
    "epsilon": _cmd_epsilon, "delta": _cmd_delta, "calibrate": _cmd_calibrate, "plot": _cmd_plot,
    "statement": _cmd_statement}


#: Exit status after Ctrl-C: 128 + SIGINT, as shells report a command killed by it.
EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``autoacct`` command with ``argv`` (default: sys.argv[1:]); return the exit status.

    Ctrl-C ends the command with status 130 and one line on stderr, not a traceback.
    """
    try:
        return _main(argv)
    except KeyboardInterrupt:
        words = list(sys.argv[1:] if argv is None else argv)[:1]
        prog = " ".join(["autoacct", *(w for w in words if w in _COMMANDS)])
        sys.stderr.write(f"{prog}: interrupted\n")
        return EXIT_INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    check_words(parser, argv)
    args = parser.parse_args(argv)
    prog = f"autoacct {args.command}"

    def show_warning(message: Warning | str, category: type[Warning], *_: Any,
                     **__: Any) -> None:
        sys.stderr.write(f"{prog}: warning: {' '.join(str(message).split())}\n")

    progress = Progress(prog, after=PROGRESS_AFTER, every=PROGRESS_EVERY, clock=PROGRESS_CLOCK)
    try:
        with progress, warnings.catch_warnings():
            # A numpy RuntimeWarning means a number may be wrong: fail rather than print it.
            warnings.simplefilter("error", RuntimeWarning)
            warnings.showwarning = show_warning
            return _COMMANDS[args.command](args, progress)
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
