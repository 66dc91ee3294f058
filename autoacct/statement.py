"""A privacy statement for a DP-SGD run: what is guaranteed, under which assumptions, in words.

:func:`statement` accounts a run described as a practitioner describes it (dataset size,
batch size, epochs or steps, noise multiplier, delta, sampling scheme) and returns a
:class:`PrivacyStatement`: the certified epsilon bracket, the Renyi-DP accountant's answer
for comparison, the rule that turned epochs into steps (and how TF Privacy and Opacus
count the same run), what the sampling assumption means, and which unit of data the
guarantee protects. ``autoacct statement`` prints it (``--json`` for the JSON form).

Example level (the default): neighbouring datasets differ in one example (add/remove for
Poisson sampling, replace-one without replacement), and the run is ``autoacct.dpsgd``'s.

User level (``examples_per_user=m``, Poisson sampling only): neighbouring datasets differ
in all the examples of one user, who has at most m, each of which joins a batch
independently with probability q. The user's count in a batch is B ~ Binomial(m, q) and
moves the clipped gradient sum by at most B C (C the clipping norm), so a step is exactly

    ``MixtureOfGaussians(sigma, (0, 1, ..., m), Binomial(m, q) pmf)``,

the run being ``autoacct.dpsgd(..., examples_per_user=m)``
(:func:`autoacct.subsampling.schemes.user_step`; a user with fewer examples is dominated).
The accounting is exact for independent per-example sampling, not an upper bound. It
replaces the looser ``PoissonSubsample(1 - (1 - q)^m)(Gaussian(sigma / m))``, which treats
every sampled user as if all m examples were in the batch.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from autoacct import _validation as check
from autoacct.exactness import bound_text
from autoacct.subsampling.schemes import SCHEMES, scheme

if TYPE_CHECKING:
    from autoacct.cli import Run

__all__ = ["PrivacyStatement", "statement"]


@dataclass(frozen=True)
class PrivacyStatement:
    """What a DP-SGD run guarantees, with the assumptions the guarantee rests on.

    Attributes
    ----------
    epsilon, epsilon_lower:
        Certified bracket of the true epsilon(delta): the run is (epsilon, delta)-DP and
        not (epsilon_lower, delta)-DP (at user level, for a user with m examples each
        sampled independently).
    epsilon_rdp:
        The Renyi-DP accountant's epsilon (Balle et al. 2020's conversion), for
        comparison with RDP-based tools; None when unavailable.
    delta, noise_multiplier, sample_rate, steps, sampling, neighboring:
        The run as accounted: q, K, the sampling scheme and its neighbouring relation.
    rate_rule, steps_rule:
        How q and K were obtained from the inputs.
    other_tools:
        How TF Privacy and Opacus count the same run, when they differ ({} otherwise).
    level:
        "example" or "user".
    examples_per_user:
        m at user level (None at example level).
    user_sample_rate:
        q_u = 1 - (1 - q)^m, the probability that a step uses some example of a user with
        m examples (None at example level).
    lines:
        The statement as text, one line each.
    """

    epsilon: float
    epsilon_lower: float
    epsilon_rdp: float | None
    delta: float
    noise_multiplier: float
    sample_rate: float
    steps: int
    sampling: str
    neighboring: str
    rate_rule: str
    steps_rule: str
    other_tools: dict[str, dict[str, Any]]
    level: str
    examples_per_user: int | None
    user_sample_rate: float | None
    lines: tuple[str, ...]

    def text(self) -> str:
        """The statement as plain text."""
        return "\n".join(self.lines)

    __str__ = text

    def as_dict(self) -> dict[str, Any]:
        """The statement as a dict of plain values (what :meth:`to_json` writes)."""
        out = asdict(self)
        out["lines"] = list(self.lines)
        for key in ("epsilon", "epsilon_lower", "epsilon_rdp"):
            if out[key] is not None and not math.isfinite(out[key]):
                out[key] = None  # JSON has no infinity: None means "no finite bound"
        out["epsilon_bracket"] = [out["epsilon_lower"], out["epsilon"]]
        return out

    def to_json(self) -> str:
        """The statement as one JSON object."""
        return json.dumps(self.as_dict())


def _run_of(dataset_size: Any, batch_size: Any, epochs: Any, steps: Any, sample_rate: Any,
            sampling: str) -> Run:
    """The run as the command line accounts it (its q and K rules), from checked inputs."""
    import argparse  # noqa: PLC0415 - the CLI's modules load on use, as autoacct.cli does

    from autoacct._cli_words import UsageError  # noqa: PLC0415
    from autoacct.cli import make_run  # noqa: PLC0415

    args = argparse.Namespace(
        dataset_size=None if dataset_size is None else check.positive_int("dataset_size", dataset_size),
        batch_size=None if batch_size is None else check.positive_int("batch_size", batch_size),
        epochs=None if epochs is None else check.real("epochs", epochs, low=0.0, low_open=True),
        steps=None if steps is None else check.bounded_int("steps", steps),
        sample_rate=None if sample_rate is None else check.real(
            "sample_rate", sample_rate, low=0.0, high=1.0, low_open=True),
        sampling=sampling)
    try:
        return make_run(args)
    except UsageError as exc:
        # The command line's words for the options (--batch-size) name the same parameters.
        raise ValueError(re.sub(r"--([a-z-]+)", lambda w: w.group(1).replace("-", "_"),
                                str(exc))) from None


def statement(*, noise_multiplier: float, delta: float, dataset_size: int | None = None,
              batch_size: int | None = None, epochs: float | None = None,
              steps: int | None = None, sample_rate: float | None = None,
              sampling: str = "poisson", examples_per_user: int | None = None,
              tol: float | None = None) -> PrivacyStatement:
    """The privacy statement of a DP-SGD run.

    Parameters
    ----------
    noise_multiplier:
        sigma > 0: noise std over the clipping norm C.
    delta:
        delta in (0, 1) of the (epsilon, delta) guarantee.
    dataset_size, batch_size:
        N examples and (expected) batch size B <= N: q = B / N. Or give ``sample_rate`` q.
    epochs, steps:
        E passes (may be fractional: K = ceil(E ceil(N / B)) steps, as the command line
        counts them), or K steps.
    sampling:
        "poisson" (add/remove neighbouring) or "without-replacement" (replace-one),
        as in :func:`autoacct.dpsgd`.
    examples_per_user:
        m >= 1 for a user-level statement (Poisson sampling only): neighbouring datasets
        differ in one user's examples, at most m of them, each sampled independently;
        accounted exactly (this module's docstring).
    tol:
        Relative accuracy of the certified bracket (default 1e-3).
    """
    from autoacct.cli import _rdp_epsilon, _relation_lines, _run_lines  # noqa: PLC0415
    from autoacct.dpsgd import dpsgd, dpsgd_lower_run  # noqa: PLC0415

    mode = scheme(sampling)
    sigma = check.real("noise_multiplier", noise_multiplier, low=0.0, low_open=True)
    d = check.real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    m = None if examples_per_user is None else check.bounded_int("examples_per_user",
                                                                   examples_per_user)
    if m is not None and mode.name != "poisson":
        raise ValueError(f"examples_per_user needs sampling='poisson' (the user-level bound is "
                         f"for Poisson sampling), got sampling={sampling!r}")
    run = _run_of(dataset_size, batch_size, epochs, steps, sample_rate, mode.name)
    if m is not None and dataset_size is not None and m > dataset_size:
        raise ValueError(f"examples_per_user must not exceed dataset_size ({dataset_size}), got {m}")

    q = run.sample_rate
    q_user = None if m is None else (-math.expm1(m * math.log1p(-q)) if q < 1.0 else 1.0)
    mech = dpsgd(noise_multiplier=sigma, **{**run.kwargs, "examples_per_user": m or 1})
    lower, upper = (float(x) for x in mech.epsilon_bounds(d, tol=tol))
    below = dpsgd_lower_run(q, sigma, run.steps, sampling=mode.name, examples_per_user=m or 1)
    if below is not None:  # the run's own lower end is not certified: an attained or dominated run's
        lower = float(below.epsilon_bounds(d, tol=tol)[0])
    rdp = _rdp_epsilon(mech, d)

    lines = ["Privacy statement (autoacct)"]
    lines += _run_lines(run, sigma) + _relation_lines(run, sigma)
    unit = "one example" if m is None else f"one user (at most {m} examples)"
    lines.append(f"guarantee: ({bound_text(upper, True)}, {d:g})-differential privacy for {unit}, "
                 f"{mode.relation.value} neighbouring")
    lines.append(f"  certified: the true epsilon({d:g}) lies in [{bound_text(lower, False)}, "
                 f"{bound_text(upper, True)}]")
    if rdp is not None:
        lines.append(f"  an RDP accountant reports epsilon <= {bound_text(rdp, True)} for the same run "
                     f"({(rdp / upper - 1) * 100 if upper > 0 else 0:+.1f}%): also valid, looser")
    lines += _sampling_lines(mode.name)
    lines += _level_lines(m, q, sigma, q_user)
    return PrivacyStatement(
        epsilon=upper, epsilon_lower=lower, epsilon_rdp=rdp, delta=d, noise_multiplier=sigma,
        sample_rate=q, steps=run.steps, sampling=mode.name, neighboring=mode.relation.value,
        rate_rule=run.rate_rule, steps_rule=run.steps_rule, other_tools=dict(run.others),
        level="example" if m is None else "user", examples_per_user=m,
        user_sample_rate=q_user, lines=tuple(lines))


def _sampling_lines(name: str) -> list[str]:
    """What the sampling assumption means, and what it does not cover."""
    lines = [f"sampling assumption: {SCHEMES[name].description}."]
    if name == "poisson":
        lines.append("  A pipeline that shuffles the data and cuts it into fixed-size batches is "
                     "not Poisson sampling:")
    elif name == "balls-in-bins":
        lines.append("  A pipeline that shuffles and cuts fixed-size batches uses each example once "
                     "per epoch too, but with fixed batch sizes (replace-one, not add/remove):")
    else:
        lines.append("  A pipeline that shuffles once per epoch and cuts fixed-size batches draws "
                     "them dependently, not independently per step:")
    lines.append("  this accounting does not certify it, and shuffled batches can have a larger "
                 "epsilon (Chua et al. 2024).")
    return lines


def _level_lines(m: int | None, q: float, sigma: float, q_user: float | None) -> list[str]:
    """Which unit of data the guarantee protects."""
    if m is None:
        return ["unit of privacy: example-level. A person who contributes several examples is "
                "protected only by group privacy,",
                "  which is weaker; give examples_per_user (--examples-per-user) for a user-level "
                "statement."]
    return [f"unit of privacy: user-level, every user having at most {m} examples, each sampled "
            f"independently with probability q = {q:.6g}.",
            f"  Exact: B ~ Binomial({m}, q) of a user's examples are in a batch (some with "
            f"probability q_u = {q_user:.6g}) and move the clipped sum by at most B C,",
            f"  so each step is MixtureOfGaussians({sigma:.6g}, (0, ..., {m}), Binomial({m}, q) "
            "pmf); the example-level guarantee of the same run is smaller."]
