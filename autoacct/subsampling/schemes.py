"""The batch samplers a DP-SGD run can be accounted for, by name.

One DP-SGD step clips every per-example gradient to L2 norm C, sums the
gradients of a random batch and adds N(0, (sigma C)^2 I). Which subsampled
Gaussian describes the step depends on how the batch is drawn, and so does
the neighbouring relation the guarantee refers to. Each scheme records both,
and the factor by which the relation scales the sensitivity of the sum:
adding or removing a record moves it by at most C, replacing one by at most
2 C. ``dpsgd``, the calibrators and the command line read the schemes from
here, so a new scheme is its module in this package plus one entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from autoacct.mechanism import Mechanism, Neighboring
from autoacct.subsampling.poisson import PoissonSubsample
from autoacct.subsampling.without_replacement import SampleWithoutReplacement
from autoacct.zoo.mechanisms import Gaussian


@dataclass(frozen=True)
class SamplingScheme:
    """How a DP-SGD batch is drawn.

    Parameters
    ----------
    name:
        The scheme's name (``dpsgd(..., sampling=name)``, ``--sampling name``).
    relation:
        The neighbouring relation D ~ D' of the guarantee.
    sensitivity_factor:
        L2 sensitivity of the clipped gradient sum under ``relation``, in units of C.
    step:
        (sample rate q, noise multiplier sigma) -> the mechanism of one step.
    description:
        One line for help texts.
    """

    name: str
    relation: Neighboring
    sensitivity_factor: float
    step: Callable[[float, float], Mechanism]
    description: str


def _poisson_step(q: float, sigma: float) -> Mechanism:
    return PoissonSubsample(q)(Gaussian(sigma))


def _without_replacement_step(q: float, sigma: float) -> Mechanism:
    # Replacing a record moves the sum by up to 2 C: a unit-sensitivity Gaussian with sigma / 2.
    return SampleWithoutReplacement(q)(Gaussian(sigma / 2.0))


#: The schemes by name, the default first.
SCHEMES: dict[str, SamplingScheme] = {s.name: s for s in (
    SamplingScheme("poisson", Neighboring.ADD_REMOVE, 1.0, _poisson_step,
                   "each example joins the batch independently with probability q (add/remove)"),
    SamplingScheme("without-replacement", Neighboring.REPLACE_ONE, 2.0, _without_replacement_step,
                   "each batch is a uniformly random subset of fixed size q n (replace-one)"),
)}


def scheme(name: object) -> SamplingScheme:
    """The scheme called ``name``; ValueError naming ``sampling`` for any other value."""
    if not isinstance(name, str) or name not in SCHEMES:
        raise ValueError(f"sampling must be one of {tuple(SCHEMES)}, got {name!r}")
    return SCHEMES[name]
