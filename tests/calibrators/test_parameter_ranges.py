"""Robustness sweep over the parameter ranges: calibrators, the ``autoacct`` command and plotting.

Every calibrated value is re-checked independently: through the mechanism API
(a fresh mechanism's certified epsilon) and, for Gaussian families, against the
closed form of Balle and Wang (2018) in tests/closed_forms.py. Extends
tests/calibrators/test_calibrators.py, tests/test_cli.py and tests/test_plotting.py.
"""

from __future__ import annotations

import importlib
import json
import math
import subprocess
import sys
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from closed_forms import gaussian_delta_closed, gaussian_eps_closed, rr_eps_closed  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from warning_policy import strict_warnings  # noqa: E402

from autoacct import AccuracyWarning  # noqa: E402
from autoacct.calibrators import (  # noqa: E402
    DEFAULT_RTOL,
    InfeasibleBudgetError,
    ParameterCalibrator,
    calibrate,
    calibrate_dpsgd,
    calibrate_dpsgd_result,
    calibrate_dpsgd_steps,
    calibrate_gaussian,
    calibrate_result,
)
from autoacct.cli import main  # noqa: E402
from autoacct.dpsgd import dpsgd  # noqa: E402
from autoacct.plotting import plot_privacy_profile, plot_rdp, plot_tradeoff  # noqa: E402
from autoacct.zoo import ApproxDP, Composition, Gaussian, Laplace, PureDP, RandomizedResponse  # noqa: E402

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

log_eps = st.floats(min_value=math.log(1e-3), max_value=math.log(1000.0))
log_delta = st.floats(min_value=math.log(1e-15), max_value=math.log(0.5))
counts = st.integers(min_value=1, max_value=10**7)


def gaussians(k: int):
    return lambda s: Composition()([Gaussian(s)], [k]) if k > 1 else Gaussian(s)


# ----- analytic Gaussian -------------------------------------------------------------------------

@SETTINGS
@given(le=log_eps, ld=log_delta, k=counts)
def test_calibrate_gaussian_sweep(le, ld, k):
    eps, delta = math.exp(le), math.exp(ld)
    with strict_warnings():
        sigma = calibrate_gaussian(eps, delta, k)
        looser = calibrate_gaussian(2.0 * eps, delta, k)
        certified = gaussians(k)(sigma).epsilon(delta)
    mu = math.sqrt(k) / sigma
    assert math.isfinite(sigma) and sigma > 0
    # meets the budget by the closed form and by the library's certified epsilon
    assert gaussian_delta_closed(mu, eps) <= delta * (1 + 1e-9)
    assert certified <= eps
    # optimal within the documented gap: sigma is at most DEFAULT_RTOL above the closed-form
    # root (it is raised only to absorb the library's margin), so less noise than
    # sigma / (1 + DEFAULT_RTOL) violates the budget by the closed form
    assert gaussian_delta_closed(math.sqrt(k) / (sigma / (1 + DEFAULT_RTOL) * (1 - 1e-9)), eps) > delta
    # monotone: a larger epsilon needs less noise
    assert looser < sigma


@pytest.mark.parametrize("eps,delta", [(1e-3, 0.9), (1.0, 0.9), (1000.0, 0.999999)])
def test_calibrate_gaussian_delta_near_one(eps, delta):
    with strict_warnings():
        sigma = calibrate_gaussian(eps, delta, 10)
    assert gaussian_delta_closed(math.sqrt(10) / sigma, eps) <= delta * (1 + 1e-9)
    assert gaussians(10)(sigma).epsilon(delta) <= eps


def test_calibrate_gaussian_warns_when_library_margin_dominates():
    # eps = 1e-3 at delta = 1 - 1e-6: delta(eps) is nearly flat, so the library's relative
    # 1e-9 margin in delta moves its certified epsilon by far more than 0.2%. The closed-form
    # root is returned (it meets the budget exactly) with an AccuracyWarning.
    with pytest.warns(AccuracyWarning, match="closed form"):
        sigma = calibrate_gaussian(1e-3, 0.999999)
    assert gaussian_delta_closed(1.0 / sigma, 1e-3) <= 0.999999 * (1 + 1e-12)
    assert gaussian_delta_closed(1.0 / (sigma * (1 - 1e-9)), 1e-3) > 0.999999 * (1 - 1e-12)


