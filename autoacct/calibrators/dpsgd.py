"""DP-SGD calibration: the noise multiplier, or the number of steps, for a budget.

DP-SGD with sampling rate q, noise multiplier sigma (noise std / clipping norm)
and k steps is the k-fold composition of the subsampled Gaussian mechanism
(``autoacct.dpsgd.dpsgd``): Poisson sampling under add/remove neighbouring,
or sampling without replacement under replace-one neighbouring. Its certified
epsilon(delta) decreases in sigma and increases in k, and both searches are
:func:`autoacct.calibrators.calibrate` on that family, started from the
central-limit approximation of Bu, Dong, Long and Su (2020): DP-SGD is
approximately mu-GDP with

    mu = q sqrt(k (e^{c^2/sigma^2} - 1)),

c = 1 for add/remove and c = 2 for replace-one (whose pair is two mixtures
shifted by 2 sensitivities); at user level (m examples per user, Poisson) q is
replaced by m q, the expected count of a user's examples in a batch. The
approximation only chooses the first guess; every returned value is certified
by the accountant.
"""

from __future__ import annotations

import math
from typing import Any

from scipy import special

from autoacct import _validation as check
from autoacct.calibrators.calibrate import calibrate_result
from autoacct.calibrators.gaussian import gdp_mu
from autoacct.calibrators.goals import AdvantageGoal, EpsilonGoal, Goal, TprGoal, goal_of
from autoacct.calibrators.result import DEFAULT_RTOL, CalibrationResult
from autoacct.dpsgd import dpsgd
from autoacct.mechanism import Mechanism
from autoacct.subsampling.schemes import scheme

#: Why a sampler's certified lower bounds stay below its upper bounds at every accountant tol,
#: so that the noise multiplier's optimality is certified only as far as those lower bounds reach.
#: Both are lower bounds on the mechanism's epsilon (the first an attained pair, the second a
#: post-processing), not on the dominating pair whose epsilon the upper bounds account.
_LOOSE_LOWER = {
    "without-replacement": (
        "for sampling without replacement the lower bound is the epsilon of the pair that one "
        "fixed pair of neighbouring datasets attains at every step, a lower bound on the "
        "mechanism but not on the dominating pair the upper bound accounts (which need not be "
        "attained; Lebeda, Regehr, Kamath and Steinke 2024)"),
    "balls-in-bins": (
        "for balls-in-bins sampling the lower bound is that of each epoch's outputs summed (a "
        "Gaussian with noise multiplier sigma sqrt(t)), a lower bound on the mechanism but not "
        "on the pair whose Renyi DP the upper bound accounts"),
}


def _shape(sample_rate: float | None, steps: int | None, dataset_size: int | None,
           batch_size: int | None, epochs: int | None) -> tuple[float, float]:
    """Approximate (q, k) of the run, for the first guess only."""
    q = sample_rate if sample_rate is not None else batch_size / dataset_size  # type: ignore[operator]
    if steps is not None:
        k = float(steps)
    else:
        k = epochs * math.ceil(dataset_size / batch_size)  # type: ignore[operator]
    return float(q), float(k)


def _check_noise_needed(goal: Goal, q: float, k: float) -> None:
    """Raise ValueError when every noise multiplier meets the budget.

    Each step uses a given record (or some example of a given user) with probability
    q, so its pair is at total variation distance at most q, and k steps at most
    tv = 1 - (1 - q)^k. When
    tv <= delta, epsilon(delta) = 0 for every noise multiplier; the advantage is
    tv at most, and the TPR at fpr a at most a + tv. Then there is nothing to calibrate.
    """
    reach = -math.expm1(k * math.log1p(-q)) if q < 1.0 else 1.0
    run = f"with sample_rate={q:g} and {k:g} steps, delta(0) <= 1 - (1 - q)^k = {reach:.6g}"
    if isinstance(goal, EpsilonGoal) and reach <= goal.delta:
        raise ValueError(f"every noise_multiplier meets epsilon={goal.value:g} at delta={goal.delta:g}: "
                         f"{run} <= delta whatever the noise, so no noise is needed")
    if isinstance(goal, AdvantageGoal) and reach <= goal.value:
        raise ValueError(f"every noise_multiplier meets advantage={goal.value:g}: {run}, "
                         "the largest advantage whatever the noise, so no noise is needed")
    if isinstance(goal, TprGoal) and goal.fpr + reach <= goal.value:
        raise ValueError(f"every noise_multiplier meets tpr={goal.value:g} at fpr={goal.fpr:g}: {run}, "
                         "and TPR - FPR is at most that whatever the noise, so no noise is needed")


