"""The tutorial notebooks in notebooks/: they run, they teach with the public API only, and
what they compute is true.

Each notebook is executed top to bottom against this tree's package (the kernel gets the
repository root first on PYTHONPATH, and the test checks where ``autoacct`` was imported
from). The variables a notebook shows its reader are then read back from the kernel and
checked here against truths that do not come from autoacct: closed forms (the analytic
Gaussian of Balle and Wang 2018, exact binomial sums, Neyman-Pearson tradeoff curves),
values published by others (autodp's printed output, Koskela, Jalko and Honkela 2020's
converged delta), an independent Renyi-DP computation (Mironov, Talwar and Zhang 2019 at
integer orders) and dp_accounting's PLD accountant. A notebook whose numbers drift from the
truth fails here, whatever its own cells print.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
from closed_forms import composed_pair_tpr, eps_from_delta_closed, gaussian_delta_closed, gaussian_eps_closed
from nbclient import NotebookClient
from scipy import special, stats

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = REPO / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))

# What each notebook shows its reader, read back from the kernel after it has run.
EXPORTS = {
    "quickstart": ["AUTODP", "eps_rdp", "eps_default", "eps_bounds", "eps_phi", "fpr", "tradeoff_default",
                   "tradeoff_rdp", "alphas", "rdp_composed"],
    "dpsgd": ["q", "sigma", "delta", "eps_one_step_bounds", "ks", "sigmas", "eps_pld", "eps_rdp", "ks_delta",
              "delta_brackets", "delta_rdp", "phi_check", "budget_eps", "budget_delta", "rate", "steps",
              "sigma_tight", "sigma_rdp"],
    "accuracy": ["REFERENCE_DELTA", "tols", "brackets", "phi_values", "eps_lower", "eps_upper", "eps_phi",
                 "eps_rdp"],
    "accountant": ["q", "sigma", "delta", "budget_eps", "max_steps", "curve", "eps_at_checkpoint",
                   "eps_resumed", "steps_left", "steps_done", "eps_final", "eps_final_bounds"],
    "risk": ["eps", "delta", "fpr", "tpr", "tpr_at_1e3", "from_eps_delta", "advantage", "target_tpr",
             "target_fpr", "sigma", "tpr_calibrated", "pair_fpr", "pair_tpr"],
    "training": ["q", "sigma", "steps", "delta", "eps_poisson", "n", "batch_cap", "overflow_prob",
                 "delta_truncated", "eps_truncated", "eps_balls_in_bins", "eps_without_replacement", "users",
                 "eps_user", "eps_tuning_geometric",
                 "eps_tuning_poisson", "tree_levels", "tree_noise", "eps_tree"],
    "discrete": ["eps_tilde", "n", "m", "ks", "exact", "default", "phi", "br_bound", "worst_case", "delta_b",
                 "n_one", "eps_one_bounds", "d", "ns", "brackets_binomial"],
}

# Public modules a tutorial may import from (the package and the subpackages the README documents).
PUBLIC_MODULES = {"autoacct", "autoacct.zoo", "autoacct.calibrators", "autoacct.plotting"}

_EXPORT_CELL = """\
import json as _json
import numpy as _np
import autoacct as _autoacct

def _plain(v):
    if isinstance(v, dict):
        return [[_plain(k), _plain(x)] for k, x in v.items()]
    if isinstance(v, (list, tuple, _np.ndarray)):
        return [_plain(x) for x in v]
    if isinstance(v, (_np.floating, _np.integer)):
        return v.item()
    return v

print(_json.dumps({"__autoacct__": _autoacct.__file__, **{n: _plain(globals()[n]) for n in %r}}))
"""


@functools.cache
def executed(stem: str) -> tuple[nbformat.NotebookNode, dict]:
    """Run a notebook against this tree's package; return it and its exported variables."""
    path = NOTEBOOK_DIR / f"{stem}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(_EXPORT_CELL % (EXPORTS[stem],)))
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO)] + ([saved] if saved else []))
    try:
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved
    export = nb.cells.pop()
    stdout = "".join(o["text"] for o in export.outputs
                     if o.get("output_type") == "stream" and o.get("name") == "stdout")
    values = json.loads(stdout)
    return nb, {k: (dict(v) if k in _DICTS.get(stem, ()) else v) for k, v in values.items()}


