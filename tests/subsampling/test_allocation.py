"""Random allocation (balls-in-bins) of a Gaussian: against independent computations of its pair.

Independent sources: E_Q[R^n] by exact enumeration of the multinomial expansion over
compositions of n (mpmath, written without the library's binary powering), and by
Gauss-Hermite quadrature of the t-dimensional integral (t = 2); the addition direction's
E_Q[R^{1-n}] by quadrature (t = 2) and Monte Carlo with a stated error (t = 100); the
hockey-stick divergences of the t-dimensional pair by seeded Monte Carlo, four standard
errors allowed; t = 1 is the Gaussian (closed form); Poisson subsampling at q = 1/t.
"""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
from scipy import integrate, special, stats

from autoacct import Composition, Gaussian, Laplace, PoissonSubsample, RandomAllocation, dpsgd
from autoacct.dpsgd import dpsgd_lower_run
from autoacct.subsampling import RandomAllocatedMechanism
from autoacct.subsampling.allocation_moments import (
    add_log_moments_excess,
    add_log_moments_taylor,
    lower_tail_log_bound,
    remove_log_moments,
)
from autoacct.subsampling.partial_epoch import PartialEpochMechanism
from autoacct.subsampling.schemes import epoch_steps
from autoacct.zoo import ComposedMechanism, Group


def _epoch(t: int, sigma: float) -> RandomAllocatedMechanism:
    m = RandomAllocation(t)(Gaussian(sigma))
    assert isinstance(m, RandomAllocatedMechanism)
    return m


def _log_moment_enumerated(t: int, sigma: float, n: int) -> float:
    """log E_Q[R^n] = log(t^-n e^{-n/(2 s^2)} sum over (k_1..k_t), sum k = n, of the multinomial
    n! / prod k_j! times prod_j E[X^{k_j}], E[X^k] = e^{k^2 / (2 s^2)}), in mpmath."""
    with mpmath.workdps(40):
        s2 = mpmath.mpf(sigma) ** 2
        total = mpmath.mpf(0)
        for ks in itertools.product(range(n + 1), repeat=t):
            if sum(ks) != n:
                continue
            coef = mpmath.factorial(n) / mpmath.fprod(mpmath.factorial(k) for k in ks)
            total += coef * mpmath.exp(sum(k * k for k in ks) / (2 * s2))
        return float(mpmath.log(total) - n * mpmath.log(t) - n / (2 * s2))


def _hermite_expectation(f, t: int, sigma: float, nodes: int) -> float:
    """E[f(y)] for y ~ N(0, sigma^2 I_t), t = 2, by a product Gauss-Hermite rule."""
    x, w = special.roots_hermite(nodes)
    y1, y2 = np.meshgrid(x * math.sqrt(2.0) * sigma, x * math.sqrt(2.0) * sigma, indexing="ij")
    ww = np.outer(w, w) / math.pi
    return float(np.sum(ww * f(np.stack([y1, y2], axis=-1))))


def _ratio(y: np.ndarray, sigma: float) -> np.ndarray:
    """R(y) = dP/dQ = (1/t) sum_j exp((2 y_j - 1) / (2 sigma^2))."""
    return np.mean(np.exp((2.0 * y - 1.0) / (2.0 * sigma * sigma)), axis=-1)


# ----- the Renyi DP of the removal direction (exact at integer orders) ------------------------

@pytest.mark.parametrize("t,sigma", [(2, 1.0), (3, 0.8), (5, 2.0), (3, 10.0)])
def test_removal_log_moments_equal_the_enumerated_expansion(t: int, sigma: float) -> None:
    ours = remove_log_moments(t, sigma, 64)
    for n in range(2, 9):
        truth = _log_moment_enumerated(t, sigma, n)
        assert truth <= ours[n] <= truth + 1e-10 * max(1.0, abs(truth))