def _target_mu(goal: Goal) -> float:
    """mu of the mu-GDP mechanism that just meets the goal (for the first guess only): the
    analytic Gaussian for (epsilon, delta), Phi^-1(tpr) - Phi^-1(fpr) for a TPR target (the
    Gaussian tradeoff 1 - Phi(Phi^-1(1 - a) - mu)), 2 Phi^-1((1 + adv) / 2) for an advantage."""
    if isinstance(goal, EpsilonGoal):
        return gdp_mu(goal.value, goal.delta)
    if isinstance(goal, TprGoal):
        return float(special.ndtri(goal.value) - special.ndtri(goal.fpr))
    return float(2.0 * special.ndtri((1.0 + goal.value) / 2.0))


def calibrate_dpsgd_result(epsilon: float | None = None, delta: float | None = None,
                           sample_rate: float | None = None,
                           steps: int | None = None, sampling: str = "poisson", *,
                           dataset_size: int | None = None, batch_size: int | None = None,
                           epochs: int | None = None, tol: float | None = None,
                           rtol: float = DEFAULT_RTOL, tpr: float | None = None,
                           fpr: float | None = None, advantage: float | None = None,
                           examples_per_user: int = 1) -> CalibrationResult:
    """Like :func:`calibrate_dpsgd`, returning the full :class:`CalibrationResult`."""
    goal = goal_of(epsilon, delta, tpr, fpr, advantage)
    run: dict[str, Any] = dict(sample_rate=sample_rate, steps=steps, dataset_size=dataset_size,
               batch_size=batch_size, epochs=epochs, sampling=sampling,
               examples_per_user=examples_per_user)
    dpsgd(noise_multiplier=1.0, **run)  # validates the run's description
    mu = _target_mu(goal)
    q, k = _shape(sample_rate, steps, dataset_size, batch_size, epochs)
    m = int(examples_per_user)
    # A user takes part in a step with probability 1 - (1 - q)^m.
    _check_noise_needed(goal, -math.expm1(m * math.log1p(-q)) if q < 1.0 else 1.0, k)
    c = scheme(sampling).sensitivity_factor
    ratio = mu * mu / (min(m * q, float(m)) ** 2 * k)
    x0 = c / math.sqrt(math.log1p(ratio)) if ratio > 0 else 1.0
    return calibrate_result(lambda s: dpsgd(noise_multiplier=s, **run), epsilon, delta, tpr=tpr, fpr=fpr,
                            advantage=advantage, increasing=False, x0=x0, tol=tol, rtol=rtol,
                            name="noise_multiplier", loose_lower=_LOOSE_LOWER.get(sampling))