# Exported dicts arrive as lists of [key, value] pairs (their keys are floats or ints).
_DICTS = {"quickstart": ("AUTODP", "eps_rdp", "eps_default", "eps_bounds", "eps_phi"),
          "dpsgd": ("eps_pld", "eps_rdp", "phi_check"), "accuracy": ("phi_values",)}


# ----- independent truths --------------------------------------------------------------------

def rdp_sgm_integer(q: float, sigma: float, alpha: int) -> float:
    """Renyi DP of the Poisson-subsampled Gaussian at an integer order (Mironov, Talwar and Zhang
    2019, the binomial expansion of the removal direction, which dominates at integer orders)."""
    k = np.arange(alpha + 1)
    log_terms = (special.gammaln(alpha + 1) - special.gammaln(k + 1) - special.gammaln(alpha - k + 1)
                 + (alpha - k) * math.log1p(-q) + k * math.log(q) + (k * k - k) / (2 * sigma * sigma))
    return float(special.logsumexp(log_terms)) / (alpha - 1)


def eps_sgm_rdp_integer(q: float, sigma: float, steps: int, delta: float) -> float:
    """RDP accountant over the integer orders 2..512, converted by Balle et al. (2020), Theorem 21."""
    return min(steps * rdp_sgm_integer(q, sigma, a) + math.log((a - 1) / a) - (math.log(delta) + math.log(a)) / (a - 1)
               for a in range(2, 513))


def sgm_one_step_delta(q: float, sigma: float, eps: float) -> float:
    """delta(eps) of one Poisson-subsampled Gaussian step under add/remove, in closed form: the
    privacy loss is monotone in the output, so each direction's hockey stick is a half-line."""
    s = sigma
    x = s * s * math.log((math.expm1(eps) + q) / q) + 0.5          # removal: loss(x) = eps
    remove = (1 - q) * stats.norm.sf(x / s) + q * stats.norm.sf((x - 1) / s) - math.exp(eps) * stats.norm.sf(x / s)
    add = 0.0
    if math.exp(-eps) > 1 - q:                                      # addition: loss(x) = -eps
        x = s * s * math.log((math.expm1(-eps) + q) / q) + 0.5
        add = stats.norm.cdf(x / s) - math.exp(eps) * ((1 - q) * stats.norm.cdf(x / s)
                                                      + q * stats.norm.cdf((x - 1) / s))
    return max(remove, add)


def two_outcome_delta(p_first: float, loss_first: float, loss_second: float, k: int, eps: float) -> float:
    """delta(eps) of k runs of a two-outcome pair: P-mass p_first on the first outcome, whose
    privacy loss is loss_first, the rest on the second."""
    i = np.arange(k + 1)                      # number of second outcomes
    loss = (k - i) * loss_first + i * loss_second
    w = stats.binom.pmf(i, k, 1 - p_first)
    return float(np.sum(w * np.where(loss > eps, -np.expm1(np.minimum(eps - loss, 0.0)), 0.0)))


@functools.cache
def dp_accounting_sgm(sigma: float, q: float, steps: int):
    """dp_accounting's pessimistic (connect-the-dots) PLD of DP-SGD, a peer upper bound."""
    pytest.importorskip("dp_accounting")
    logging.getLogger().setLevel(logging.ERROR)
    from dp_accounting.pld import privacy_loss_distribution as pld
    return pld.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=1e-4,
                                       use_connect_dots=True).self_compose(steps)


def pld_module():
    """dp_accounting's PLD module (skipping the test where dp_accounting is not installed)."""
    pytest.importorskip("dp_accounting")
    logging.getLogger().setLevel(logging.ERROR)
    from dp_accounting.pld import privacy_loss_distribution as pld
    return pld


def dpsgd_mechanism(q: float, sigma: float, steps: int):
    """autoacct's DP-SGD run, to check a notebook's stopping rule against the bound it relies on."""
    from autoacct import dpsgd
    return dpsgd(q, sigma, steps)