def test_removal_log_moments_equal_quadrature_of_the_pair() -> None:
    sigma = 1.2
    ours = remove_log_moments(2, sigma, 64)
    for n in (2, 3, 4):
        quad = _hermite_expectation(lambda y, n=n: _ratio(y, sigma) ** n, 2, sigma, 120)
        assert ours[n] == pytest.approx(math.log(quad), rel=1e-9, abs=1e-12)


def test_one_step_is_the_gaussian_exactly() -> None:
    for sigma in (0.5, 1.3, 7.0):
        m, g = RandomAllocation(1)(Gaussian(sigma)), Gaussian(sigma)
        for d in (1e-3, 1e-6):
            assert m.epsilon(d) == g.epsilon(d)
            assert m.epsilon_bounds(d) == g.epsilon_bounds(d)
        # The formulas themselves at t = 1: both directions are the Gaussian's n (n - 1) / (2 s^2).
        n = np.arange(65.0)
        gauss = n * (n - 1.0) / (2.0 * sigma * sigma)
        np.testing.assert_allclose(remove_log_moments(1, sigma, 64), gauss, rtol=1e-12, atol=1e-13)
        for bound in (add_log_moments_taylor, add_log_moments_excess):
            assert np.all(bound(1, sigma, 64)[2:] >= gauss[2:] * (1.0 - 1e-12))


def test_orders_at_and_beyond_the_ends() -> None:
    m = _epoch(50, 1.0)
    kl, low, top = (float(m.rdp(a)) for a in (1.0, 1.0001, 1e4))
    assert 0.0 < kl <= float(m.rdp(2.0)) and 0.0 < low <= float(m.rdp(2.0))  # order 1: from just above
    assert top <= 1e4 / 2.0 * (1 + 1e-12)  # at most the Gaussian's alpha / (2 sigma^2)
    assert float(m.rdp(math.inf)) == math.inf
    curve = m.rdp_curve()(np.array([0.5, 1.0, 3.0]))
    assert np.all(np.isinf(curve[:, :2])) and np.all(np.isfinite(curve[:, 2]))


@pytest.mark.parametrize("t,sigma", [(3, 1e-3), (10**5, 1.0)])
def test_extreme_parameters_answer_without_error(t: int, sigma: float) -> None:
    m = _epoch(t, sigma)
    lo, up = (float(x) for x in m.epsilon_bounds(1e-6))
    assert 0.0 <= lo <= up < math.inf
    # Order 2 of the removal direction: log(1 + (e^{1/sigma^2} - 1) / t) exactly; the rounding
    # allowance is that of order 2's own terms, not of the table's largest order.
    if sigma > 0.1:
        truth = math.log1p(math.expm1(1.0 / sigma ** 2) / t)
        assert truth <= float(m.rdp_curve()(np.array(2.0))[0]) <= truth * (1 + 1e-6) + 1e-12


# ----- the addition direction (proven upper bounds) ------------------------------------------

@pytest.mark.parametrize("sigma", [0.6, 1.0, 1.5, 3.0])
def test_addition_bound_is_above_quadrature(sigma: float) -> None:
    orders = np.arange(2.0, 11.0)
    curve = _epoch(2, sigma).rdp_curve()(orders)
    for i, n in enumerate(orders):
        quad = _hermite_expectation(lambda y, n=n: _ratio(y, sigma) ** (1 - n), 2, sigma, 200)
        truth = math.log(quad) / (n - 1)
        assert truth <= curve[1, i] <= truth * 1.6


@pytest.mark.parametrize("t,sigma", [(30, 0.8), (300, 1.0)])
def test_addition_bound_and_lower_tail_against_monte_carlo(t: int, sigma: float) -> None:
    # 40k draws of R under Q (seeded); every estimate allowed 4 standard errors.
    rng = np.random.default_rng(t)
    r = _ratio(rng.normal(0.0, sigma, size=(40_000, t)), sigma)
    orders = np.arange(2.0, 9.0)
    curve = _epoch(t, sigma).rdp_curve()(orders)
    for i, n in enumerate(orders):
        v = r ** (1 - n)
        low = float(v.mean() - 4 * v.std() / math.sqrt(v.size))
        assert math.log(low) / (n - 1) <= curve[1, i]
    s = np.array([0.02, 0.05, 0.1, 0.2, 0.4])
    bound = np.exp(lower_tail_log_bound(t, sigma, s))
    for x, b in zip(np.exp(-s), bound):
        hit = r < x
        assert hit.mean() - 4 * math.sqrt(hit.mean() * (1 - hit.mean()) / hit.size) <= b