# ----- generic search ----------------------------------------------------------------------------

@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(le=log_eps, ld=log_delta, k=counts)
def test_generic_search_sweep(le, ld, k):
    eps, delta = math.exp(le), math.exp(ld)
    with strict_warnings():
        res = calibrate_result(gaussians(k), eps, delta)
        looser = calibrate(gaussians(k), 2.0 * eps, delta)
        recheck = gaussians(k)(res.value).epsilon(delta)  # a fresh mechanism
    sigma = res.value
    assert math.isfinite(sigma) and not res.increasing
    assert recheck <= eps and res.epsilon <= eps
    assert gaussian_eps_closed(math.sqrt(k) / sigma, delta) <= eps
    assert res.certified and 0 <= res.optimality_gap <= DEFAULT_RTOL * (1 + 1e-9)
    # the reported gap holds: noise below sigma / (1 + gap) violates the budget (closed form)
    less = sigma / (1 + res.optimality_gap) * (1 - 1e-9)
    assert gaussian_delta_closed(math.sqrt(k) / less, eps) > delta
    assert 0.0 <= res.epsilon_lower <= gaussian_eps_closed(math.sqrt(k) / sigma, delta) + 1e-12
    assert looser <= sigma


def test_target_epsilon_1000_laplace_and_pure_dp():
    with strict_warnings():
        b = calibrate(lambda b: Laplace(b), 1000.0, 1e-5)
        e0 = calibrate(lambda e: PureDP(e), 1000.0, 1e-5)
    # Laplace(b) is 1/b-DP, and its delta(eps) = 1 - exp((eps - 1/b) / 2) for eps < 1/b.
    assert Laplace(b).epsilon(1e-5) <= 1000.0
    assert -math.expm1((1000.0 - 1.0 / b) / 2.0) <= 1e-5
    assert 1.0 / b <= 1000.0 * (1 + DEFAULT_RTOL) + 1e-5
    # PureDP(e0): the binomial closed form at k = 1
    assert rr_eps_closed(e0, 1, 1e-5) <= 1000.0
    assert rr_eps_closed(e0 * (1 + 2 * DEFAULT_RTOL), 1, 1e-5) > 1000.0


def test_parameter_calibrator_extreme_budget():
    with strict_warnings():
        mech = ParameterCalibrator(Gaussian, "sigma")(1000.0, 1e-15)
    sigma = mech.params["Gaussian.sigma"]
    assert gaussian_eps_closed(1.0 / sigma, 1e-15) <= 1000.0
    assert gaussian_eps_closed(1.0 / (sigma * (1 - 2 * DEFAULT_RTOL)), 1e-15) > 1000.0


# ----- DP-SGD ------------------------------------------------------------------------------------

@pytest.mark.parametrize("eps,delta,k", [(1000.0, 1e-15, 10**7), (1e-3, 1e-5, 1), (2.0, 0.5, 100)])
def test_dpsgd_full_batch_extremes_match_closed_form(eps, delta, k):
    # q = 1: k composed Gaussians, whose epsilon is the analytic Gaussian's.
    with strict_warnings():
        res = calibrate_dpsgd_result(eps, delta, 1.0, k)
        recheck = dpsgd(1.0, res.value, k).epsilon(delta)
    assert recheck <= eps
    exact = calibrate_gaussian(eps, delta, k)
    assert exact * (1 - 1e-9) <= res.value <= exact * (1 + DEFAULT_RTOL)
    assert gaussian_eps_closed(math.sqrt(k) / res.value, delta) <= eps


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(eps=st.floats(min_value=0.5, max_value=20.0), q=st.floats(min_value=0.05, max_value=0.5),
       k=st.integers(min_value=1, max_value=200))
def test_dpsgd_sweep_meets_budget_and_is_monotone(eps, q, k):
    with strict_warnings():
        res = calibrate_dpsgd_result(eps, 1e-6, q, k)
        recheck = dpsgd(q, res.value, k).epsilon(1e-6)
        looser = calibrate_dpsgd(1.5 * eps, 1e-6, q, k)
        less = dpsgd(q, res.value / (1 + res.optimality_gap) * (1 - 1e-6), k)
        low = max(less.epsilon_bounds(1e-6)[0], less.epsilon_bounds(1e-6, tol=1e-4)[0])
    assert recheck <= eps and res.certified
    assert looser <= res.value
    assert low > eps  # a slightly less private run provably misses the budget