# ----- the notebooks are tutorials -----------------------------------------------------------

def test_notebooks_are_present():
    names = {p.name for p in NOTEBOOKS}
    assert {"quickstart.ipynb", "dpsgd.ipynb", "accuracy.ipynb", "discrete.ipynb",
            "accountant.ipynb", "risk.ipynb", "training.ipynb"} == names
    assert set(EXPORTS) == {p.stem for p in NOTEBOOKS}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_a_tutorial(path: Path):
    """Public API only, papers cited rather than internal references, no machine paths, and
    the stored outputs show neither errors nor warnings."""
    nb = nbformat.read(path, as_version=4)
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    text = "\n".join(c.source for c in nb.cells)
    assert not re.search(r"\bseed\b", text, flags=re.I)
    assert not re.search(r"(/work/|/home/|/Users/|/tmp/|[A-Z]:\\\\)", text)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert not re.search(r"\.\s*_\w", code), "a private attribute"
    for module, names in re.findall(r"^\s*from (autoacct\S*) import ([^\n]+)", code, flags=re.M):
        assert module in PUBLIC_MODULES, module
        assert not any(n.strip().startswith("_") for n in names.split(",")), names
    assert not re.search(r"^\s*import autoacct\.", code, flags=re.M)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error"
            assert not (out.get("output_type") == "stream" and out.get("name") == "stderr"), out.get("text")
            assert not re.search(r"(/work/|/home/|/Users/|site-packages)", json.dumps(out.get("text", ""))), out


