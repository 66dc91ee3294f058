"""DP-SGD in one call: the composition of subsampled Gaussian steps.

One DP-SGD step clips every per-example gradient to L2 norm C, sums the
gradients of a random batch and adds N(0, (noise_multiplier C)^2 I). Its privacy
is that of a subsampled Gaussian mechanism (Abadi et al. 2016; Koskela, Jalko
and Honkela 2020), given by the sampling scheme
(:data:`autoacct.subsampling.schemes.SCHEMES`):

* ``sampling="poisson"`` (add/remove relation): every record joins the batch
  independently with probability q; the sum moves by at most C when a record
  is added or removed, so the step is ``PoissonSubsample(q)(Gaussian(noise_multiplier))``.
* ``sampling="without-replacement"`` (replace-one relation): the batch is a
  uniformly random subset of fixed size q n; replacing a record moves the sum
  by at most 2 C, so the step is
  ``SampleWithoutReplacement(q)(Gaussian(noise_multiplier / 2))``.
* ``sampling="balls-in-bins"`` (add/remove relation): every record is used in exactly
  one of the t = ceil(1/q) steps of each epoch (1/q itself when it is an integer; with
  q = B / N, the ceil(N / B) batches of a data loader), chosen uniformly and independently
  (random allocation; Chua et al. 2025, Feldman and Shenfeld 2025). The unit composed is
  the epoch, ``RandomAllocation(t)(Gaussian(noise_multiplier))``, K // t times for K
  steps, then the first K mod t steps of one more
  (:class:`~autoacct.subsampling.partial_epoch.PartialEpochMechanism`: upper bounds of
  Poisson(r/t) subsampling of an epoch of r steps, lower bounds of its steps' summed outputs
  and of its first step). Its bounds come from the epoch's certified
  PLD laws, or where the epoch has none (a small noise multiplier, a very long epoch) from
  Renyi DP (see :mod:`autoacct.subsampling.allocation`). Each epoch, whole or partial, is
  dominated by the Gaussian of one step, so the run's upper ends are also at most those of
  ceil(K / t) Gaussians composed, sigma / sqrt(ceil(K / t)), which are the tighter for short
  epochs at a small noise multiplier (t = 2, sigma = 0.3, 5 epochs: eps(1e-5) <= 58.78, the
  epochs' Renyi DP 62.22; ``ComposedMechanism.dominating``).

User level (``examples_per_user=m``, Poisson only): neighbouring datasets differ by
adding or removing one user with at most m examples, each sampled independently with
probability q. The user's count in a batch is B ~ Binomial(m, q) and the sum moves by at
most B C, so the step is exactly ``MixtureOfGaussians(noise_multiplier, (0, ..., m),
Binomial(m, q) pmf)`` (:func:`autoacct.subsampling.schemes.user_step`).

The training run is the adaptive composition of its steps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from autoacct import _validation as check
from autoacct.mechanism import Mechanism
from autoacct.subsampling.allocation import RandomAllocatedMechanism
from autoacct.subsampling.base import MAX_MU
from autoacct.subsampling.schemes import SCHEMES, scheme, user_step, user_step_is_cut
from autoacct.zoo.transformers import Composition

__all__ = ["SAMPLINGS", "dpsgd", "dpsgd_lower_run", "dpsgd_schedule"]

#: The batch samplers DP-SGD can be accounted for (the names of the sampling schemes).
SAMPLINGS = tuple(SCHEMES)


def _run_shape(sample_rate: float | None, steps: int | None, dataset_size: int | None,
               batch_size: int | None, epochs: int | None) -> tuple[float, int]:
    """(q, k) of a run given by a rate or n and B, and by steps or epochs (see :func:`dpsgd`)."""
    n = None if dataset_size is None else check.positive_int("dataset_size", dataset_size)
    b = None if batch_size is None else check.positive_int("batch_size", batch_size)
    if (n is None) != (b is None):
        raise ValueError("dataset_size and batch_size must be given together, got "
                         f"dataset_size={dataset_size!r}, batch_size={batch_size!r}")
    if n is not None and b is not None and b > n:
        raise ValueError(f"batch_size must not exceed dataset_size ({n}), got {batch_size!r}")
    if sample_rate is not None and n is not None:
        raise ValueError("give either sample_rate or dataset_size and batch_size, not both")
    if sample_rate is not None:
        q = check.real("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True)
    elif n is not None and b is not None:
        q = b / n
    else:
        raise ValueError("sample_rate (or dataset_size and batch_size) must be given")
    if steps is not None and epochs is not None:
        raise ValueError("give either steps or epochs, not both")
    if steps is not None:
        k = check.positive_int("steps", steps)
    elif epochs is not None:
        e = check.positive_int("epochs", epochs)
        if n is None or b is None:
            raise ValueError("epochs needs dataset_size and batch_size")
        k = e * math.ceil(n / b)
    else:
        raise ValueError("steps (or epochs with dataset_size and batch_size) must be given")
    return q, k


def dpsgd(sample_rate: float | None = None, noise_multiplier: float | None = None,
          steps: int | None = None, *, dataset_size: int | None = None,
          batch_size: int | None = None, epochs: int | None = None,
          sampling: str = "poisson", examples_per_user: int = 1) -> Mechanism:
    """The privacy of a DP-SGD run: ``steps`` adaptive compositions of one subsampled Gaussian step.

    Give the sampling rate either directly (``sample_rate``) or as
    ``batch_size / dataset_size``; give the length either as ``steps`` or as
    ``epochs``, meaning ``epochs * ceil(dataset_size / batch_size)`` steps.

    Parameters
    ----------
    sample_rate:
        q in (0, 1]: the probability that a given record is in a batch (Poisson)
        or the batch size over the dataset size (without replacement).
    noise_multiplier:
        sigma > 0: the noise standard deviation divided by the clipping norm C.
    steps:
        Number of steps, a positive integer.
    dataset_size:
        Number of records n (with ``batch_size``, instead of ``sample_rate``).
    batch_size:
        Expected (Poisson) or exact (without replacement) batch size B <= n.
    epochs:
        Number of passes over the data (instead of ``steps``; needs n and B).
    sampling:
        "poisson" (add/remove relation),
        "without-replacement" (replace-one relation; see
        :class:`~autoacct.subsampling.SampledWithoutReplacementMechanism`) or
        "balls-in-bins" (add/remove relation; the run composes steps // t epochs of
        t = ceil(1/q) steps, see :class:`~autoacct.subsampling.RandomAllocatedMechanism`, and
        the first steps mod t steps of one more, see
        :class:`~autoacct.subsampling.partial_epoch.PartialEpochMechanism`).
    examples_per_user:
        m, a positive integer (default 1, example level). For m > 1 (Poisson
        sampling only) the guarantee is user level: neighbouring datasets differ by
        adding or removing one user with at most m examples, each of which joins a
        batch independently with probability q.

    Returns
    -------
    Mechanism
        ``Composition()([step], [steps])``, where ``step`` is
        ``PoissonSubsample(q)(Gaussian(noise_multiplier))`` or
        ``SampleWithoutReplacement(q)(Gaussian(noise_multiplier / 2))`` (the
        replace-one sensitivity of the clipped sum is 2 C), or for balls-in-bins
        ``RandomAllocation(t)(Gaussian(noise_multiplier))`` composed steps // t times (and a
        ``PartialEpochMechanism`` of the remaining steps mod t, if any); at user level
        ``MixtureOfGaussians(noise_multiplier, (0, 1, ..., m), Binomial(m, q) pmf)``
        (binomial tails below 1e-30 moved to sensitivity m, which dominates;
        see :func:`~autoacct.subsampling.schemes.user_step`).
    """
    mode = scheme(sampling)
    users = check.positive_int("examples_per_user", examples_per_user)
    if users != 1 and mode.name != "poisson":
        raise ValueError(f"examples_per_user={examples_per_user!r} needs sampling='poisson' "
                         f"(user-level accounting is for Poisson sampling), got sampling={sampling!r}")
    if noise_multiplier is None:
        raise ValueError("noise_multiplier must be given")
    # (a sampled Gaussian's noise multiplier is at least 1 / MAX_MU, see subsampling.base; the
    # step's Gaussian has the noise multiplier over the scheme's sensitivity: sigma / 2 without
    # replacement, whose refusal named that internal Gaussian rather than this argument)
    sigma = check.real("noise_multiplier", noise_multiplier, low=mode.sensitivity_factor / MAX_MU)
    q, k = _run_shape(sample_rate, steps, dataset_size, batch_size, epochs)
    if users != 1:
        return Composition()([user_step(q, sigma, users)], [k])
    return Composition()(*mode.run(q, sigma, k))


def dpsgd_lower_run(sample_rate: float, noise_multiplier: float, steps: int, *,
                    sampling: str = "poisson", examples_per_user: int = 1) -> Mechanism | None:
    """A run whose lower bounds are certified for ``dpsgd(sample_rate, noise_multiplier,
    steps, sampling=..., examples_per_user=...)`` where that run's own are not; None when
    its own are.

    * User level with a cut binomial tail: ``dpsgd`` moves the tail up to m (a
      dominating pair, no lower bounds); this run moves it down to the largest count
      kept, a pair dominated by the true step
      (:func:`~autoacct.subsampling.schemes.user_step`).
    * Balls-in-bins, two epochs or more of an epoch without PLD laws (a small noise
      multiplier or a very long epoch): the epochs' outputs summed, a Gaussian with noise
      multiplier sigma sqrt(t) per epoch, composed
      (:meth:`~autoacct.subsampling.RandomAllocatedMechanism.summed_step`); with PLD laws the
      run reads its lower ends off the epochs' cell sums (``attained_parts``).

    Every other run certifies its own lower ends: Poisson's pair is attained, and a
    composition without replacement reads its lower ends off the pair one fixed pair of
    datasets attains at every step
    (:meth:`~autoacct.subsampling.SampledWithoutReplacementMechanism.attained_parts`).

    Arguments are those of :func:`dpsgd` (q, sigma, K, sampling, m).
    """
    mode = scheme(sampling)
    q = check.real("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True)
    sigma = check.real("noise_multiplier", noise_multiplier, low=0.0, low_open=True)
    k = check.positive_int("steps", steps)
    m = check.positive_int("examples_per_user", examples_per_user)
    if m > 1:
        if not user_step_is_cut(q, m):
            return None
        return Composition()([user_step(q, sigma, m, dominated=True)], [k])
    if mode.name != "balls-in-bins":
        return None  # Poisson's pair is attained; without replacement reads its own lower ends
    step = mode.step(q, sigma)
    mechs, counts = mode.run(q, sigma, k)
    if sum(counts) == 1 or not isinstance(step, RandomAllocatedMechanism) or step.attained_parts() is not None:
        # One epoch or its first steps, or epochs with PLD laws (whose lower laws compose, with
        # those of a last partial epoch): the run's own lower ends.
        return None
    # The whole epochs' summed outputs; the last partial epoch's (or its one Poisson step itself).
    below = [m.summed_step() if isinstance(m, RandomAllocatedMechanism) else m.dominated() or m for m in mechs]
    return Composition()(below, counts)


def dpsgd_schedule(phases: Sequence[tuple[float, float, int]], *,
                   sampling: str = "poisson", examples_per_user: int = 1) -> Mechanism:
    """The privacy of a DP-SGD run whose sampling rate and noise change between phases.

    Phase i runs ``steps_i`` steps with sampling rate ``q_i`` and noise
    multiplier ``sigma_i``; the run is their adaptive composition. Equal phases
    share their discretisation in the accountant, so the cost grows with the
    number of distinct (q, sigma) pairs, not with the number of phases.

    Parameters
    ----------
    phases:
        Non-empty sequence of (sample_rate q_i in (0, 1], noise_multiplier
        sigma_i > 0, steps_i >= 1).
    sampling:
        "poisson", "without-replacement" or "balls-in-bins", as in :func:`dpsgd` (balls-in-bins:
        each phase is its own steps_i // t_i epochs and the first steps_i mod t_i steps of one more).
    examples_per_user:
        m, a positive integer (default 1, example level); for m > 1 (Poisson only) the
        guarantee is user level, every phase's step that of :func:`dpsgd` at that level
        (:func:`~autoacct.subsampling.schemes.user_step` at q_i, sigma_i, m).

    Returns
    -------
    Mechanism
        ``Composition()([step_1, step_2, ...], [steps_1, steps_2, ...])``.
    """
    mode = scheme(sampling)
    users = check.positive_int("examples_per_user", examples_per_user)
    if users != 1 and mode.name != "poisson":
        raise ValueError(f"examples_per_user={examples_per_user!r} needs sampling='poisson' "
                         f"(user-level accounting is for Poisson sampling), got sampling={sampling!r}")
    if isinstance(phases, (str, bytes)) or not isinstance(phases, Sequence):
        raise TypeError(f"phases must be a sequence of (sample_rate, noise_multiplier, steps), "
                        f"got {type(phases).__name__}")
    if len(phases) == 0:
        raise ValueError("phases must not be empty")
    steps_list: list[Mechanism] = []
    counts: list[int] = []
    for i, phase in enumerate(phases):
        if not isinstance(phase, Sequence) or len(phase) != 3:
            raise ValueError(f"phases[{i}] must be (sample_rate, noise_multiplier, steps), got {phase!r}")
        q = check.real(f"phases[{i}].sample_rate", phase[0], low=0.0, high=1.0, low_open=True)
        sigma = check.real(f"phases[{i}].noise_multiplier", phase[1], low=0.0, low_open=True)
        k = check.positive_int(f"phases[{i}].steps", phase[2])
        if users == 1:
            mechs, units = mode.run(q, sigma, k)
            steps_list.extend(mechs)
            counts.extend(units)
        else:
            steps_list.append(user_step(q, sigma, users))
            counts.append(k)
    return Composition()(steps_list, counts)