def test_addition_bound_against_monte_carlo_at_many_steps() -> None:
    # E_Q[1/R] at t = 100, sigma = 1 by Monte Carlo (100k draws, seeded; standard error 4e-4
    # against a mean of 1.017); 4 standard errors.
    t, sigma = 100, 1.0
    rng = np.random.default_rng(19)
    inv = 1.0 / _ratio(rng.normal(0.0, sigma, size=(100_000, t)), sigma)
    est, se = float(inv.mean()), float(inv.std() / math.sqrt(inv.size))
    ours = float(_epoch(t, sigma).rdp_curve()(np.array(2.0))[1])
    assert math.log(est - 4 * se) <= ours
    # Within 10% of the truth (the geometric-mean bound alone gives 0.505, thirty times it).
    assert ours <= 1.1 * math.log(est + 4 * se)


# ----- soundness of the (epsilon, delta) answers against Monte Carlo -------------------------

def _mc_delta(t: int, sigma: float, epochs: int, eps: float, n: int = 200_000) -> tuple[float, float]:
    """(estimate, standard error) of max(E_Q[(R - e^eps)_+], E_Q[(1 - e^eps R)_+]) for the
    product of ``epochs`` independent epochs' ratios."""
    rng = np.random.default_rng(2025 + t + epochs)
    r = np.ones(n)
    for _ in range(epochs):
        r = r * _ratio(rng.normal(0.0, sigma, size=(n, t)), sigma)
    out = []
    for v in (np.maximum(r - math.exp(eps), 0.0), np.maximum(1.0 - math.exp(eps) * r, 0.0)):
        out.append((float(v.mean()), float(v.std() / math.sqrt(n))))
    return max(out)


@pytest.mark.parametrize("t,sigma,epochs", [(4, 1.0, 1), (8, 0.8, 2), (20, 1.5, 3)])
def test_delta_is_above_monte_carlo_and_lower_end_below(t: int, sigma: float, epochs: int) -> None:
    m = Composition()([_epoch(t, sigma)], [epochs])
    lower_run = dpsgd_lower_run(1.0 / t, sigma, t * epochs, sampling="balls-in-bins")
    for eps in (0.25, 1.0):
        est, se = _mc_delta(t, sigma, epochs, eps)
        upper = float(m.delta(eps))
        assert est - 4 * se <= upper
        lo = float((lower_run or m).delta_bounds(eps)[0])
        assert lo <= est + 4 * se


def test_epsilon_at_delta_is_above_monte_carlo() -> None:
    t, sigma, epochs = 10, 1.0, 2
    m = Composition()([_epoch(t, sigma)], [epochs])
    lo, up = m.epsilon_bounds(1e-2)
    est, se = _mc_delta(t, sigma, epochs, float(up))
    assert est - 4 * se <= 1e-2  # the truth's delta at the upper epsilon is at most 1e-2
    est, se = _mc_delta(t, sigma, epochs, float(lo))
    assert est + 4 * se >= 1e-2  # and at the lower end at least 1e-2


# ----- against Poisson subsampling at q = 1/t -------------------------------------------------