def test_dpsgd_no_noise_needed_is_reported():
    # 1 - (1 - q)^k <= delta: delta(0) <= delta for any noise, nothing to calibrate.
    with pytest.raises(ValueError, match="no noise is needed"):
        calibrate_dpsgd(1e-3, 1e-5, 1e-6, 1)


def test_dpsgd_steps_extremes():
    with strict_warnings():
        # q = 1, sigma = 100: largest k with sqrt(k)/100 <= mu(1000, 1e-5), around 1.7e7
        k = calibrate_dpsgd_steps(1000.0, 1e-5, 1.0, 100.0)
    bound = (100.0 * 1.0 / calibrate_gaussian(1000.0, 1e-5)) ** 2
    assert k == math.floor(bound) or k == math.floor(bound) - 1
    assert gaussian_eps_closed(math.sqrt(k) / 100.0, 1e-5) <= 1000.0
    assert gaussian_eps_closed(math.sqrt(k + 2) / 100.0, 1e-5) > 1000.0


# ----- infeasible budgets ------------------------------------------------------------------------

def test_infeasible_too_many_steps_for_noise_range():
    with pytest.raises(InfeasibleBudgetError, match="not reachable") as info:
        calibrate(gaussians(10**7), 1e-3, 1e-5, bounds=(0.1, 1000.0), name="sigma")
    truth = gaussian_eps_closed(math.sqrt(10**7) / 1000.0, 1e-5)
    assert truth <= info.value.achievable <= truth * (1 + 1e-6)
    assert f"{info.value.achievable:.6g}" in str(info.value) and "sigma <= 1000" in str(info.value)


def test_infeasible_below_a_pure_dp_part():
    # eps can never fall below the PureDP(0.5) part's epsilon(1e-5) = 0.49998...
    with strict_warnings(), pytest.raises(InfeasibleBudgetError, match="not reachable") as info:
        calibrate(lambda s: Composition()([Gaussian(s), PureDP(0.5)], [1, 1]), 0.1, 1e-5,
                  bounds=(0.1, 1e4))
    assert info.value.achievable >= rr_eps_closed(0.5, 1, 1e-5)


def test_infeasible_delta_below_approx_dp_floor():
    with pytest.raises(InfeasibleBudgetError, match="not reachable") as info:
        calibrate(lambda e: ApproxDP(e, 1e-3), 1.0, 1e-5, name="eps0")
    msg = str(info.value)
    assert "infinite" in msg and "smallest delta reachable" in msg and "0.001" in msg
    assert info.value.achievable == math.inf


def test_integer_optimum_behind_approx_dp_floor_is_certified():
    # 1 - (1 - 1e-6)^k <= 1e-5 exactly for k <= 10: k = 10 is the optimum.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        res = calibrate_result(lambda k: Composition()([ApproxDP(0.1, 1e-6)], [k]), 5.0, 1e-5,
                               integer=True)
    assert res.value == 10
    assert res.certified


def test_lower_bound_of_huge_sigma_gaussian_with_pure_dp():
    m = Composition()([Gaussian(6.05125e13), PureDP(0.5)], [1, 1])
    lo, up = m.epsilon_bounds(1e-5)
    # mu = 1.7e-14: the true epsilon exceeds PureDP(0.5)'s by less than 1e-9
    assert lo <= rr_eps_closed(0.5, 1, 1e-5) + 1e-9 and lo <= up


# ----- bad input names the parameter -------------------------------------------------------------

def _g(s):
    return Gaussian(s)


