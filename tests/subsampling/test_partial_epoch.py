"""The first steps of a balls-in-bins epoch (autoacct/subsampling/partial_epoch.py): lower ends
from the pairs its outputs' post-processings attain; upper ends against an independent bracket
of the pair of the r steps, Poisson(r/t) subsampling of the r-step epoch's attained pair.

The bracket (:func:`_binned_epoch`): each summand l_j = exp(Z_j / s - 1/(2 s^2)) of the r-step
epoch's ratio R = (l_1 + ... + l_r) / r is put in its bin [k h, (k + 1) h) (normal masses in
scipy, l beyond exp(8.5 / s - 1/(2 s^2)) left out), and the bin indices' sum S's law is formed by
convolution. Both hockey-stick integrands are monotone in R, and h S <= r R < h (S + r), so
evaluating them at the bin ends on the side that lowers them, less the convolution's rounding
(ten times the largest negative entry it produced, times the integrand's sum), bounds each
profile from below; the other ends give an estimate from above (the left-out tail apart). The
pair of S's laws is a post-processing of the r steps' pair, so its tradeoff curve is above
theirs. r = 1 is the Poisson-subsampled Gaussian, in closed form.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import integrate, optimize, signal, special, stats

from autoacct import Composition, Gaussian, PoissonSubsample, RandomAllocation, dpsgd
from autoacct.losses.atoms import AtomLoss
from autoacct.subsampling.allocation_pld import EpochLaws
from autoacct.subsampling.partial_epoch import PartialEpochMechanism, rate_up, subsampled_laws


def _poisson_gaussian_delta(q: float, sigma: float, eps: float) -> float:
    """delta(eps) of the remove pair ((1 - q) N(0, s^2) + q N(1, s^2), N(0, s^2)) in closed form,
    the larger direction for these parameters (eps > 0): the likelihood ratio is increasing in
    the output, so the event is one threshold x*."""
    x = sigma * sigma * math.log((math.expm1(eps) + q) / q) + 0.5
    return float((1 - q) * stats.norm.sf(x / sigma) + q * stats.norm.sf((x - 1) / sigma)
                 - math.exp(eps) * stats.norm.sf(x / sigma))


@pytest.mark.parametrize("sigma, steps, used", [(0.8, 10, 2), (0.8, 10, 3), (1.0, 100, 2)])
def test_a_partial_epochs_lower_end_is_at_least_its_first_steps(sigma, steps, used):
    # The first output alone is a Poisson-subsampled Gaussian at rate 1/t (the record is in it
    # with probability 1/t, independently of the others) of the same datasets: a run of r steps
    # attains at least its delta. Before, only the r outputs' sum was read: at t = 10,
    # sigma = 0.8, two steps' lower end was 1.959, below one step's 2.727.
    delta = 1e-5
    lower, upper = PartialEpochMechanism(sigma, steps, used).epsilon_bounds(delta)
    one = dpsgd(sample_rate=1.0 / steps, noise_multiplier=sigma, steps=1, sampling="balls-in-bins")
    one_lower = one.epsilon_bounds(delta)[0]
    # (each lower end rounded down by its route: a few ulps apart)
    assert lower >= one_lower * (1 - 1e-14)
    # Below the truth: the binned bracket's estimate from above of the r steps' eps (it was
    # the first step's, and is now the r-step epoch's lower laws subsampled).
    remove, add = _subsampled_profiles(sigma, used, used / steps, 0.02)
    assert lower <= max(_root(lambda e: remove(e)[1] - delta), _root(lambda e: add(e)[1] - delta))
    assert lower <= upper


def test_a_partial_epochs_lower_end_is_monotone_in_the_steps_run():
    # dpsgd's run of k balls-in-bins steps (t = 10): the first k outputs include the first k - 1,
    # so each lower end is at least the one before it (up to the few ulps each is rounded down by).
    lows = [dpsgd(sample_rate=0.1, noise_multiplier=0.8, steps=k, sampling="balls-in-bins").epsilon_bounds(1e-5)[0]
            for k in range(1, 10)]
    assert np.all(np.diff(lows) >= -1e-14 * np.array(lows[:-1]))
    assert lows[1] > 2.7  # was 1.959


def _poisson_gaussian_add_delta(q: float, sigma: float, eps: float) -> float:
    """delta(eps) of the add pair (N(0, s^2), (1 - q) N(0, s^2) + q N(1, s^2)) in closed form: the
    ratio is decreasing in the output, so the event is x < x* (none where (1 - q) e^eps >= 1)."""
    e = math.exp(eps)
    if (1 - q) * e >= 1:
        return 0.0
    x = sigma * sigma * math.log((1 / e - 1 + q) / q) + 0.5
    return float(stats.norm.cdf(x / sigma) * (1 - e * (1 - q)) - e * q * stats.norm.cdf((x - 1) / sigma))


def _root(f: Callable[[float], float]) -> float:
    """The eps >= 0 where the decreasing f crosses 0 (0 if it starts below)."""
    if f(0.0) <= 0.0:
        return 0.0
    hi = 1.0
    while f(hi) > 0.0:
        hi *= 2.0
    return float(optimize.brentq(f, 0.0, hi, xtol=1e-13))


@pytest.mark.parametrize("sigma, steps", [(1.0, 10), (0.8, 3), (2.0, 100)])
def test_one_step_of_an_epoch_is_the_poisson_subsampled_gaussian(sigma, steps):
    # The first step alone takes the record with probability 1/t, independently of the others:
    # exactly PoissonSubsample(1/t)(Gaussian(sigma)), upper and lower ends. It was the whole
    # epoch's upper end: t = 10, sigma = 1, eps(1e-5) <= 2.1889 for the truth 1.6845.
    delta = 1e-5
    q = 1.0 / steps
    lower, upper = PartialEpochMechanism(sigma, steps, 1).epsilon_bounds(delta)
    assert (lower, upper) == PoissonSubsample(q)(Gaussian(sigma)).epsilon_bounds(delta)
    exact = _root(lambda e: max(_poisson_gaussian_delta(q, sigma, e), _poisson_gaussian_add_delta(q, sigma, e)) - delta)
    assert lower <= exact * (1 + 1e-12) and exact <= upper * (1 + 1e-12)
    assert upper <= exact * (1 + 2e-3)  # the PLD route's tolerance, 1e-3


def _binned_epoch(sigma: float, r: int, h: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Q- and P-laws of S, the sum of the bin indices of the r summands (module docstring), and
    the size of the convolutions' rounding (the largest negative entry produced)."""
    s = sigma
    top = math.exp(8.5 / s - 0.5 / (s * s))
    edges = h * np.arange(math.ceil(top / h) + 2, dtype=float)
    with np.errstate(divide="ignore"):
        a = s * np.log(edges) + 0.5 / s  # Z at the edge; under P_1, Z - 1/s is standard

    def masses(shift: float) -> np.ndarray:
        lo, hi = a[:-1] - shift, a[1:] - shift
        return np.maximum(np.where(hi <= 0, special.ndtr(hi) - special.ndtr(lo),
                                   special.ndtr(-lo) - special.ndtr(-hi)), 0.0)

    m, mu = masses(0.0), masses(1.0 / s)
    q_law, p_law = m, mu
    for _ in range(r - 1):
        q_law, p_law = signal.fftconvolve(q_law, m), signal.fftconvolve(p_law, m)
    noise = float(max(-q_law.min(), -p_law.min(), 0.0))
    return np.maximum(q_law, 0.0), np.maximum(p_law, 0.0), noise