@pytest.mark.parametrize("t,sigma", [(100, 1.0), (1000, 2.0), (10, 0.7)])
def test_removal_rdp_is_below_poisson_at_rate_one_over_t(t: int, sigma: float) -> None:
    # One epoch against t Poisson steps at q = 1/t: the record is used exactly once, never
    # twice, so the removal direction's moments are smaller (here at orders 2..32).
    orders = np.arange(2.0, 33.0)
    alloc = _epoch(t, sigma).rdp_curve()(orders)[0]
    poisson = t * np.asarray(PoissonSubsample(1.0 / t)(Gaussian(sigma)).rdp(orders))
    assert np.all(alloc <= poisson)


@pytest.mark.parametrize("sigma", [1.0, 2.0])
def test_dpsgd_certified_epsilon_against_poisson(sigma: float) -> None:
    # t = 100, 10 epochs, delta 1e-5. Poisson at q = 0.01: PLD [1.8275, 1.8289] (sigma 1),
    # [0.6219, 0.6222] (sigma 2); its RDP answers 2.1013, 0.6860. Balls-in-bins is certified by
    # its PLD (allocation_pld): [1.7011, 1.7018] at sigma 1, below Poisson's, and far below both
    # RDP answers; the summed outputs (the Gaussian with noise multiplier 10 sigma composed 10
    # times) stay a lower end below it.
    run = dpsgd(0.01, sigma, 1000, sampling="balls-in-bins")
    lower, upper = (float(v) for v in run.epsilon_bounds(1e-5))
    assert dpsgd_lower_run(0.01, sigma, 1000, sampling="balls-in-bins") is None  # its own lower ends
    summed = float(Composition()([_epoch(100, sigma).summed_step()], [10]).epsilon_bounds(1e-5)[0])
    poisson = dpsgd(0.01, sigma, 1000)
    assert summed < lower <= upper <= float(poisson.epsilon(1e-5, via="rdp"))
    assert upper - lower <= 1e-3 * upper
    assert upper <= 1.001 * float(poisson.epsilon_bounds(1e-5)[1])
    mu = math.sqrt(10) / (10.0 * sigma)
    assert summed == pytest.approx(Gaussian(1.0 / mu).epsilon(1e-5), rel=1e-3)


# ----- DP-SGD wiring ---------------------------------------------------------------------------

def test_dpsgd_balls_in_bins_composes_epochs() -> None:
    assert epoch_steps(0.01) == 100
    assert epoch_steps(256 / 60000) == math.ceil(60000 / 256)
    assert epoch_steps(1 / 3) == 3
    run = dpsgd(0.01, 1.5, 1001, sampling="balls-in-bins")  # 1001 steps: 10 epochs and one step
    assert isinstance(run, ComposedMechanism) and run.counts == (10, 1)
    epoch, step = run.children
    assert isinstance(epoch, RandomAllocatedMechanism) and epoch.steps == 100 and epoch.sigma == 1.5
    # The first step of an epoch takes each record with probability 1/t, independently: a
    # Poisson-subsampled step, its rate 1/t rounded up for the upper ends, down for the lower.
    assert isinstance(step, PartialEpochMechanism) and (step.steps, step.used, step.sigma) == (100, 1, 1.5)
    lo, up = step.epsilon_bounds(1e-5)
    plo, pup = PoissonSubsample(0.01)(Gaussian(1.5)).epsilon_bounds(1e-5)
    assert lo <= up and abs(lo - plo) <= 1e-12 * plo and abs(up - pup) <= 1e-12 * pup
    run = dpsgd(0.01, 1.5, 1050, sampling="balls-in-bins")
    assert run.counts == (10, 1) and isinstance(run.children[1], PartialEpochMechanism)
    assert (run.children[1].steps, run.children[1].used) == (100, 50)
    by_epochs = dpsgd(noise_multiplier=1.5, dataset_size=60000, batch_size=256, epochs=3,
                      sampling="balls-in-bins")
    assert isinstance(by_epochs, ComposedMechanism) and by_epochs.counts == (3,)
    epoch = by_epochs.children[0]
    assert isinstance(epoch, RandomAllocatedMechanism) and epoch.steps == 235 and epoch.sigma == 1.5