def calibrate_dpsgd(epsilon: float | None = None, delta: float | None = None,
                    sample_rate: float | None = None,
                    steps: int | None = None, sampling: str = "poisson", *,
                    dataset_size: int | None = None, batch_size: int | None = None,
                    epochs: int | None = None, tol: float | None = None,
                    rtol: float = DEFAULT_RTOL, tpr: float | None = None,
                    fpr: float | None = None, advantage: float | None = None,
                    examples_per_user: int = 1) -> float:
    """Smallest noise multiplier sigma for which DP-SGD's certified epsilon(delta) <= epsilon.

    sigma is the noise std divided by the clipping norm. The run is given by
    ``sample_rate`` q in (0, 1] and ``steps`` k, or by ``dataset_size`` N,
    ``batch_size`` B and ``epochs`` E (q = B / N, k = E ceil(N / B), as in
    ``autoacct.dpsgd.dpsgd``). ``sampling``: "poisson" (add/remove
    neighbouring) or "without-replacement" (replace-one). ``examples_per_user``
    m > 1 (Poisson only) calibrates the user-level guarantee of
    ``dpsgd(..., examples_per_user=m)``: add/remove of a user with at most m
    examples, each sampled independently with probability q.

    The result x_s satisfies ``dpsgd(q, x_s, k).epsilon(delta, tol=tol) <= epsilon``
    and is certified within a factor 1 + ``rtol`` (default 0.2%) of the smallest
    sigma whose true epsilon meets the budget.

    In place of (epsilon, delta) an attack-risk target may be given (keywords):
    ``tpr`` and ``fpr`` (every membership-inference attack at false-positive rate
    fpr has true-positive rate at most tpr, certified by ``tpr(fpr)``) or
    ``advantage`` (max TPR - FPR, certified by ``advantage()``); see
    :func:`autoacct.calibrators.calibrate`.

    Raises
    ------
    ValueError
        Bad run description, epsilon <= 0, delta outside (0, 1), or a run
        with 1 - (1 - q)^k <= delta, for which every noise multiplier meets
        the budget (likewise for the risk targets); none or several targets.
    """
    return calibrate_dpsgd_result(epsilon, delta, sample_rate, steps, sampling,
                                  dataset_size=dataset_size, batch_size=batch_size, epochs=epochs,
                                  tol=tol, rtol=rtol, tpr=tpr, fpr=fpr, advantage=advantage,
                                  examples_per_user=examples_per_user).value


def calibrate_dpsgd_steps(epsilon: float, delta: float, sample_rate: float | None = None,
                          noise_multiplier: float | None = None, sampling: str = "poisson", *,
                          dataset_size: int | None = None, batch_size: int | None = None,
                          tol: float | None = None, max_steps: int = 10 ** 9) -> int:
    """Largest number of steps k for which DP-SGD's certified epsilon(delta) <= epsilon.

    The run has sampling rate ``sample_rate`` q in (0, 1] (or q = ``batch_size``
    / ``dataset_size``) and noise multiplier ``noise_multiplier`` sigma > 0
    (noise std / clipping norm); ``sampling`` as in :func:`calibrate_dpsgd`.
    k ranges over 1..``max_steps``; k_s is returned with
    ``dpsgd(q, sigma, k_s).epsilon(delta, tol=tol) <= epsilon``, certified within the
    calibrators' relative gap (:data:`~autoacct.calibrators.result.DEFAULT_RTOL`, 2e-3) of the
    largest k whose true epsilon(delta) meets the budget (see
    :func:`~autoacct.calibrators.calibrate.calibrate`). A few more steps may still certify
    within the budget: the certified epsilon is within tol of the truth, not monotone in k
    (at epsilon 100, delta 1e-5, q 0.01, sigma 1, k_s = 659106 while 659107 and 659108 also
    certify at most 100).

    Raises
    ------
    InfeasibleBudgetError
        (a ValueError) when even one step exceeds the budget; the message
        gives the epsilon of a single step.
    """
    if noise_multiplier is None:
        raise ValueError("noise_multiplier is required")
    max_steps = check.positive_int("max_steps", max_steps)
    if sample_rate is None and (dataset_size is None or batch_size is None):
        raise ValueError("give sample_rate, or dataset_size and batch_size")
    run: dict[str, Any] = dict(sample_rate=sample_rate, noise_multiplier=noise_multiplier,
               dataset_size=dataset_size, batch_size=batch_size, sampling=sampling)
    if sample_rate is not None:
        dpsgd(steps=1, **run)
        q = float(sample_rate)
    else:
        dpsgd(epochs=1, **run)
        q = batch_size / dataset_size  # type: ignore[operator]
    c = scheme(sampling).sensitivity_factor
    mu = gdp_mu(epsilon, delta)
    with_noise = math.expm1(min(c * c / float(noise_multiplier) ** 2, 700.0))
    k0 = min(max(mu * mu / (q * q * with_noise), 1.0), float(max_steps))

    def factory(k: int) -> Mechanism:
        if sample_rate is not None:
            return dpsgd(steps=k, **run)
        return dpsgd(steps=k, **{**run, "sample_rate": q, "dataset_size": None,
                                  "batch_size": None})

    res = calibrate_result(factory, epsilon, delta, (1, max_steps), integer=True, increasing=True,
                           x0=k0, tol=tol, name="steps")
    return int(res.value)