def _subsampled_profiles(sigma: float, r: int, rate: float, h: float
                         ) -> tuple[Callable[[float], tuple[float, float]], Callable[[float], tuple[float, float]]]:
    """(remove, add): eps -> (lower bound, upper estimate) of H_e((1-g) Q_r + g P_r || Q_r) and
    H_e(Q_r || (1-g) Q_r + g P_r), g = ``rate``, from :func:`_binned_epoch`."""
    q_law, _, noise = _binned_epoch(sigma, r, h)
    n = np.arange(len(q_law), dtype=float)
    low_ratio, high_ratio = h * n / r, h * (n + r) / r
    g = rate

    def bracket(f: Callable[[np.ndarray], np.ndarray], low_end: np.ndarray, high_end: np.ndarray
                ) -> tuple[float, float]:
        lo, hi = f(low_end), f(high_end)
        err = 10.0 * noise * float(np.sum(hi))
        return float(np.sum(q_law * lo)) - err, float(np.sum(q_law * hi)) + err

    def remove(eps: float) -> tuple[float, float]:
        e = math.exp(eps)  # E_Q[(1 - g + g R - e)_+], increasing in R
        return bracket(lambda x: np.maximum(1 - g + g * x - e, 0.0), low_ratio, high_ratio)

    def add(eps: float) -> tuple[float, float]:
        e = math.exp(eps)  # E_Q[(1 - e (1 - g) - e g R)_+], decreasing in R
        return bracket(lambda x: np.maximum(1 - e * (1 - g) - e * g * x, 0.0), high_ratio, low_ratio)

    return remove, add