@pytest.mark.parametrize("steps, reference", [
    # One step of an epoch of 100 is exactly the Poisson-subsampled Gaussian at q = 1/100.
    (1, lambda: PoissonSubsample(0.01)(Gaussian(1.0))),
    # 101 steps: an epoch, then the first step of the next, independent of it.
    (101, lambda: Composition()([RandomAllocation(100)(Gaussian(1.0)), PoissonSubsample(0.01)(Gaussian(1.0))],
                                [1, 1])),
])
def test_a_partial_last_epoch_gives_no_whole_epoch_lower_end(steps: int, reference) -> None:
    # A partial epoch was counted whole, its lower ends too: the lower end of eps(1e-5) was
    # 0.62069 at one step (truth 0.19945) and 0.80382 at 101 (truth at most 0.62450).
    lo, up = dpsgd(0.01, 1.0, steps, sampling="balls-in-bins").epsilon_bounds(1e-5)
    r_lo, r_up = reference().epsilon_bounds(1e-5)
    assert lo <= r_up and r_lo <= up
    assert up - lo <= 1e-3 * up


def test_a_partial_epoch_is_bracketed_by_its_subsampled_epoch() -> None:
    # 50 of 100 steps: dominated by the whole epoch and, more tightly, by Poisson(1/2) subsampling
    # of the 50-step epoch (upper end: 0.5349, the whole epoch's 0.6209), which dominates the sum
    # of its 50 outputs, PoissonSubsample(1/2)(Gaussian(sqrt(50))) (the lower end before, 0.2632);
    # the lower end is now the 50-step epoch's lower laws subsampled, within tol of the upper.
    part = PartialEpochMechanism(1.0, 100, 50)
    lo, up = part.epsilon_bounds(1e-5)
    whole = RandomAllocation(100)(Gaussian(1.0)).epsilon_bounds(1e-5)
    summed = PoissonSubsample(0.5)(Gaussian(math.sqrt(50.0))).epsilon_bounds(1e-5)
    assert up < 0.9 * whole[1]
    assert summed[1] < lo <= up <= lo * (1 + 1e-3)
    # Without PLD laws (a small noise multiplier) the lower run sums the partial epoch's outputs too.
    below = dpsgd_lower_run(0.01, 0.3, 250, sampling="balls-in-bins")
    assert isinstance(below, ComposedMechanism) and below.counts == (2, 1)
    with pytest.raises(ValueError, match="used"):
        PartialEpochMechanism(1.0, 100, 100)


# ----- bad input -------------------------------------------------------------------------------

def test_a_group_privacy_base_is_refused() -> None:
    # Accepted, RandomAllocation(2)(Group(2)(Gaussian(2))) gave eps(1e-5) a lower end of 3.70,
    # where one record's truth is at most 1.46 (its two records are allocated one by one).
    with pytest.raises(ValueError, match="mechanism .* protects groups"):
        RandomAllocation(2)(Group(2)(Gaussian(2.0)))


def test_bad_input_names_the_parameter() -> None:
    # (10^40 steps ran on past 30 s: at most 2^52, the bound on integer parameters)
    for bad in (0, -3, 2.5, 2**52 + 1, 10**40):
        with pytest.raises(ValueError, match="steps"):
            RandomAllocation(bad)
    assert RandomAllocation(2**52).steps == 2**52
    with pytest.raises(TypeError, match="steps"):
        RandomAllocation("10")  # type: ignore[arg-type]
    for base in (Laplace(1.0), PoissonSubsample(0.1)(Gaussian(1.0))):
        with pytest.raises(ValueError, match="base"):
            RandomAllocation(10)(base)
    with pytest.raises(ValueError, match="examples_per_user"):
        dpsgd(0.01, 1.0, 100, sampling="balls-in-bins", examples_per_user=2)
    with pytest.raises(ValueError, match="sampling"):
        dpsgd(0.01, 1.0, 100, sampling="bins")