BAD_CALLS = [
    (lambda: calibrate(_g, math.nan, 1e-5), "epsilon"),
    (lambda: calibrate(_g, math.inf, 1e-5), "epsilon"),
    (lambda: calibrate(_g, 1.0, 1.5), "delta"),
    (lambda: calibrate(_g, 1.0, 1e-5, rtol=0.0), "rtol"),
    (lambda: calibrate(_g, 1.0, 1e-5, tol=1.0), "tol"),
    (lambda: calibrate(_g, 1.0, 1e-5, bounds=(5.0, 1.0)), "bounds"),
    (lambda: calibrate(_g, 1.0, 1e-5, bounds=(-1.0, 1.0)), "bounds[0]"),
    (lambda: calibrate(_g, 1.0, 1e-5, x0=-1.0), "x0"),
    (lambda: calibrate(_g, 1.0, 1e-5, x0=50.0, bounds=(1.0, 10.0)), "x0"),
    (lambda: calibrate(_g, 1.0, 1e-5, via="bogus"), "via"),
    (lambda: calibrate(_g, 1.0, 1e-5, max_evaluations=0), "max_evaluations"),
    (lambda: calibrate_gaussian(1.0, 1e-5, count=0), "count"),
    (lambda: calibrate_gaussian(1.0, 1e-5, count=2.5), "count"),
    (lambda: calibrate_gaussian(-1.0, 1e-5), "epsilon"),
    (lambda: calibrate_gaussian(1.0, 1.0), "delta"),
    (lambda: calibrate_dpsgd(1.0, 1e-5, 1.5, 10), "sample_rate"),
    (lambda: calibrate_dpsgd(1.0, 1e-5, 0.1, 0), "steps"),
    (lambda: calibrate_dpsgd(1.0, 1e-5, 0.1, 10, sampling="shuffle"), "sampling"),
    (lambda: calibrate_dpsgd(1.0, 1e-5, dataset_size=10, batch_size=20, epochs=1), "batch_size"),
    (lambda: calibrate_dpsgd_steps(1.0, 1e-5, 0.1, -1.0), "noise_multiplier"),
    (lambda: calibrate_dpsgd_steps(1.0, 1e-5, 0.1, None), "noise_multiplier"),
    (lambda: calibrate_dpsgd_steps(1.0, 1e-5, 0.1, 1.0, max_steps=0), "max_steps"),
    (lambda: ParameterCalibrator(Gaussian, "sigma", {"sigma": 1.0}), "sigma"),
]


@pytest.mark.parametrize("call,name", BAD_CALLS)
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    assert name in str(info.value)


# ----- the command line --------------------------------------------------------------------------