#: (t, r, the old upper end: the whole epoch's, eps(1e-5) at sigma = 1)
_PARTIAL = [(3, 2, 3.3051), (5, 3, 2.8201), (10, 2, 2.1889), (10, 9, 2.1889)]


@pytest.mark.parametrize("steps, used, whole", _PARTIAL)
def test_a_partial_epochs_upper_end_is_its_subsampled_epochs(steps, used, whole):
    # The r steps are Poisson(r/t) subsampling of the r-step epoch; its upper end is within the
    # PLD route's tolerance of the bracket's. It was the whole epoch's, 2.1889 at t = 10, r = 2
    # for the truth 1.8386 (reference bracket [1.83850, 1.83887] at bins of 0.005).
    sigma, delta = 1.0, 1e-5
    m = PartialEpochMechanism(sigma, steps, used)
    upper = m.epsilon_bounds(delta)[1]
    remove, add = _subsampled_profiles(sigma, used, used / steps, 0.01)
    low = max(_root(lambda e: remove(e)[0] - delta), _root(lambda e: add(e)[0] - delta))
    high = max(_root(lambda e: remove(e)[1] - delta), _root(lambda e: add(e)[1] - delta))
    assert low <= upper <= high * (1 + 2e-3)
    assert upper < whole * 0.99
    assert upper < RandomAllocation(steps)(Gaussian(sigma)).epsilon_bounds(delta)[1]


@pytest.mark.parametrize("steps, used", [(3, 2), (10, 5)])
def test_a_partial_epochs_laws_bound_both_directions_at_every_eps(steps, used):
    # Each law's profile, at negative eps too (which compositions read), is at least the
    # bracket's lower end of its direction, and within a little of its upper estimate.
    sigma = 1.0
    m = PartialEpochMechanism(sigma, steps, used)
    parts = m.loss_parts()
    assert parts is not None and len(parts) == 1
    forward, backward, times = parts[0]
    assert times == 1 and not forward.tight and not backward.tight
    remove, add = _subsampled_profiles(sigma, used, used / steps, 0.01)
    eps = np.array([-3.0, -1.0, math.log1p(-used / steps) - 0.01, -0.1, 0.0, 0.3, 1.0, 2.0, 3.0])
    f_val, f_err = forward.profile_with_error(eps)
    b_val, b_err = backward.profile_with_error(eps)
    for i, e in enumerate(eps):
        assert f_val[i] + f_err[i] >= remove(float(e))[0]
        assert b_val[i] + b_err[i] >= add(float(e))[0]
        # and tight: within a little of the bracket's upper estimate
        assert f_val[i] <= remove(float(e))[1] * (1 + 1e-2) + 1e-9
        assert b_val[i] <= add(float(e))[1] * (1 + 1e-2) + 1e-9


def _tradeoff(first: np.ndarray, second: np.ndarray, fpr: np.ndarray) -> np.ndarray:
    """T(first, second)(fpr) = min over tests of type I error (under first) <= fpr of the type II
    error (under second), by the Neyman-Pearson lemma: reject where second / first is largest."""
    ratio = np.where(first > 0, second / np.where(first > 0, first, 1.0), np.inf)
    order = np.argsort(-ratio, kind="stable")
    x = np.concatenate(([0.0], np.cumsum(first[order])))
    y = np.concatenate(([0.0], np.cumsum(second[order])))
    # outcomes ``first`` cannot produce are rejected for free: start from their mass
    start = int(np.searchsorted(x, 0.0, side="right")) - 1
    return 1.0 - np.interp(fpr, x[start:], y[start:])