@pytest.mark.parametrize("steps, sigma, epochs", [(100, 1.0, 10), (20, 0.7, 3)])
def test_composed_epochs_lower_end_is_at_least_their_summed_outputs_composed(steps, sigma, epochs):
    """Epochs composed: the lower end is at least that of the epochs' summed outputs composed,
    the Gaussian with mu = sqrt(epochs) / (sigma sqrt(steps)) (post-processing of the run), and
    above one epoch's; equal to it where the epoch has no PLD (sigma 0.7: its lattice would be
    too long); the analytic Gaussian eps at that mu (Balle and Wang 2018) in closed form."""
    from closed_forms import gaussian_eps_closed

    run = Composition()([RandomAllocation(steps)(Gaussian(sigma))], [epochs])
    lower, upper = run.epsilon_bounds(1e-5)
    mu = math.sqrt(epochs) / (sigma * math.sqrt(steps))
    summed = gaussian_eps_closed(mu, 1e-5)
    assert lower >= summed * (1 - 1e-6) and lower <= upper
    if "pld" not in run.routes:
        assert lower == pytest.approx(summed, rel=1e-6)
    assert lower > RandomAllocation(steps)(Gaussian(sigma)).epsilon_bounds(1e-5)[0]


# ----- the base Gaussian dominates an epoch ----------------------------------------------------

def _two_step_delta(sigma: float, eps: float) -> float:
    """delta(eps) of the t = 2 epoch's pair, both directions, by quadrature.

    In u = (y_1 + y_2)/sqrt 2, v = (y_1 - y_2)/sqrt 2 the pair is P = N(m, s^2) x (N(m, s^2) +
    N(-m, s^2))/2 against Q = N(0, s^2 I_2), m = 1/sqrt 2, and R = dP/dQ = e^{(u m - m^2)/s^2}
    cosh(v m / s^2) increases in u: {R > g} is {u > c(v)}, whose inner integral is a closed form
    in Phi; the outer one in v is scipy's adaptive quadrature."""
    m, s2, g = 1.0 / math.sqrt(2.0), sigma * sigma, math.exp(eps)

    def a(v: float) -> float:
        return 0.5 * (stats.norm.pdf(v, m, sigma) + stats.norm.pdf(v, -m, sigma))

    def b(v: float) -> float:
        return float(stats.norm.pdf(v, 0.0, sigma))

    def log_cosh(x: float) -> float:
        x = abs(x)
        return x + math.log1p(math.exp(-2.0 * x)) - math.log(2.0)

    def forward(v: float) -> float:   # int (p - g q)_+ du at v
        c = s2 / m * (math.log(g) - log_cosh(v * m / s2)) + m
        return a(v) * special.ndtr((m - c) / sigma) - g * b(v) * special.ndtr(-c / sigma)

    def backward(v: float) -> float:  # int (q - g p)_+ du at v
        c = s2 / m * (-math.log(g) - log_cosh(v * m / s2)) + m
        return b(v) * special.ndtr(c / sigma) - g * a(v) * special.ndtr((c - m) / sigma)

    lim = 12.0 * sigma + 2.0
    return max(integrate.quad(f, -lim, lim, limit=400, epsabs=1e-14, epsrel=1e-11, points=[-m, 0.0, m])[0]
               for f in (forward, backward))


def _mp_gaussian_delta(sigma: float, eps: float) -> float:
    """delta(eps) of Gaussian(sigma), mu = 1/sigma, in mpmath with digits to spare for the
    cancellation of its two terms (they agree to about log10(sigma) digits)."""
    with mpmath.workdps(40 + 2 * max(0, math.ceil(math.log10(sigma)))):
        mu, e = 1 / mpmath.mpf(sigma), mpmath.mpf(eps)
        return float(mpmath.ncdf(-e / mu + mu / 2) - mpmath.exp(e) * mpmath.ncdf(-e / mu - mu / 2))