def run_main(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


def strict_json(text: str) -> dict:
    def reject(token: str):
        raise AssertionError(f"non-finite JSON number {token}")

    return json.loads(text, parse_constant=reject)


RUN = ["--sample-rate", "0.1", "--steps", "10"]
CLI_BAD = [  # (argv, the parameter the message must name)
    (["calibrate", "--epsilon", "nan", *RUN], "--epsilon"),
    (["calibrate", "--epsilon", "inf", *RUN], "--epsilon"),
    (["calibrate", "--epsilon", "-3", *RUN], "--epsilon"),
    (["epsilon", "--noise-multiplier", "nan", *RUN], "--noise-multiplier"),
    (["epsilon", "--noise-multiplier", "1", "--sample-rate", "nan", "--steps", "10"],
     "--sample-rate"),
    (["epsilon", "--noise-multiplier", "1", *RUN, "--delta", "nan"], "--delta"),
    (["epsilon", "--noise-multiplier", "1", *RUN, "--delta", "1e-400"], "--delta"),
    (["epsilon", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "2.5"], "--steps"),
    (["epsilon", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "1e400"], "--steps"),
    (["epsilon", "--noise-multiplier", "1", *RUN, "--tol", "1"], "--tol"),
    (["epsilon", "--noise-multiplier", "1", *RUN, "--tol", "nan"], "--tol"),
    (["epsilon", "--noise-multiplier", "1", "--dataset-size", "10", "--batch-size", "5",
      "--epochs", "0"], "--epochs"),
    (["plot", "--noise-multiplier", "1", *RUN, "--output", "/nonexistent-dir/x.png"], "--output"),
    (["calibrate", "--epsilon", "1", "--sample-rate", "1e-6", "--steps", "10"], "noise"),
    (["epsilon", "--noise-multiplier", "1", *RUN, "--bogus"], "--bogus"),
]


@pytest.mark.parametrize("argv,name", CLI_BAD)
def test_cli_bad_input_one_line_naming_parameter(argv, name, capsys):
    code, out, err = run_main(argv, capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "error" in lines[0] and name in lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize("failure", [OverflowError("int too large"), RuntimeWarning("overflow")])
def test_cli_numerical_failure_is_one_line_exit_1(failure, capsys, monkeypatch):
    def broken(**kwargs):
        if isinstance(failure, Warning):
            warnings.warn(str(failure), RuntimeWarning, stacklevel=2)
            return dpsgd(**kwargs)
        raise failure

    monkeypatch.setattr(importlib.import_module("autoacct.dpsgd"), "dpsgd", broken)
    code, out, err = run_main(["epsilon", "--noise-multiplier", "1", *RUN], capsys)
    assert code == 1 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "numerical failure" in lines[0]


def test_cli_calibrate_target_1000_json(capsys):
    argv = ["calibrate", "--epsilon", "1000", "--delta", "1e-15", "--sample-rate", "1",
            "--steps", "10000000", "--json"]
    code, out, err = run_main(argv, capsys)
    assert code == 0, err
    data = strict_json(out)
    sigma = data["noise_multiplier"]
    assert gaussian_eps_closed(math.sqrt(10**7) / sigma, 1e-15) <= 1000.0
    assert gaussian_eps_closed(math.sqrt(10**7) / (sigma * (1 - 2 * DEFAULT_RTOL)), 1e-15) > 1000.0
    assert data["epsilon"] <= 1000.0 and data["epsilon_lower"] <= data["epsilon"]


def test_cli_epsilon_delta_near_one_json(capsys):
    argv = ["epsilon", "--noise-multiplier", "1", "--sample-rate", "1", "--steps", "10",
            "--delta", "0.999999", "--json"]
    code, out, err = run_main(argv, capsys)
    assert code == 0, err
    data = strict_json(out)
    truth = gaussian_eps_closed(math.sqrt(10), 0.999999)
    assert data["epsilon_lower"] <= truth + 1e-12 <= data["epsilon"] + 2e-12
    assert data["epsilon_rdp"] >= truth


def test_cli_module_bad_epsilon_subprocess():
    res = subprocess.run([sys.executable, "-m", "autoacct.cli", "calibrate", "--epsilon", "nan",
                          *RUN], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "--epsilon" in res.stderr


# ----- plotting ----------------------------------------------------------------------------------

PLOT_MECHANISMS = {
    "gaussian-tiny-sigma": Gaussian(1e-3),
    "gaussian-huge-sigma": Gaussian(1e4),
    "pure-dp-1000": PureDP(1000.0),
    "approx-dp": ApproxDP(1.0, 0.5),
    "rr-near-1": RandomizedResponse(0.999999),
    "pure-dp-10-composed-1e7": Composition()([PureDP(10.0)], [10**7]),
}


@pytest.fixture
def _close_figures():
    yield
    plt.close("all")


def _curves(ax) -> list[np.ndarray]:
    return [np.asarray(ln.get_ydata(), dtype=float) for ln in ax.get_lines()
            if not ln.get_label().startswith("_")]


@pytest.mark.usefixtures("_close_figures")
@pytest.mark.parametrize("key", list(PLOT_MECHANISMS))
def test_plots_of_extreme_mechanisms_are_finite_and_warning_free(key):
    m = PLOT_MECHANISMS[key]
    with strict_warnings():
        for plot in (plot_tradeoff, plot_privacy_profile, plot_rdp):
            ax = plot(m)
            ax.figure.canvas.draw()  # matplotlib's own checks run at draw time
            assert all(math.isfinite(v) for v in (*ax.get_xlim(), *ax.get_ylim()))
            for y in _curves(ax):
                shown = y[~np.isnan(y)]
                assert np.all(np.isfinite(shown))
                if plot is plot_tradeoff:
                    assert shown.size == y.size and np.all((shown >= 0) & (shown <= 1))
                if plot is plot_privacy_profile:
                    assert np.all((shown > 0) & (shown <= 1 + 1e-12))
            plt.close(ax.figure)


@pytest.mark.usefixtures("_close_figures")
def test_privacy_profile_of_tiny_sigma_is_an_upper_bound():
    with strict_warnings():
        ax = plot_privacy_profile(Gaussian(1e-3))
    line = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")][0]
    e, d = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    truth = np.array([gaussian_delta_closed(1e3, x) for x in e])
    ok = ~np.isnan(d)
    assert ok.sum() > 100 and np.all(d[ok] >= truth[ok] * (1 - 1e-9))