def test_a_partial_epochs_tradeoff_is_below_its_binned_pairs():
    # The binned pair is a post-processing of the r steps' pair: its tradeoff curves (both
    # orders of both directions' pairs) are above the true ones, which the certified curve must
    # be below. Before it was the whole epoch's curve: 0.8107 at fpr 0.1 (t = 10, r = 2).
    sigma, steps, used = 1.0, 10, 2
    g = used / steps
    q_law, p_law, _ = _binned_epoch(sigma, used, 0.01)
    mixed = (1 - g) * q_law + g * p_law
    fpr = np.array([1e-6, 1e-4, 1e-3, 1e-2, 0.1, 0.3, 0.5, 0.9])
    above = np.minimum(_tradeoff(mixed, q_law, fpr), _tradeoff(q_law, mixed, fpr))
    curve = np.asarray(PartialEpochMechanism(sigma, steps, used).tradeoff(fpr))
    assert np.all(curve <= above + 1e-12)
    assert curve[4] > 0.85  # was 0.8107


def _hockey(first: np.ndarray, second: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """H_e(first || second) = sum over outcomes of (first - e^eps second)_+, by enumeration."""
    return np.array([np.sum(np.maximum(first - math.exp(e) * second, 0.0)) for e in eps])


def test_subsampled_laws_carry_the_masses_their_base_leaves_out():
    # A pair of four outcomes (P-, Q-masses) whose upper laws leave one outcome out, as the
    # lattice's do with its overflow: the forward law moves its P-mass 0.1 to +inf (its Q-mass
    # 0.1 is left out), the backward law its Q-mass 0.1 (its P-mass left out). The subsampled
    # laws must bound the subsampled pair's profiles at every eps, also below log(1 - g), where
    # the removal pair's is 1 - e^eps: without the left-out Q-mass at log(1 - g) the law gave
    # 1 - e^eps - (1 - g - e^eps) 0.1 there.
    p = np.array([0.2, 0.3, 0.4, 0.1])
    q = np.array([0.5, 0.3, 0.1, 0.1])
    v = np.log(p[:3] / q[:3])
    forward = AtomLoss(("toy", "forward"), v, p[:3], q[:3], p_inf=0.1, tight=False)
    order = np.argsort(-v)
    backward = AtomLoss(("toy", "backward"), -v[order], q[:3][order], p[:3][order], p_inf=0.1, tight=False)
    laws = EpochLaws(forward, backward, forward, backward, 1.0, 3, (forward, backward))
    g = 0.3
    removal, addition = subsampled_laws(laws, g)
    mixed = (1 - g) * q + g * p
    eps = np.array([-4.0, -1.0, math.log(1 - g) - 0.05, math.log(1 - g) + 0.05, -0.1, 0.0, 0.2, 0.7, 1.5])
    assert np.all(removal.profile(eps) + removal.profile_error(eps) >= _hockey(mixed, q, eps) - 1e-15)
    assert np.all(addition.profile(eps) + addition.profile_error(eps) >= _hockey(q, mixed, eps) - 1e-15)
    # The first laws' total masses are at least 1.
    assert removal.p_mass.sum() + removal.p_inf >= 1 - 1e-15
    assert addition.p_mass.sum() + addition.p_inf >= 1 - 1e-15


@pytest.mark.parametrize("used, steps", [(1, 3), (2, 10), (3, 10), (7, 100), (1, 49)])
def test_the_rate_is_rounded_up(used, steps):
    # A larger rate dominates: the least float at least r/t (3 / 10 in floats is below 3/10).
    g = rate_up(used, steps)
    assert Fraction(math.nextafter(g, 0.0)) < Fraction(used, steps) <= Fraction(g)


def _composed_binned_delta(first: np.ndarray, second: np.ndarray, k: int, eps: np.ndarray,
                           spacing: float = 1e-3) -> np.ndarray:
    """A lower bound on delta(eps) of the k-fold composition of the pair (first, second) (a
    post-processing of the r steps' pair, so below theirs): every outcome's loss rounded down
    to the grid spacing Z, keeping its first mass (its second mass e^-v times it is then
    larger, which lowers every composed term (a a' - e b b')_+, and merging outcomes of one
    loss lowers a profile); the first laws' k-fold convolution on the grid, less its rounding."""
    keep = (first > 0) & (second > 0)
    v = np.log(first[keep] / second[keep])
    idx = np.floor(v / spacing).astype(int)
    base = int(idx.min())
    law = np.bincount(idx - base, weights=first[keep])
    out = law
    for _ in range(k - 1):
        out = signal.fftconvolve(out, law)
    noise = float(max(-out.min(), 0.0))
    out = np.maximum(out, 0.0)
    values = spacing * (k * base + np.arange(len(out), dtype=float))
    return np.array([float(np.sum(out * np.maximum(-np.expm1(e - values), 0.0))) - 10.0 * noise * len(out)
                     for e in eps])


def test_a_partial_epoch_composed_is_above_its_binned_pairs_composed():
    # Three runs of the first two steps of an epoch of ten (a composition reads the laws' masses
    # at negative losses too): the certified delta is above the binned pair's composed, in
    # both directions, and below the whole epoch's composed.
    sigma, steps, used, k = 1.0, 10, 2, 3
    g = used / steps
    q_law, p_law, _ = _binned_epoch(sigma, used, 0.01)
    mixed = (1 - g) * q_law + g * p_law
    eps = np.array([0.0, 0.5, 1.0, 2.0, 3.0])
    below = np.maximum(_composed_binned_delta(mixed, q_law, k, eps), _composed_binned_delta(q_law, mixed, k, eps))
    upper = np.asarray(Composition()([PartialEpochMechanism(sigma, steps, used)], [k]).delta_bounds(eps)[1])
    assert np.all(upper >= below)
    # (within 1%: the bins; it was the whole epoch's composed, 1.77e-3 at eps = 2 for 4.78e-5)
    assert np.all(upper <= below * 1.05 + 1e-12)
    # The lower ends, from the subsampled 2-step epoch's lower laws (whose single run is checked
    # against quadrature above), are within 2% of the binned pair's composed, a lower bound
    # itself (they were the summed outputs' composed, far below).
    lower = np.asarray(Composition()([PartialEpochMechanism(sigma, steps, used)], [k]).delta_bounds(eps)[0])
    assert np.all(lower >= below * 0.98)
    assert np.all(lower <= upper)


def _remove_delta_two_steps(sigma: float, g: float, eps: float) -> float:
    """E_Q[(1 - g + g R - e^eps)_+] for the 2-step epoch, R = (l_1 + l_2) / 2, by quadrature over
    Z_1 of the closed form in l_2 (a lognormal's E[(l - c)_+] = Phi(1/s - z_c) - c Phi(-z_c),
    z_c = s log c + 1/(2 s)), split at the kink (to 1e-11 relatively, 1e-20 absolutely); agrees
    with mpmath at 30 digits to 12 digits
    (t = 10: 1.83868656246, t = 100: 0.244633360708 at delta 1e-5, sigma = 1)."""
    s, e = sigma, math.exp(eps)

    def inner(z: float) -> float:
        a = 1 - g + g / 2 * math.exp(z / s - 0.5 / (s * s)) - e
        if a >= 0:
            return a + g / 2
        c = -2 * a / g
        zc = s * math.log(c) + 0.5 / s
        return float(g / 2 * (special.ndtr(1 / s - zc) - c * special.ndtr(-zc)))

    kink = s * math.log(2 * (e - 1 + g) / g) + 0.5 / s
    cuts = [-40.0, kink - 3, kink, kink + 3, 40.0]
    return sum(integrate.quad(lambda z: inner(z) * stats.norm.pdf(z), lo, hi, epsabs=1e-20, epsrel=1e-11, limit=200)[0]
               for lo, hi in zip(cuts[:-1], cuts[1:]))


@pytest.mark.parametrize("steps", [10, 100])
def test_two_steps_of_an_epoch_against_quadrature(steps):
    # Two steps: the removal pair's delta by 1-D quadrature; at these eps the addition pair's is
    # 0 ((1 - g) e^eps >= 1). Upper ends, sigma = 1, delta = 1e-5: 1.838687531 (t = 10, truth
    # 1.838686562) and 0.244633545 (t = 100, truth 0.244633361); before, the whole epoch's,
    # 2.1889 and 0.6209.
    sigma, delta, g = 1.0, 1e-5, 2 / steps
    exact = optimize.brentq(lambda x: _remove_delta_two_steps(sigma, g, x) - delta, 0.0, 8.0, xtol=1e-14)
    assert (1 - g) * math.exp(exact) >= 1
    lower, upper = PartialEpochMechanism(sigma, steps, 2).epsilon_bounds(delta)
    assert exact * (1 - 1e-9) <= upper <= exact * (1 + 2e-3)
    # The lower end, from Poisson(2/t) subsampling of the 2-step epoch's lower laws: within tol
    # below the truth (it was the first step's and the summed outputs', 1.6845 at t = 10).
    assert exact * (1 - 1e-3) <= lower <= exact * (1 + 1e-9)


def _two_step_log_moments(sigma: float, g: float, n: int) -> tuple[float, float]:
    """(n - 1) D_n of the two directions of Poisson(g) subsampling of the 2-step epoch: the
    removal's log E_Q[(1 - g + g R)^n] by the binomial expansion over E_Q[R^l] =
    2^-l e^{-l/(2 s^2)} sum_k C(l, k) e^{(k^2 + (l-k)^2) / (2 s^2)} (mpmath, exact terms), the
    addition's log E_Q[(1 - g + g R)^(1-n)] by a 120-node product Gauss-Hermite rule (a smooth
    integrand bounded by (1 - g)^(1-n): far below the 1e-9 allowed)."""
    with mpmath.workdps(40):
        s2, gm = mpmath.mpf(sigma) ** 2, mpmath.mpf(g)
        moments = [mpmath.fsum(mpmath.binomial(m, k) * mpmath.exp((k * k + (m - k) ** 2) / (2 * s2))
                               for k in range(m + 1)) / 2 ** m * mpmath.exp(-m / (2 * s2)) for m in range(n + 1)]
        removal = float(mpmath.log(mpmath.fsum(mpmath.binomial(n, m) * (1 - gm) ** (n - m) * gm ** m * moments[m]
                                               for m in range(n + 1))))
    x, w = special.roots_hermite(120)
    z1, z2 = np.meshgrid(math.sqrt(2.0) * x, math.sqrt(2.0) * x, indexing="ij")
    ratio = (np.exp(z1 / sigma - 0.5 / sigma**2) + np.exp(z2 / sigma - 0.5 / sigma**2)) / 2
    addition = math.log(float(np.sum(np.outer(w, w) / math.pi * (1 - g + g * ratio) ** (1 - n))))
    return removal, addition


def test_a_partial_epochs_renyi_dp_is_above_its_subsampled_epochs():
    # Both directions' Renyi DP at integer orders are at least the subsampled 2-step epoch's
    # and within 1e-3 of it, below the whole epoch's, which it was: at order 2, 0.03379 and
    # 0.02341 (truth 0.03379, 0.02341) against 0.159 and 0.277 (t = 10, sigma = 1).
    sigma, steps, used = 1.0, 10, 2
    m = PartialEpochMechanism(sigma, steps, used)
    orders = np.arange(2.0, 9.0)
    curve = m.rdp_curve()
    whole = RandomAllocation(steps)(Gaussian(sigma)).rdp_curve()
    assert curve is not None and whole is not None
    ours, theirs = curve(orders), whole(orders)
    for i, n in enumerate(orders.astype(int)):
        removal, addition = _two_step_log_moments(sigma, used / steps, int(n))
        assert removal / (n - 1) * (1 - 1e-9) <= ours[0, i] <= removal / (n - 1) * (1 + 1e-3)
        assert addition / (n - 1) * (1 - 1e-9) <= ours[1, i] <= addition / (n - 1) * (1 + 1e-3)
    assert np.all(ours <= theirs)
    assert ours[0, 0] < 0.5 * theirs[0, 0] and ours[1, 0] < 0.5 * theirs[1, 0]
