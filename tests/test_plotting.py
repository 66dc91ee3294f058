"""Plotting helpers: each returns an Axes with labelled axes, a legend, one line per curve."""

from __future__ import annotations

import traceback
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy import stats  # noqa: E402
from zoo_cases import ZOO  # noqa: E402

from autoacct import RouteUnavailableError  # noqa: E402
from autoacct.dpsgd import dpsgd  # noqa: E402
from autoacct.plotting import plot_pld, plot_privacy_profile, plot_rdp, plot_roc, plot_tradeoff  # noqa: E402
from autoacct.zoo import (  # noqa: E402
    ApproxDP,
    Composition,
    ContinuousPair,
    Gaussian,
    Laplace,
    NoisyGD,
    PoissonSubsample,
    PureDP,
    RandomizedResponse,
    SampleWithReplacement,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _curves(ax) -> list:
    """Lines that belong in the legend (reference lines are labelled with a leading underscore)."""
    return [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]


def _legend_texts(ax) -> list[str]:
    legend = ax.get_legend()
    assert legend is not None, "no legend"
    return [t.get_text() for t in legend.get_texts()]


def test_tradeoff_several_mechanisms_and_routes():
    gm = Gaussian(1.0, name="GM")
    lap = Laplace(1.0, name="Lap")
    ax = plot_tradeoff(gm, lap, gm, via=["auto", "auto", "rdp"], fpr=np.linspace(0, 1, 41))
    assert isinstance(ax, matplotlib.axes.Axes)
    assert ax.get_xlabel() and ax.get_ylabel()
    lines = _curves(ax)
    assert len(lines) == 3
    assert _legend_texts(ax) == ["GM σ=1", "Lap b=1", "GM σ=1 (via rdp)"]
    for ln in lines:
        y = np.asarray(ln.get_ydata())
        assert np.all((y >= 0) & (y <= 1))
    # The RDP route is a looser (smaller) lower bound on the tradeoff function.
    assert np.all(np.asarray(lines[2].get_ydata()) <= np.asarray(lines[0].get_ydata()) + 1e-12)
    assert ax.get_xlim() == (0.0, 1.0) and ax.get_ylim() == (0.0, 1.0)


def test_tradeoff_on_given_axes_with_labels():
    fig, (left, right) = plt.subplots(1, 2)
    out = plot_tradeoff(Gaussian(2.0), ax=right, labels=["sigma = 2"])
    assert out is right
    assert _legend_texts(right) == ["sigma = 2"]
    assert not left.get_lines()


# ----- curve labels: the mechanism's parameters, not its provenance name ------------------------

@pytest.mark.parametrize(("mechanism", "label"), [
    (dpsgd(0.01, 1.1, 1000), "Gaussian σ=1.1, Poisson q=0.01, 1000 steps"),
    (Composition()([PoissonSubsample(0.01)(Gaussian(1.1))], [1000]),
     "Gaussian σ=1.1, Poisson q=0.01, 1000 steps"),
    (dpsgd(0.01, 1.1, 1, sampling="without-replacement"),
     "Gaussian σ=0.55,\nwithout replacement q=0.01, 1 step"),
    (Composition()([Gaussian(5.0), Gaussian(8.0), PureDP(0.1)], [3, 5, 1]),
     "Gaussian σ=5 ×3 + Gaussian σ=8 ×5\n+ PureDP ε=0.1"),
    (SampleWithReplacement(256, 60000)(Gaussian(1.0)), "Gaussian σ=1, with replacement B=256,\nn=60000"),
    (ApproxDP(1.0, 1e-6), "ApproxDP ε=1, δ=1e-06"),
    (NoisyGD([1.0, 2.0]), "NoisyGD σ=(1, 2)"),
    (NoisyGD([1.0, 2.0, 3.0, 4.0, 5.0]), "NoisyGD σ=(1, 2, 3, 4, …)"),
    (Gaussian(2.0, name="GM"), "GM σ=2"),
])
def test_labels_name_the_parameters(mechanism, label):
    assert _legend_texts(plot_tradeoff(mechanism, fpr=[0.0, 0.5, 1.0])) == [label]


def test_labels_of_long_compositions_are_summed_up_and_wrapped():
    many = Composition()([Gaussian(float(s)) for s in range(1, 10)], list(range(1, 10)))
    nested = Composition()([dpsgd(0.01, 1.1, 100), Laplace(2.0)], [2, 3])
    texts = _legend_texts(plot_tradeoff(many, nested))
    assert texts == ["Gaussian σ=1 + Gaussian σ=2 ×2\n+ Gaussian σ=3 ×3\n+ 6 more (45 steps in all)",
                     "(Gaussian σ=1.1, Poisson q=0.01,\n100 steps) ×2 + Laplace b=2 ×3"]
    assert all(len(line) <= 42 for text in texts for line in text.splitlines())


def test_no_internal_names_and_user_labels_win():
    run = dpsgd(0.01, 1.1, 1000)
    for plot in (plot_tradeoff, plot_privacy_profile, plot_rdp):
        ax = plot(run, Gaussian(3.0))
        assert not any("Compose" in t or "PoissonSubsample" in t for t in _legend_texts(ax))
        ax = plot(run, Gaussian(3.0), labels=["Compose:{as I like}", "G"])
        assert _legend_texts(ax) == ["Compose:{as I like}", "G"]


# ----- legends inside the figure ------------------------------------------------------------------

RUNS = [dpsgd(0.01, 1.1, 1000), dpsgd(0.01, 1.1, 1000, sampling="without-replacement"),
        Composition()([Gaussian(5.0), Gaussian(8.0), PureDP(0.1)], [3, 5, 1])]
QUICK = {plot_tradeoff: {"fpr": np.linspace(0.0, 1.0, 21)},
         plot_privacy_profile: {"eps": np.linspace(0.0, 4.0, 21)}, plot_rdp: {}}


def _own_axes(plot, mechanisms, **kwargs):
    return plot(*mechanisms, **kwargs)


def _left_of_two(plot, mechanisms, **kwargs):
    _, (left, _) = plt.subplots(1, 2, figsize=(8, 3.5))  # no layout engine: nothing moves the legend
    return plot(*mechanisms, ax=left, **kwargs)


def _corner_of_four(plot, mechanisms, **kwargs):
    _, axes = plt.subplots(2, 2, figsize=(6, 5))
    return plot(*mechanisms, ax=axes[1, 1], **kwargs)


def _inside(inner, outer) -> bool:
    return (inner.x0 >= outer.x0 - 0.5 and inner.y0 >= outer.y0 - 0.5
            and inner.x1 <= outer.x1 + 0.5 and inner.y1 <= outer.y1 + 0.5)


@pytest.mark.parametrize("plot", list(QUICK), ids=lambda f: f.__name__)
@pytest.mark.parametrize("where", [_own_axes, _left_of_two, _corner_of_four], ids=lambda f: f.__name__)
@pytest.mark.parametrize("case", ["runs", "many", "long user label"])
def test_legend_lies_inside_the_axes_and_the_saved_figure(plot, where, case, tmp_path):
    mechanisms, kwargs = {
        "runs": (RUNS, {}),
        "many": ([Gaussian(s) for s in np.linspace(0.5, 5.0, 12)], {}),
        "long user label": (RUNS[:1], {"labels": ["the DP-SGD run of the paper's second experiment, "
                                                  "noise multiplier 1.1"]}),
    }[case]
    ax = where(plot, mechanisms, **QUICK[plot], **kwargs)
    fig = ax.figure
    suffix = "svg" if where is _left_of_two else "png"
    fig.savefig(tmp_path / f"figure.{suffix}")  # no bbox_inches="tight": the figure as it is
    renderer = fig.canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(renderer)
    assert _inside(legend, fig.bbox), (legend, fig.bbox)
    assert _inside(legend, ax.get_window_extent(renderer)), (legend, ax.get_window_extent(renderer))


def test_small_axes_shrink_the_legend_and_rewrap_labels():
    small = plt.matplotlib.font_manager.FontProperties(size="small").get_size_in_points()
    ax = _corner_of_four(plot_tradeoff, RUNS, fpr=[0.0, 0.5, 1.0])
    assert ax.get_legend().get_texts()[0].get_fontsize() < small
    texts = _legend_texts(ax)
    assert texts[0].replace("\n", " ") == "Gaussian σ=1.1, Poisson q=0.01, 1000 steps"
    assert max(len(line) for t in texts for line in t.splitlines()) < 42
    # The user's words are kept; a short label is not broken, a long one only at its spaces.
    ax = _corner_of_four(plot_tradeoff, RUNS[:1], fpr=[0.0, 0.5, 1.0], labels=["DP-SGD, sigma 1.1"])
    assert _legend_texts(ax) == ["DP-SGD, sigma 1.1"]
    user = "a label of the user's that the corner axes cannot hold on one line"
    ax = _corner_of_four(plot_tradeoff, RUNS[:1], fpr=[0.0, 0.5, 1.0], labels=[user])
    (text,) = _legend_texts(ax)
    assert "\n" in text and text.replace("\n", " ") == user
    # Roomy axes leave the user's label as it is.
    user = "the DP-SGD run of experiment 2, sigma 1.1"
    ax = plot_tradeoff(RUNS[0], fpr=[0.0, 0.5, 1.0], labels=[user])
    assert _legend_texts(ax) == [user]
    assert ax.get_legend().get_texts()[0].get_fontsize() == small


# ----- log axes -----------------------------------------------------------------------------------

def _drawn_strictly(ax):
    """Draw (matplotlib checks limits and scales then) with every warning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ax.figure.canvas.draw()


def test_tradeoff_is_a_unit_square_with_equal_aspect_on_linear_axes():
    ax = plot_tradeoff(RUNS[0], fpr=np.linspace(0.0, 1.0, 11))
    assert ax.get_aspect() == 1.0
    assert ax.get_xscale() == ax.get_yscale() == "linear"


@pytest.mark.parametrize(("xscale", "yscale"), [("log", "log"), ("log", "linear"), ("linear", "log")])
def test_tradeoff_on_log_axes_keeps_a_square_box_and_positive_limits(xscale, yscale):
    ax = plot_tradeoff(*RUNS, xscale=xscale, yscale=yscale)
    _drawn_strictly(ax)
    assert (ax.get_xscale(), ax.get_yscale()) == (xscale, yscale)
    assert ax.get_aspect() == "auto"  # an equal aspect on decades would squash the plot
    box = ax.get_window_extent()
    assert box.width == pytest.approx(box.height, rel=0.02)
    assert box.width > 0.5 * min(ax.figure.bbox.width, ax.figure.bbox.height)
    for limits, scale in ((ax.get_xlim(), xscale), (ax.get_ylim(), yscale)):
        assert all(np.isfinite(limits)) and limits[1] == 1.0
        assert limits[0] > 0 if scale == "log" else limits[0] == 0.0
    if xscale == "log":
        assert ax.get_xlim()[0] == 1e-5  # the smallest type I error of the default grid
    for line in _curves(ax):
        x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
        assert np.all(x > 0) if xscale == "log" else np.all(x >= 0)
        shown = y[~np.isnan(y)]
        assert shown.size > 100 and np.all(shown <= 1.0)
        assert np.all(shown > 0) if yscale == "log" else np.all(shown >= 0)


@pytest.mark.parametrize("mechanism", [Gaussian(1e-3), Gaussian(1e4), PureDP(1000.0), ApproxDP(1.0, 0.5)],
                         ids=["tiny-sigma", "huge-sigma", "pure-1000", "approx"])
def test_log_axes_of_extreme_mechanisms_have_finite_positive_limits(mechanism):
    for ax in (plot_tradeoff(mechanism, xscale="log", yscale="log"),
               plot_privacy_profile(mechanism, xscale="log")):
        _drawn_strictly(ax)
        for low, high in (ax.get_xlim(), ax.get_ylim()):
            assert 0 < low < high and np.isfinite(high)


def test_privacy_profile_log_eps_axis_and_linear_delta_axis():
    ax = plot_privacy_profile(RUNS[0], xscale="log")
    _drawn_strictly(ax)
    assert ax.get_xscale() == ax.get_yscale() == "log"
    (line,) = _curves(ax)
    e = np.asarray(line.get_xdata())
    assert np.all(e > 0) and e.size == 120
    np.testing.assert_allclose(np.diff(np.log(e)), np.log(e[1] / e[0]))  # evenly spaced in log
    assert ax.get_xlim() == (e[0], e[-1])
    eps = np.array([0.0, 0.5, 1.0, 2.0])
    ax = plot_privacy_profile(Laplace(1.0), eps=eps, yscale="linear")
    _drawn_strictly(ax)
    (line,) = _curves(ax)
    np.testing.assert_allclose(np.asarray(line.get_ydata()), Laplace(1.0).delta(eps))  # zeros kept
    assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0.0
    ax = plot_privacy_profile(Laplace(1.0), eps=eps, xscale="log")
    (line,) = _curves(ax)
    assert list(line.get_xdata()) == [0.5, 1.0, 2.0]


@pytest.mark.parametrize("xscale", ["linear", "log"])
def test_privacy_profile_default_range_is_each_mechanisms_own(xscale):
    # One range for all made the Poisson run (eps(1e-10) about 9) answer for eps up to the
    # without-replacement run's 19: deltas near 1e-43, a capped PLD grid, an AccuracyWarning.
    runs = [dpsgd(0.01, 1.1, 10000), dpsgd(0.01, 1.1, 1000, sampling="without-replacement")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ax = plot_privacy_profile(*runs, xscale=xscale)
    for m, line in zip(runs, _curves(ax)):
        e, d = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
        assert e.size == 120 and e[-1] == pytest.approx(m.epsilon(1e-10), rel=1e-12)
        assert e[0] == (0.0 if xscale == "linear" else pytest.approx(e[-1] / 1e3))
        assert 1e-11 < d[-1] <= 1.01e-10
    assert ax.get_ylim()[0] > 1e-12


def test_privacy_profile_log_scale():
    m = Composition()([Gaussian(5.0), Gaussian(8.0), PureDP(0.1)], [3, 5, 1])
    eps = np.linspace(0.0, 3.0, 31)
    ax = plot_privacy_profile(m, Gaussian(1.0), eps=eps, labels=["demo", "GM(1)"])
    assert isinstance(ax, matplotlib.axes.Axes)
    assert ax.get_yscale() == "log"
    assert "delta" in ax.get_ylabel() and "varepsilon" in ax.get_xlabel()
    assert len(_curves(ax)) == 2
    assert _legend_texts(ax) == ["demo", "GM(1)"]
    y = np.asarray(_curves(ax)[0].get_ydata())
    np.testing.assert_allclose(y, m.delta(eps))


def test_privacy_profile_skips_zero_delta():
    # Pure DP: delta is exactly 0 beyond eps = 1, which a log axis cannot show.
    ax = plot_privacy_profile(Laplace(1.0), Gaussian(1.0), eps=np.linspace(0.0, 3.0, 31))
    lines = _curves(ax)
    assert len(lines) == 2
    assert ax.get_yscale() == "log"
    lap = np.asarray(lines[0].get_ydata())
    assert np.all(np.isnan(lap[11:])) and not np.any(np.isnan(lap[:10]))
    assert 0 < ax.get_ylim()[0]
    # The default range stops each curve near delta = 1e-10, and the axis at 1e-16 at most.
    ax = plot_privacy_profile(Laplace(1.0), Gaussian(1.0))
    assert ax.get_ylim()[0] >= 1e-16


def test_rdp_log_log():
    alphas = np.geomspace(1.5, 200.0, 30)
    ax = plot_rdp(Gaussian(1.0), Laplace(2.0), PureDP(0.5), alphas=alphas)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_xlabel() and ax.get_ylabel()
    assert len(_curves(ax)) == 3
    assert len(_legend_texts(ax)) == 3
    np.testing.assert_allclose(np.asarray(_curves(ax)[0].get_ydata()), alphas / 2.0)


def test_bad_arguments():
    with pytest.raises(ValueError, match="at least one"):
        plot_tradeoff()
    with pytest.raises(TypeError, match="Mechanism"):
        plot_rdp("Gaussian")
    with pytest.raises(ValueError, match="labels"):
        plot_rdp(Gaussian(1.0), labels=["a", "b"])
    with pytest.raises(ValueError, match="via"):
        plot_tradeoff(Gaussian(1.0), Gaussian(2.0), via=["auto"])
    with pytest.raises(ValueError, match="xscale must be 'linear' or 'log'"):
        plot_tradeoff(Gaussian(1.0), xscale="symlog")
    with pytest.raises(ValueError, match="yscale"):
        plot_privacy_profile(Gaussian(1.0), yscale=True)


def test_no_show_in_library(monkeypatch):
    """Library code never calls plt.show (a notebook displays figures itself)."""
    def boom(*args, **kwargs):
        raise AssertionError("plt.show called")

    monkeypatch.setattr(plt, "show", boom)
    plot_tradeoff(Gaussian(1.0))
    plot_privacy_profile(Gaussian(1.0), eps=[0.0, 1.0])
    plot_rdp(Gaussian(1.0))


# ----- ROC bound and PLD ----------------------------------------------------------------------------

def test_roc_is_one_minus_the_tradeoff_on_log_axes():
    gm = Composition()([Gaussian(2.0)], [4])          # 1-GDP: TPR = Phi(Phi^-1(a) + 1)
    rr = Composition()([RandomizedResponse(0.75)], [5])
    ax = plot_roc(gm, rr, labels=["gauss", "rr"])
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert _legend_texts(ax) == ["gauss", "rr"]
    gauss, _ = _curves(ax)
    x, y = np.asarray(gauss.get_xdata()), np.asarray(gauss.get_ydata())
    assert np.all(x > 0)
    truth = stats.norm.cdf(stats.norm.ppf(x) + 1.0)
    assert np.all(y >= truth) and np.allclose(y, truth, atol=1e-6)
    low, high = ax.get_xlim()
    assert low == pytest.approx(1e-5) and high == 1.0
    assert ax.get_ylim()[1] == 1.0 and ax.get_ylim()[0] > 0


def test_roc_linear_is_the_unit_square_above_the_diagonal():
    ax = plot_roc(Laplace(1.0), xscale="linear", yscale="linear", fpr=np.linspace(0, 1, 21))
    (line,) = _curves(ax)
    x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    assert np.all(y >= x) and np.all(y <= 1)
    assert ax.get_xlim() == (0.0, 1.0) and ax.get_ylim() == (0.0, 1.0)
    with pytest.raises(ValueError, match="xscale"):
        plot_roc(Laplace(1.0), xscale="logit")


def test_pld_plot_shows_the_exported_masses():
    m = Composition()([RandomizedResponse(0.75)], [5])
    ax = plot_pld(m)
    upper, lower = _curves(ax)
    remove, _ = m.pld()
    np.testing.assert_array_equal(np.asarray(upper.get_xdata()), remove.losses)
    y = np.asarray(upper.get_ydata())
    np.testing.assert_allclose(y[np.isfinite(y)], remove.pmf_upper[remove.pmf_upper > 0])
    assert "upper" in _legend_texts(ax)[0] and ax.get_yscale() == "log"
    with pytest.raises(ValueError, match="direction"):
        plot_pld(m, direction="sideways")


# ----- a plot a mechanism has no representation for: refused at the call, pointing to the others ----

#: The zoo's mechanisms without a Renyi-DP curve (a pair or PLD only) and without privacy-loss
#: laws (Renyi DP only): 3 and 5 of them.
_NO_RDP = [(name, make) for name, make, _ in ZOO if "rdp" not in make().routes]
_NO_PLD = [(name, make) for name, make, _ in ZOO if "pld" not in make().routes]
#: How each is named in the error: its curve label, parameters included.
_NAMED = {"continuous-pair": "('ContinuousPair')",
          "mixture-of-gaussians": "('MixtureOfGaussians σ=1, sensitivities=(0, 1, 2), "
                                  "probabilities=(0.81, 0.18, 0.01), 50 steps')",
          "swr-gaussian": "('Gaussian σ=2, with replacement B=50, n=5000, 100 steps')",
          "gaussian-svt": "('GaussianSVT sigma_threshold=2, sigma_query=2, k=10, c=1')",
          "repeat-select-geometric": "('RepeatAndSelect(Gaussian) mean=10, shape=1, σ=3')",
          "repeat-select-poisson": "('RepeatAndSelect(PoissonSubsample(Gaussian)) mean=5, shape=inf, q=0.1, σ=1')",
          "zcdp": "('ZCDP ρ=0.3')", "zcdp-xi": "('ZCDP ρ=0.01, xi=0.02, 10 steps')"}


def _refused(plot, mechanism, **kwargs) -> str:
    """The message of the error ``plot`` raises for ``mechanism``, checked to come from the plotting
    module itself, not from a query inside it, and to leave no figure behind."""
    with pytest.raises(ValueError) as caught:
        plot(mechanism, **kwargs)
    assert isinstance(caught.value, RouteUnavailableError)
    assert traceback.extract_tb(caught.value.__traceback__)[-1].filename.endswith("plotting.py")
    assert plt.get_fignums() == []
    return str(caught.value)


def test_the_zoo_has_mechanisms_without_each_representation():
    assert sorted(n for n, _ in _NO_RDP) == ["continuous-pair", "mixture-of-gaussians", "swr-gaussian"]
    assert sorted(n for n, _ in _NO_PLD) == ["gaussian-svt", "repeat-select-geometric",
                                             "repeat-select-poisson", "zcdp", "zcdp-xi"]


@pytest.mark.parametrize(("name", "make"), _NO_RDP, ids=[n for n, _ in _NO_RDP])
def test_rdp_plot_of_a_mechanism_without_renyi_dp_names_it_and_the_plots_it_has(name, make):
    m = make()
    text = _refused(plot_rdp, m)
    assert text.startswith(f"plot_rdp: mechanisms[0] {_NAMED[name]} has no Renyi-DP curve (its routes: pld, phi)")
    assert text.endswith("plots available for it: plot_tradeoff, plot_roc, plot_privacy_profile, plot_pld")
    ax = plot_pld(m)  # a plot it does have
    assert len(_curves(ax)) == 2


@pytest.mark.parametrize(("name", "make"), _NO_PLD, ids=[n for n, _ in _NO_PLD])
def test_pld_plot_of_a_renyi_dp_mechanism_names_it_and_the_plots_it_has(name, make):
    m = make()
    text = _refused(plot_pld, m)
    assert text.startswith(f"plot_pld: mechanism {_NAMED[name]} has no privacy-loss distribution")
    assert "(its routes: rdp)" in text
    assert text.endswith("plots available for it: plot_tradeoff, plot_roc, plot_privacy_profile, plot_rdp")
    ax = plot_rdp(m)
    assert len(_curves(ax)) == 1


def test_the_failing_mechanism_of_several_is_named_before_anything_is_drawn():
    pair = ContinuousPair(stats.norm(0.5, 1.0).cdf, stats.norm(-0.5, 1.0).cdf, name="mine")
    with pytest.raises(RouteUnavailableError, match=r"plot_rdp: mechanisms\[1\] \('mine'\)"):
        plot_rdp(Gaussian(1.0), pair)
    assert plt.get_fignums() == []


@pytest.mark.parametrize("plot", [plot_tradeoff, plot_roc, plot_privacy_profile])
def test_a_route_a_mechanism_lacks_is_refused_at_the_call(plot):
    pair = ContinuousPair(stats.norm(0.5, 1.0).cdf, stats.norm(-0.5, 1.0).cdf)
    text = _refused(plot, pair, via="rdp")
    assert text.startswith(f"{plot.__name__}: mechanisms[0] ('ContinuousPair') cannot be answered via 'rdp'")
    assert "its routes: pld, phi" in text
    # "pld" of an exactly GDP mechanism is its closed form, as in the queries.
    assert len(_curves(plot(Gaussian(1.0), via="pld"))) == 1
    with pytest.raises(ValueError, match="via must be one of"):
        plot(Gaussian(1.0), via="fft")