@pytest.mark.parametrize("stem", [p.stem for p in NOTEBOOKS])
def test_notebook_runs_against_this_tree(stem: str):
    nb, values = executed(stem)
    errors = [out for cell in nb.cells if cell.cell_type == "code"
              for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors
    assert Path(values["__autoacct__"]).resolve().is_relative_to(REPO / "autoacct")


# ----- what the notebooks compute is true ----------------------------------------------------

def test_quickstart_values():
    _, v = executed("quickstart")
    mu, eps0 = math.sqrt(3 / 25 + 5 / 64), 0.1
    p = math.exp(eps0) / (1 + math.exp(eps0))

    def delta_exact(eps: float) -> float:       # mu-GDP composed with randomised response
        return p * gaussian_delta_closed(mu, eps - eps0) + (1 - p) * gaussian_delta_closed(mu, eps + eps0)

    for d, printed in v["AUTODP"].items():
        assert v["eps_rdp"][d] == pytest.approx(printed, rel=1e-8)       # autodp's output
        truth = eps_from_delta_closed(delta_exact, d, 4.0)
        lower, upper = v["eps_bounds"][d]
        assert lower <= truth <= upper <= truth * (1 + 1e-3)
        assert v["eps_default"][d] == upper
        assert truth * (1 - 1e-12) <= v["eps_phi"][d] <= truth * (1 + 1e-3)
        assert upper < v["eps_rdp"][d]

    # The exact tradeoff curve by Neyman-Pearson: reject when the loss exceeds c.
    c = np.linspace(-20, 20, 400_001)
    s = mu * mu / 2
    alpha = (1 - p) * stats.norm.sf((c - eps0 + s) / mu) + p * stats.norm.sf((c + eps0 + s) / mu)
    beta = p * stats.norm.cdf((c - eps0 - s) / mu) + (1 - p) * stats.norm.cdf((c + eps0 - s) / mu)
    order = np.argsort(alpha)
    fpr = np.array(v["fpr"])
    exact = np.interp(fpr, alpha[order], beta[order])       # chords: above the convex curve
    tight, loose = np.array(v["tradeoff_default"]), np.array(v["tradeoff_rdp"])
    assert np.all(tight <= exact + 1e-12) and np.all(tight >= exact - 1e-4)
    assert np.all(loose <= tight + 1e-9)         # both lower bounds; the RDP one is looser

    a = np.array(v["alphas"])
    rr = np.log(p**a * (1 - p) ** (1 - a) + (1 - p) ** a * p ** (1 - a)) / (a - 1)
    np.testing.assert_allclose(v["rdp_composed"], a * (3 / 25 + 5 / 64) / 2 + rr, rtol=1e-12)


def test_dpsgd_values():
    _, v = executed("dpsgd")
    q, delta = v["q"], v["delta"]
    lower, upper = v["eps_one_step_bounds"]
    truth = eps_from_delta_closed(lambda e: sgm_one_step_delta(q, v["sigma"], e), delta, 1.0)
    assert lower <= truth <= upper <= truth * (1 + 1e-3)

    for s in v["sigmas"]:
        pld, rdp = np.array(v["eps_pld"][s]), np.array(v["eps_rdp"][s])
        assert np.all(np.diff(pld) > 0)
        assert np.all(pld < rdp)
        for k, e_rdp in zip(v["ks"], rdp):
            independent = eps_sgm_rdp_integer(q, s, k, delta)    # integer orders only: a little looser
            assert independent * 0.95 <= e_rdp <= independent * (1 + 1e-9)

    for (lo, up), d_rdp in zip(v["delta_brackets"], v["delta_rdp"]):
        assert lo <= up <= d_rdp and up - lo <= 1e-2 * up
    for lo, up, e_phi in v["phi_check"].values():
        assert lo <= e_phi <= up * (1 + 1e-3)
    assert v["sigma_tight"] < v["sigma_rdp"]
    assert eps_sgm_rdp_integer(v["rate"], v["sigma_rdp"], v["steps"], v["budget_delta"]) <= v["budget_eps"] * 1.01


def test_dpsgd_values_against_dp_accounting():
    _, v = executed("dpsgd")
    for k, (lo, up, _) in v["phi_check"].items():
        peer = dp_accounting_sgm(1.0, v["q"], k).get_epsilon_for_delta(v["delta"])
        assert lo <= peer * (1 + 1e-9) and peer <= up * (1 + 1e-3)
    for k, (lo, up) in zip(v["ks_delta"], v["delta_brackets"]):
        if k <= 1000:
            peer = dp_accounting_sgm(1.0, v["q"], k).get_delta_for_epsilon(1.0)
            assert lo <= peer * (1 + 1e-9) and peer <= up * 1.01
    # The calibrated noise meets the budget by the peer's account too, and 1% less does not.
    sgm = functools.partial(dp_accounting_sgm, q=v["rate"], steps=v["steps"])
    assert sgm(v["sigma_tight"]).get_epsilon_for_delta(v["budget_delta"]) <= v["budget_eps"] * (1 + 1e-3)
    assert sgm(0.99 * v["sigma_tight"]).get_epsilon_for_delta(v["budget_delta"]) > v["budget_eps"] * (1 + 1e-3)


def test_accountant_values():
    _, v = executed("accountant")
    q, sigma, delta, budget = v["q"], v["sigma"], v["delta"], v["budget_eps"]
    steps, eps = zip(*v["curve"])
    assert list(steps[:5]) == [200, 400, 600, 800, 1000] and np.all(np.diff(eps) > 0)
    assert v["eps_resumed"] == v["eps_at_checkpoint"] == eps[4]     # the JSON round trip is exact
    for k, e in v["curve"]:
        # The Renyi-DP accountant at integer orders (independent of autoacct) is looser.
        assert e <= eps_sgm_rdp_integer(q, sigma, k, delta)
    # Stopped at the budget: the planned steps were taken, and they fit.
    assert v["steps_done"] == min(1000 + v["steps_left"], v["max_steps"]) == steps[-1]
    lower, upper = v["eps_final_bounds"]
    assert upper == v["eps_final"] == eps[-1] <= budget and lower <= upper <= lower * (1 + 1e-3)
    # One more step would not have fit (the certified bound that remaining() promises).
    assert dpsgd_mechanism(q, sigma, v["steps_done"] + 1).epsilon(delta) > budget


def test_accountant_values_against_dp_accounting():
    _, v = executed("accountant")
    curve = dict((k, e) for k, e in v["curve"])
    for k in (1000, v["steps_done"]):
        peer = dp_accounting_sgm(v["sigma"], v["q"], k).get_epsilon_for_delta(v["delta"])
        # Both are upper bounds; ours is within 0.1% of the truth, the peer's within its grid's error.
        assert curve[k] <= peer * (1 + 1e-3) and peer <= curve[k] * 1.01


def test_accuracy_values():
    _, v = executed("accuracy")
    reference = v["REFERENCE_DELTA"]
    assert reference == 0.0496014103163          # Koskela, Jalko and Honkela (2020), Tables 1 and 2
    widths = []
    for tol, (lower, upper) in zip(v["tols"], v["brackets"]):
        assert lower <= reference <= upper
        assert upper - lower <= 10 * tol * upper
        widths.append(upper - lower)
    assert widths[-1] < 1e-7 and np.all(np.diff(widths) < 0)
    phi = sorted(v["phi_values"].items(), reverse=True)
    for tol, value in phi:
        assert reference <= value <= reference * (1 + tol)
    assert phi[-1][1] < phi[0][1]

    lower, upper = v["eps_lower"], v["eps_upper"]
    assert lower <= upper <= lower * (1 + 1e-3)
    assert lower <= v["eps_phi"] <= upper * (1 + 1e-3)
    independent = eps_sgm_rdp_integer(0.01, 1.5, 10_000, 1e-5)
    assert independent * 0.95 <= v["eps_rdp"] <= independent * (1 + 1e-9)


def test_accuracy_values_against_dp_accounting():
    _, v = executed("accuracy")
    peer = dp_accounting_sgm(1.5, 0.01, 10_000).get_epsilon_for_delta(1e-5)
    assert v["eps_lower"] <= peer <= v["eps_upper"] * (1 + 1e-3)


def test_discrete_values():
    _, v = executed("discrete")
    e, n, m = v["eps_tilde"], v["n"], v["m"]
    # The exponential mechanism on X (m zeros of n) and on Y (one zero fewer), from its definition.
    w_x = np.exp(e * np.array([m, n - m]))
    w_y = np.exp(e * np.array([m - 1, n - m]))
    px, py = w_x / w_x.sum(), w_y / w_y.sum()
    s0, s1 = math.log(px[0] / py[0]), math.log(px[1] / py[1])
    exact = np.array([max(two_outcome_delta(px[0], s0, s1, k, 1.0), two_outcome_delta(py[1], -s1, -s0, k, 1.0))
                      for k in v["ks"]])
    np.testing.assert_allclose(v["exact"], exact, rtol=1e-9)
    for routed in (np.array(v["default"]), np.array(v["phi"])):
        assert np.all(routed >= exact * (1 - 1e-9))
        np.testing.assert_allclose(routed, exact, rtol=2e-3)
    # Dong, Durfee and Rogers (2020): the worst common t of the generalised randomised response
    # (its profile wiggles in t with period e / k, so the grid is finer than that).
    bound = np.array([max(two_outcome_delta(min(max((math.exp(e) - math.exp(t)) / math.expm1(e), 0.0), 1.0),
                                            t, t - e, k, 1.0)
                          for t in np.union1d(np.linspace(0.0, e, 40 * k + 1), [s0, -s1]))
                      for k in v["ks"]])
    assert np.all(exact <= bound * (1 + 1e-9))
    np.testing.assert_allclose(v["br_bound"], bound, rtol=1e-3)
    assert np.all(bound <= np.array(v["worst_case"]) * (1 + 1e-9))

    # One binomial coordinate: (Bin(n, 1/2) + 1, Bin(n, 1/2)), summed exactly.
    nn = v["n_one"]
    t = np.arange(nn + 2)
    p_out, q_out = stats.binom.pmf(t - 1, nn, 0.5), stats.binom.pmf(t, nn, 0.5)

    def delta_one(eps: float) -> float:
        return float(max(np.maximum(p_out - math.exp(eps) * q_out, 0).sum(),
                         np.maximum(q_out - math.exp(eps) * p_out, 0).sum()))

    truth = eps_from_delta_closed(delta_one, v["delta_b"], 1.0)
    lower, upper = v["eps_one_bounds"]
    assert lower <= truth <= upper <= truth * (1 + 1e-3)

    # d coordinates against the analytic Gaussian of equal variance (Balle and Wang 2018).
    for nn, (lower, upper) in zip(v["ns"], v["brackets_binomial"]):
        gaussian = gaussian_eps_closed(math.sqrt(v["d"]) / math.sqrt(nn / 4), v["delta_b"])
        assert lower * (1 - 1e-3) <= gaussian <= upper * (1 + 1e-3)
        assert upper - lower <= 1e-3 * upper


def test_risk_values():
    """The ROC bound of the notebook's DP-SGD run against dp_accounting's (eps, delta), the
    DiscretePair's ROC against its Neyman-Pearson curve, the calibration against its target."""
    _, v = executed("risk")
    fpr, tpr = np.array(v["fpr"]), np.array(v["tpr"])
    assert np.all(tpr >= fpr) and np.all(np.diff(tpr) >= 0) and np.all(tpr <= 1)
    # Every attack obeys TPR <= e^eps FPR + delta at every (eps, delta) the run satisfies; the
    # curve is tight (0.1% on the eps scale), so it lies below that line for dp_accounting's eps too.
    peer = dp_accounting_sgm(1.1, 0.01, 1000).get_epsilon_for_delta(v["delta"])
    assert v["eps"] <= peer * (1 + 1e-3)
    assert np.all(tpr <= np.exp(peer * (1 + 1e-3)) * fpr + v["delta"])
    assert v["tpr_at_1e3"] == pytest.approx(float(np.interp(1e-3, fpr, tpr)), rel=0.05)
    assert v["tpr_at_1e3"] <= v["from_eps_delta"]
    assert v["tpr_at_1e3"] - 1e-3 <= v["advantage"] <= 1.0
    assert v["tpr_calibrated"] <= v["target_tpr"] and v["sigma"] < 1.1
    truth = composed_pair_tpr((0.5, 0.3, 0.2), (0.2, 0.3, 0.5), 10, np.array(v["pair_fpr"]))
    pair = np.array(v["pair_tpr"])
    assert np.all(pair >= truth - 1e-14)
    # Its losses +-log 2.5 are not exact lattice points in floats: accurate to the default tol.
    np.testing.assert_allclose(pair, truth, atol=1e-6, rtol=1e-3)


def tuning_geometric_rdp_integer(q: float, sigma: float, steps: int, mean: float, delta: float) -> float:
    """Papernot and Steinke (2022), Theorem 2 for a geometric number of runs (eta = 1, gamma =
    1 / mean), on the integer-order RDP of DP-SGD (Mironov, Talwar and Zhang 2019), converted by
    Balle et al. (2020): a valid upper bound on a coarser grid of orders."""
    orders = range(2, 257)
    rdp = {a: steps * rdp_sgm_integer(q, sigma, a) for a in orders}
    free = min((1 - 1 / a) * rdp[a] + math.log(mean) / a for a in orders)
    return min(rdp[a] + math.log(mean) / (a - 1) + 2 * free + math.log((a - 1) / a)
               - (math.log(delta) + math.log(a)) / (a - 1) for a in orders)


def test_training_values():
    """Each pipeline's epsilon against an independent computation: dp_accounting's PLDs (Poisson,
    the two-example mixture, replace-one), mpmath's binomial tail, the integer-order RDP of
    Papernot and Steinke's tuning bound and of the loose user-level pair, the Gaussian closed form."""
    import mpmath

    _, v = executed("training")
    q, sigma, steps, delta = v["q"], v["sigma"], v["steps"], v["delta"]
    lo, up = v["eps_poisson"]
    peer = dp_accounting_sgm(sigma, q, steps).get_epsilon_for_delta(delta)
    assert lo <= peer * (1 + 1e-9) and up >= peer * (1 - 1e-3) and up <= lo * (1 + 1e-3)
    # Truncated Poisson: Pr(Binomial(n + 1, q) > cap) = I_q(cap + 1, n - cap), regularised beta.
    tail = float(mpmath.betainc(v["batch_cap"] + 1, v["n"] + 1 - v["batch_cap"], 0, q, regularized=True))
    assert v["overflow_prob"] == pytest.approx(steps * tail, rel=1e-6)
    assert v["delta_truncated"] == pytest.approx(delta + (1 + math.exp(up)) * steps * tail, rel=1e-12)
    # The library's truncated Poisson: at most dp_accounting's truncated-Gaussian PLD (whose pair is
    # larger, see tests/subsampling/test_truncated.py), at least Poisson's lower end (overflow only adds).
    truncated = pld_module().from_truncated_subsampled_gaussian_mechanism(
        v["n"] + 1, q, v["batch_cap"], sigma, value_discretization_interval=1e-3)
    assert lo <= v["eps_truncated"] <= truncated.self_compose(steps).get_epsilon_for_delta(delta) * (1 + 1e-3)
    # Balls in bins: t = 1/q steps an epoch, steps / t epochs; the lower end is above the epochs' summed
    # outputs composed (a post-processing of the run), the Gaussian at mu = sqrt(epochs) / (sigma sqrt(t)),
    # in closed form; the bracket is within the default tol, and below Poisson's.
    t = round(1 / q)
    b_lo, b_up = v["eps_balls_in_bins"]
    assert gaussian_eps_closed(math.sqrt(steps / t) / (sigma * math.sqrt(t)), delta) < b_lo <= b_up
    assert b_up <= b_lo * (1 + 1e-3) and b_up < lo
    # Without replacement: at most dp_accounting's replace-one accounting (a looser pair).
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution as pld
    replace = pld.from_gaussian_mechanism(sigma, sensitivity=2.0, sampling_prob=q, value_discretization_interval=1e-3,
                                          neighboring_relation=NeighboringRelation.REPLACE_ONE)
    assert v["eps_without_replacement"][1] <= replace.self_compose(steps).get_epsilon_for_delta(delta)
    # Its lower end is the attained Poisson-subsampled pair's at noise sigma / 2: below dp_accounting's
    # pessimistic estimate of that pair, and within 0.2% of it.
    attained = dp_accounting_sgm(sigma / 2, q, steps).get_epsilon_for_delta(delta)
    assert attained * (1 - 2e-3) <= v["eps_without_replacement"][0] <= attained * (1 + 1e-9)
    assert v["eps_without_replacement"][0] < v["eps_without_replacement"][1]
    # User level: one example is the example level; two against dp_accounting's mixture of
    # N(0), N(1), N(2) with binomial weights; five below the loose pair's integer-order RDP bound.
    assert v["users"] == [1, 2, 5] and v["eps_user"][0] == [lo, up]
    two = pld.from_mixture_gaussian_mechanism(sigma, [0.0, 1.0, 2.0], [(1 - q) ** 2, 2 * q * (1 - q), q * q],
                                              value_discretization_interval=2e-3)
    ref = two.self_compose(steps).get_epsilon_for_delta(delta)
    assert v["eps_user"][1][0] <= ref * (1 + 1e-9) and v["eps_user"][1][1] >= ref * (1 - 2e-3)
    q5 = 1 - (1 - q) ** 5
    assert v["eps_user"][2][1] <= eps_sgm_rdp_integer(q5, sigma / 5, steps, delta)
    assert up < v["eps_user"][1][0] and v["eps_user"][1][1] < v["eps_user"][2][0]
    # Tuning: within the same theorem evaluated on integer orders only.
    assert v["eps_tuning_geometric"] <= tuning_geometric_rdp_integer(q, sigma, steps, 10.0, delta) * (1 + 1e-9)
    assert 0 < v["eps_tuning_poisson"] < math.inf
    # Tree aggregation: ceil(log2(steps + 1)) levels, exactly sqrt(levels) / z-GDP, calibrated to Poisson's eps.
    assert v["tree_levels"] == math.ceil(math.log2(steps + 1))
    assert v["eps_tree"] == pytest.approx(gaussian_eps_closed(math.sqrt(v["tree_levels"]) / v["tree_noise"], delta),
                                          rel=1e-6)
    assert up * 0.99 <= v["eps_tree"] <= up
