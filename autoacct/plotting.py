"""Matplotlib helpers: tradeoff curves, ROC bounds, privacy profiles, Renyi-DP curves and PLDs.

Each function draws one curve per mechanism on one Axes (a new figure when
``ax`` is None), labels both axes, adds a legend and returns the Axes. The
same mechanism may be passed several times with different routes, e.g.
``plot_tradeoff(m, m, via=["auto", "rdp"])``. A curve is labelled with its
mechanism's parameters ("Gaussian σ=1.1, Poisson q=0.01, 1000 steps") unless
``labels`` are given. Nothing here calls
``plt.show()``; display is the caller's (or the notebook's) business.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

import numpy as np

from autoacct.errors import RouteUnavailableError
from autoacct.mechanism import Mechanism
from autoacct.routes import ROUTE_NAMES
from autoacct.subsampling.base import SubsampledMechanism
from autoacct.zoo.transformers import ComposedMechanism

__all__ = ["plot_pld", "plot_privacy_profile", "plot_rdp", "plot_roc", "plot_tradeoff"]


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(5.5, 4.5), layout="constrained")
    return ax


def _per_mechanism(name: str, value: Any, n: int) -> list[Any]:
    """Broadcast a scalar option (or check a per-mechanism sequence) to ``n`` entries."""
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name} must have one entry per mechanism ({n}), got {len(value)}")
        return list(value)
    return [value] * n


def _check(mechanisms: Sequence[Any]) -> None:
    if not mechanisms:
        raise ValueError("give at least one mechanism to plot")
    for i, m in enumerate(mechanisms):
        if not isinstance(m, Mechanism):
            raise TypeError(f"mechanisms[{i}] must be a Mechanism, got {type(m).__name__}")


def _plots_for(m: Mechanism) -> list[str]:
    """The plots ``m`` can be drawn in: the tradeoff, ROC and profile plots read any route (the
    auto policy), the RDP plot needs a Renyi-DP curve and the PLD plot privacy-loss laws."""
    out = ["plot_tradeoff", "plot_roc", "plot_privacy_profile"]
    out += ["plot_rdp"] if "rdp" in m.routes else []
    out += ["plot_pld"] if "pld" in m.routes else []
    return out


def _unavailable(plot: str, where: str, m: Mechanism, lacks: str) -> RouteUnavailableError:
    """The error of a plot asked of a mechanism without the representation it draws: names the
    plot, the argument, the mechanism, its routes and the plots it does have (a notebook user
    sees this at the call, not a failure inside a query)."""
    return RouteUnavailableError(
        f"{plot}: {where} ({_describe(m)!r}) {lacks} (its routes: {', '.join(m.routes) or 'none'}), "
        f"so it cannot be drawn here; plots available for it: {', '.join(_plots_for(m))}")


def _check_via(plot: str, mechanisms: Sequence[Mechanism], routes: Sequence[Any]) -> None:
    """Refuse, before anything is drawn, a route a mechanism cannot answer by ("pld" stands for
    the closed form of an exactly GDP mechanism, as in the queries)."""
    for i, (m, route) in enumerate(zip(mechanisms, routes)):
        if not isinstance(route, str) or route not in ROUTE_NAMES:
            raise ValueError(f"via must be one of {ROUTE_NAMES}, got {route!r}")
        if route == "auto" or route in m.routes or (route == "pld" and "exact" in m.routes):
            continue
        raise _unavailable(plot, f"mechanisms[{i}]", m, f"cannot be answered via {route!r}")


#: Symbols for parameter names in curve labels; other names are shown as they are.
_SYMBOLS = {"sigma": "σ", "sigmas": "σ", "eps": "ε", "delta": "δ", "rho": "ρ", "mu": "μ", "q": "q",
            "batch_size": "B", "dataset_size": "n"}
#: How a sampler is named in a curve label ("Gaussian σ=1, Poisson q=0.01").
_SAMPLERS = {"PoissonSubsample": "Poisson", "SampleWithoutReplacement": "without replacement",
             "SampleWithReplacement": "with replacement"}
#: Parts of a composition named in its label before the rest is summed up.
_SHOWN_PARTS = 3
#: Entries of a sequence parameter named in a label before the rest is elided.
_SHOWN_PARAMS = 4
#: Width (characters) at which a generated label is wrapped onto a new line.
_WRAP = 42


def _number(value: Any) -> str:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(int(value))
    try:
        return f"{float(value):.4g}"
    except (TypeError, ValueError):
        return str(value)


def _own_params(m: Mechanism) -> str:
    """``"σ=1.1"``: the mechanism's parameters under their field names (not provenance keys).

    A sequence field (``NoisyGD.sigmas[0]``, ...) is shown once, as a tuple.
    """
    grouped: dict[str, list[Any]] = {}
    for key, value in m.params.items():
        field = key[len(m.name) + 1:] if key.startswith(m.name + ".") else key.rsplit(".", 1)[-1]
        grouped.setdefault(field.partition("[")[0], []).append(value)
    items = []
    for field, values in grouped.items():
        shown = [_number(v) for v in values[:_SHOWN_PARAMS]] + (["…"] if len(values) > _SHOWN_PARAMS else [])
        text = shown[0] if len(values) == 1 else "(" + ", ".join(shown) + ")"
        items.append(f"{_SYMBOLS.get(field, field)}={text}")
    return ", ".join(items)


def _wrap(text: str, width: int = _WRAP) -> str:
    """Break ``text`` onto lines of about ``width`` characters, only after ", " or before " + "."""
    pieces = re.split(r"(?<=, )|(?= \+ )", text)
    lines = [""]
    for piece in pieces:
        if lines[-1] and len(lines[-1]) + len(piece) > width:
            lines[-1] = lines[-1].rstrip()
            lines.append(piece.lstrip())
        else:
            lines[-1] += piece
    return "\n".join(lines)


def _describe(m: Mechanism) -> str:
    """A label a reader understands, from the mechanism's structure and parameters.

    ``dpsgd(0.01, 1.1, 1000)`` gives "Gaussian σ=1.1, Poisson q=0.01, 1000 steps";
    a name the user gave a mechanism stands for its class name (leaves) or
    heads the description (compositions and subsampled mechanisms).
    """
    if isinstance(m, ComposedMechanism):
        parts = [_describe(c) for c in m.children]
        derived = "Compose:{" + ", ".join(f"{c.name}: {k}" for c, k in zip(m.children, m.counts)) + "}"
        if len(parts) == 1:
            k = m.counts[0]
            text = f"{parts[0]}, {k} step{'s' if k != 1 else ''}"
        else:
            shown = [f"({p})" if ", " in p else p for p in parts[:_SHOWN_PARTS]]
            shown = [p if k == 1 else f"{p} ×{k}" for p, k in zip(shown, m.counts)]
            text = " + ".join(shown)
            if len(parts) > _SHOWN_PARTS:
                text += f" + {len(parts) - _SHOWN_PARTS} more ({sum(m.counts)} steps in all)"
    elif isinstance(m, SubsampledMechanism):
        sampler = type(m)._SAMPLER
        derived = f"{sampler}({m.base.name})"
        own = [f.name for f in fields(m) if f.init and f.name not in ("base", "name", "neighboring")]
        sampled = ", ".join(f"{_SYMBOLS.get(f, f)}={_number(getattr(m, f))}" for f in own)
        text = f"{_describe(m.base)}, {_SAMPLERS.get(sampler, sampler)} {sampled}".rstrip()
    else:
        params = _own_params(m)
        return f"{m.name} {params}" if params else m.name
    return text if m.name == derived else f"{m.name}: {text}"


def _labels(mechanisms: Sequence[Mechanism], labels: Sequence[str] | None,
            routes: Sequence[str] | None = None) -> list[str]:
    """The user's ``labels``, else each mechanism's description, with its route if asked."""
    if labels is not None:
        labels = list(labels)
        if len(labels) != len(mechanisms):
            raise ValueError(f"labels must have one entry per mechanism ({len(mechanisms)}), "
                             f"got {len(labels)}")
        return [str(s) for s in labels]
    out = []
    for i, m in enumerate(mechanisms):
        text = _describe(m)
        if routes is not None and routes[i] != "auto":
            text += f" (via {routes[i]})"
        out.append(text)
    return out


#: Legend styles in order of preference, (font size, wrap width of the labels): the first
#: whose legend fits inside the axes is used, so that small axes get a smaller legend instead
#: of one that covers their neighbours or is cut off at the figure's edge. Generated labels
#: start wrapped; the user's are tried as given (width None) before they are wrapped.
_LEGEND_STYLES: tuple[tuple[str, int | None], ...] = (
    ("small", _WRAP), ("small", 32), ("x-small", 32), ("x-small", 24), ("xx-small", 24), ("xx-small", 18))
_USER_LEGEND_STYLES = (("small", None), ("x-small", None)) + _LEGEND_STYLES
#: Share of the axes' width and height a legend may take.
_LEGEND_ROOM = 0.92


def _user_wrap(text: str, width: int | None) -> str:
    if width is None:
        return text
    return "\n".join(textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False)
                     for line in text.splitlines())


def _legend(ax: Any, lines: Sequence[Any], texts: Sequence[str], generated: bool) -> Any:
    """Label ``lines`` with ``texts`` and draw a legend that fits inside the axes.

    Labels are re-wrapped narrower as the font shrinks (generated ones at
    ", " and " + ", the user's at spaces and only when they do not fit as
    given). The legend is measured, not drawn: one layout of its text per style tried.
    """
    ax.apply_aspect()  # the box an equal aspect leaves, which the legend must fit in
    box = ax.get_window_extent()
    legend = None
    for size, width in _LEGEND_STYLES if generated else _USER_LEGEND_STYLES:
        for line, text in zip(lines, texts):
            line.set_label(_wrap(text, width or _WRAP) if generated else _user_wrap(text, width))
        for ncol in (1, 2) if len(lines) > 4 else (1,):
            if legend is not None:
                legend.remove()
            legend = ax.legend(loc="best", fontsize=size, framealpha=0.85, ncol=ncol)
            extent = legend.get_window_extent()
            if extent.width <= _LEGEND_ROOM * box.width and extent.height <= _LEGEND_ROOM * box.height:
                return legend
    return legend


def _log_limits(ax: Any, values: np.ndarray) -> None:
    """Set y limits a log axis can show: a decade around constant data, a default when empty.

    Matplotlib cannot autoscale a log axis with no positive data, and warns
    on identical limits when every value is the same.
    """
    if values.size == 0:
        ax.set_ylim(1e-3, 1e3)
        return
    low, high = float(np.min(values)), float(np.max(values))
    if high <= low * (1.0 + 1e-9):
        ax.set_ylim(low / 10.0, high * 10.0)


def _scale(name: str, value: Any) -> str:
    if value not in ("linear", "log"):
        raise ValueError(f"{name} must be 'linear' or 'log', got {value!r}")
    return str(value)


def _positive_limits(values: Sequence[np.ndarray], floor: float, top: float) -> tuple[float, float]:
    """Log-axis limits from half the smallest positive value (at least ``floor``) to ``top``."""
    positive = [float(np.min(v[v > 0])) for v in values if np.any(v > 0)]
    low = max(min(positive) / 2.0, floor) if positive else floor
    return (low, top) if low < top else (top / 10.0, top)


def _span(x: np.ndarray, top: float) -> tuple[float, float]:
    """Log-axis limits from the smallest positive ``x`` to ``top`` (a decade below ``top`` if none)."""
    low = float(np.min(x[x > 0])) if np.any(x > 0) else top / 10.0
    return (low, top) if low < top else (top / 10.0, top)


def plot_tradeoff(*mechanisms: Mechanism, ax: Any = None, labels: Sequence[str] | None = None,
                  via: str | Sequence[str] = "auto", fpr: Any = None,
                  xscale: str = "linear", yscale: str = "linear") -> Any:
    """Plot the f-DP tradeoff curve (type II error against type I error) of each mechanism.

    Each curve is the mechanism's certified lower bound ``m.tradeoff(fpr, via=...)``.
    ``via`` is one route for all mechanisms or one per mechanism. The dotted
    line is perfect privacy (beta = 1 - alpha). On linear axes the plot is the
    unit square with an equal aspect. ``xscale``/``yscale`` "log" show small
    errors (the low type I errors of membership inference, say): zeros are left
    out, the limits run from the smallest value shown to 1, and the axes box
    stays square without forcing an equal aspect on the decades. Returns the Axes.
    """
    ax = _unit_square_curves("plot_tradeoff", mechanisms, ax, labels, via, fpr, xscale, yscale,
                             lambda m, a, r: m.tradeoff(a, via=r), lambda a: 1.0 - a)
    ax.set_xlabel(r"Type I error $\alpha$")
    ax.set_ylabel(r"Type II error $\beta$")
    ax.set_title("Tradeoff functions (f-DP)")
    return ax


def plot_roc(*mechanisms: Mechanism, ax: Any = None, labels: Sequence[str] | None = None,
             via: str | Sequence[str] = "auto", fpr: Any = None,
             xscale: str = "log", yscale: str = "log") -> Any:
    """Plot the ROC bound of membership inference: the largest true-positive rate any attack
    reaches at each false-positive rate, ``m.tpr(fpr, via=...)`` = 1 - the certified tradeoff.

    Log axes by default, where attacks are judged at low false-positive rates (Carlini et al.
    2022); "linear" gives the unit square. The dotted line is guessing (TPR = FPR). Options as
    in :func:`plot_tradeoff`, whose code paths it shares. Returns the Axes.
    """
    ax = _unit_square_curves("plot_roc", mechanisms, ax, labels, via, fpr, xscale, yscale,
                             lambda m, a, r: m.tpr(a, via=r), lambda a: a)
    ax.set_xlabel("False-positive rate")
    ax.set_ylabel("True-positive rate (upper bound)")
    ax.set_title("Membership inference: ROC bound")
    return ax


def _unit_square_curves(plot: str, mechanisms: Sequence[Mechanism], ax: Any, labels: Sequence[str] | None,
                        via: str | Sequence[str], fpr: Any, xscale: str, yscale: str,
                        value: Any, reference: Any) -> Any:
    """Curves y = value(m, fpr, route) on [0, 1]^2 with the dotted ``reference`` line; the axes'
    scales, limits and legend (see :func:`plot_tradeoff`). ``plot`` names the caller in errors."""
    _check(mechanisms)
    xscale, yscale = _scale("xscale", xscale), _scale("yscale", yscale)
    routes = _per_mechanism("via", via, len(mechanisms))
    _check_via(plot, mechanisms, routes)
    ax = _axes(ax)
    names = _labels(mechanisms, labels, routes if len(set(routes)) > 1 else None)
    grid = np.unique(np.concatenate(([0.0], np.geomspace(1e-5, 1.0, 160), np.linspace(0.0, 1.0, 101))))
    alpha = grid if fpr is None else np.asarray(fpr, dtype=float)
    if xscale == "log":
        alpha = alpha[alpha > 0]
    lines, ys = [], []
    for m, route, name in zip(mechanisms, routes, names):
        y = np.asarray(value(m, alpha, route), dtype=float)
        ys.append(y)
        lines += ax.plot(alpha, np.where(y > 0, y, np.nan) if yscale == "log" else y, label=name)
    if xscale == yscale == "linear":
        ax.plot([0.0, 1.0], reference(np.array([0.0, 1.0])), linestyle=":", color="0.6", linewidth=1.0,
                label="_reference")
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(0.0, 1.0)
        ax.set_aspect("equal")
    else:
        low_x = float(np.min(alpha)) if xscale == "log" and alpha.size else 1e-5
        ref = np.concatenate((np.geomspace(min(low_x, 1e-5), 1.0, 200), grid))
        ref = np.unique(ref[(ref > 0 if xscale == "log" else ref >= 0) & (ref <= 1)])
        ref_y = reference(ref)
        keep = ref_y > 0 if yscale == "log" else np.ones(ref.shape, dtype=bool)
        ax.plot(ref[keep], ref_y[keep], linestyle=":", color="0.6", linewidth=1.0, label="_reference")
        ax.set_xscale(xscale)
        ax.set_yscale(yscale)
        ax.set_xlim(_span(alpha, 1.0) if xscale == "log" else (0.0, 1.0))
        # With the reference among the values, a curve that is 0 everywhere leaves a sensible view.
        ax.set_ylim(*(_positive_limits([*ys, ref_y[keep]], 1e-300, 1.0) if yscale == "log" else (0.0, 1.0)))
        ax.set_aspect("auto")
        ax.set_box_aspect(1.0)
    _legend(ax, lines, names, labels is None)
    return ax


def plot_pld(mechanism: Mechanism, ax: Any = None, direction: str = "remove", tol: float | None = None,
             yscale: str = "log") -> Any:
    """Plot a mechanism's certified discrete privacy-loss distribution (``mechanism.pld(tol)``):
    the upper and lower PLDs' masses against the loss, for ``direction`` "remove" (the law of
    log dP/dQ under P) or "add". The legend gives the upper PLD's mass at +inf. Zero masses are
    left out on the default log mass axis. Returns the Axes.

    A mechanism given by its Renyi DP only (zCDP, sparse vector with Gaussian noise, ...) has no
    PLD: a Renyi-DP curve fixes no privacy-loss law. It raises ``RouteUnavailableError`` (a
    ValueError) naming it and the plots it has (:func:`plot_rdp` among them).
    """
    _check([mechanism])
    if direction not in ("remove", "add"):
        raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")
    yscale = _scale("yscale", yscale)
    if "pld" not in mechanism.routes:
        raise _unavailable("plot_pld", "mechanism", mechanism,
                           "has no privacy-loss distribution: it is described by its Renyi DP "
                           "(or another summary) only, which fixes no privacy-loss law")
    remove, add = mechanism.pld(tol)
    d = remove if direction == "remove" else add
    ax = _axes(ax)
    shown = []
    for pmf, style, text in ((d.pmf_upper, "-", f"upper (mass at +inf {d.inf_mass:.3g})"),
                             (d.pmf_lower, "--", "lower")):
        y = np.where(pmf > 0, pmf, np.nan) if yscale == "log" else pmf
        shown += ax.plot(d.losses, y, linestyle=style, label=text)
    ax.set_yscale(yscale)
    if yscale == "log":
        _log_limits(ax, d.pmf_upper[d.pmf_upper > 0])
    ax.set_xlabel("Privacy loss")
    ax.set_ylabel(f"Mass per cell (h = {d.h:.3g})")
    ax.set_title(f"{_describe(mechanism)}: PLD ({direction})")
    ax.legend(handles=shown)
    return ax


def plot_privacy_profile(*mechanisms: Mechanism, ax: Any = None, labels: Sequence[str] | None = None,
                         eps: Any = None, via: str | Sequence[str] = "auto",
                         xscale: str = "linear", yscale: str = "log") -> Any:
    """Plot the privacy profile delta(eps) of each mechanism, by default on a logarithmic delta axis.

    Each curve is the certified upper bound ``m.delta(eps, via=...)``; on a log
    delta axis points where delta is 0 are left out. By default each curve has
    its own 120 values of eps, from 0 to its mechanism's eps(1e-10) (from a
    thousandth of that, evenly in log, when ``xscale="log"``; eps = 0 is left
    out there), and the log delta axis stops at 1e-16. (A range shared by all
    mechanisms asked the steepest for deltas far below 1e-10: 5 s and an
    AccuracyWarning for three DP-SGD runs.) Returns the Axes.
    """
    _check(mechanisms)
    xscale, yscale = _scale("xscale", xscale), _scale("yscale", yscale)
    routes = _per_mechanism("via", via, len(mechanisms))
    _check_via("plot_privacy_profile", mechanisms, routes)
    ax = _axes(ax)
    names = _labels(mechanisms, labels, routes if len(set(routes)) > 1 else None)
    floor = 1e-300
    grids = []
    for m, route in zip(mechanisms, routes):
        if eps is None:
            floor = 1e-16
            top = float(m.epsilon(1e-10, via=route))
            top = top if np.isfinite(top) and top > 0 else 10.0
            e = np.geomspace(top / 1e3, top, 120) if xscale == "log" else np.linspace(0.0, top, 120)
        else:
            e = np.asarray(eps, dtype=float)
        grids.append(e[e > 0] if xscale == "log" else e)
    lines, deltas = [], []
    for m, route, name, e in zip(mechanisms, routes, names, grids):
        d = np.asarray(m.delta(e, via=route), dtype=float)  # one accountant run for the whole grid
        deltas.append(d)
        lines += ax.plot(e, np.where(d > 0, d, np.nan) if yscale == "log" else d, label=name)
    ax.set_xscale(xscale)
    ax.set_yscale(yscale)
    if xscale == "log":
        every = np.concatenate(grids)
        ax.set_xlim(_span(every, float(np.max(every)) if every.size else 10.0))
    if yscale == "log":
        ax.set_ylim(*_positive_limits(deltas, floor, 1.5))
    else:
        ax.set_ylim(bottom=0.0)
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_ylabel(r"$\delta(\varepsilon)$")
    ax.set_title("Privacy profiles")
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, lines, names, labels is None)
    return ax


def plot_rdp(*mechanisms: Mechanism, ax: Any = None, labels: Sequence[str] | None = None,
             alphas: Any = None) -> Any:
    """Plot the Renyi-DP curve eps(alpha) of each mechanism (log-log axes).

    Infinite values are left out. ``alphas`` defaults to 100 orders from 1.1 to
    1000. A mechanism without a Renyi-DP curve (one given by a pair of distributions whose
    divergences the library does not bound, such as ``ContinuousPair``, or sampled with
    replacement) raises ``RouteUnavailableError`` (a ValueError) before anything is drawn,
    naming it and the plots it has: its privacy profile and tradeoff curve, certified from its
    PLD (an RDP curve read off the PLD would be infinite, the upper PLD keeping mass at +inf).
    Returns the Axes.
    """
    _check(mechanisms)
    for i, m in enumerate(mechanisms):
        if "rdp" not in m.routes:
            raise _unavailable("plot_rdp", f"mechanisms[{i}]", m, "has no Renyi-DP curve")
    ax = _axes(ax)
    names = _labels(mechanisms, labels)
    if alphas is None:
        alphas = np.geomspace(1.1, 1000.0, 100)
    a = np.asarray(alphas, dtype=float)
    drawn: list[np.ndarray] = []
    lines, texts = [], []
    for m, name in zip(mechanisms, names):
        r = np.asarray(m.rdp(a), dtype=float)
        finite = np.isfinite(r) & (r > 0)
        shown = np.where(finite, r, np.nan)
        drawn.append(r[finite])
        texts.append(name if finite.any() else f"{name} (RDP infinite or 0)")
        lines += ax.plot(a, shown, label=texts[-1])
    _log_limits(ax, np.concatenate(drawn))
    if a.size and float(np.min(a)) < float(np.max(a)):
        ax.set_xlim(float(np.min(a)), float(np.max(a)))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"order $\alpha$")
    ax.set_ylabel(r"RDP $\varepsilon(\alpha)$")
    ax.set_title("Renyi differential privacy")
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, lines, texts, labels is None)
    return ax