def _mp_gaussian_epsilon(sigma: float, delta: float) -> float:
    """eps(delta) of Gaussian(sigma) by bisection on the mpmath profile (0 where delta(0) <= delta)."""
    if _mp_gaussian_delta(sigma, 0.0) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0 / sigma ** 2 + 20.0 / sigma
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _mp_gaussian_delta(sigma, mid) > delta else (lo, mid)
    return hi


@pytest.mark.parametrize("sigma", [0.2, 0.5, 1.0, 3.0])
def test_two_step_epoch_is_bracketed_and_dominated_by_its_base(sigma: float) -> None:
    # Joint convexity of the hockey-stick divergence (RandomAllocatedMechanism.dominating): the
    # epoch's pair, (N(e_1) + N(e_2))/2 against N(0), is at most the Gaussian at every eps. The
    # auto bounds took only the RDP route below sigma ~ 0.9: at sigma = 0.5 eps(1e-5) <= 10.109
    # where the base's is 9.997, and delta's lower end was 0 where eps's used the summed outputs
    # (sigma = 0.2, eps = 0: lower 0, truth 0.9826).
    m = _epoch(2, sigma)
    eps = np.array([0.0, 0.5, 2.0, 5.0])
    truth = np.array([_two_step_delta(sigma, float(e)) for e in eps])
    base = np.array([_mp_gaussian_delta(sigma, float(e)) for e in eps])
    summed = np.array([_mp_gaussian_delta(sigma * math.sqrt(2.0), float(e)) for e in eps])
    assert np.all(truth <= base * (1 + 1e-9))              # the domination claim itself
    lo, up = (np.asarray(v) for v in m.delta_bounds(eps))
    assert np.all(lo <= truth) and np.all(truth <= up)
    assert np.all(up <= base * (1 + 1e-9) + 1e-300)
    assert np.all(lo >= summed * (1 - 1e-9))                # the summed outputs' lower end
    e_lo, e_up = m.epsilon_bounds(1e-5)
    assert e_lo <= e_up <= _mp_gaussian_epsilon(sigma, 1e-5) * (1 + 1e-9)
    # Tradeoff: at least the base's curve Phi(Phi^-1(1 - a) - 1/sigma), also a lower bound here.
    fpr = np.array([1e-6, 1e-3, 0.1, 0.5])
    assert np.all(np.asarray(m.tradeoff(fpr)) >= special.ndtr(special.ndtri(1 - fpr) - 1 / sigma) - 1e-12)


@pytest.mark.parametrize("sigma", [3e4, 1e10, 1e100, 1e160, 1e300, 1.7e308])
def test_an_epoch_of_a_huge_noise_multiplier_is_answered_by_its_base(sigma: float) -> None:
    # RandomAllocation(3)(Gaussian(1e160)).epsilon_bounds(1e-5) raised OverflowError
    # ((n - 1) / sigma ** 2 in _add_k), and from sigma = 1e10 on the RDP route's answer was stuck
    # near 1.3e-4 (its largest order), where the base's tends to 0: at sigma = 3e4 it was 1.358e-4
    # against the base's 7.2e-6.
    m = _epoch(3, sigma)
    lo, up = m.epsilon_bounds(1e-5)
    # (within the exact route's own bracket, 2e-8 relative at sigma = 3e4)
    assert 0.0 <= lo <= up <= _mp_gaussian_epsilon(sigma, 1e-5) * (1 + 1e-6)
    d_lo, d_up = (float(v) for v in m.delta_bounds(0.0))
    # The truth lies between the summed outputs' delta(0) and the base's (domination).
    assert d_lo <= _mp_gaussian_delta(sigma, 0.0) * (1 + 1e-9) + 1e-300
    assert _mp_gaussian_delta(min(sigma * math.sqrt(3.0), 1.7976931348623157e308), 0.0) * (1 - 1e-9) <= d_up
    assert d_up <= _mp_gaussian_delta(sigma, 0.0) * (1 + 1e-6) + 1e-300
    assert np.all(np.isfinite(m.rdp([2.0, 100.0])))
