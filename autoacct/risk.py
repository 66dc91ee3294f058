"""What a privacy guarantee means for an attacker: membership-inference risk, certified.

A membership-inference attack on a mechanism M tests, from one output, whether
the output came from D or from a neighbour D' (one record added or removed).
Its false-positive rate a and true-positive rate are the type I error and one
minus the type II error of that test, so by Neyman and Pearson every attack has

    TPR(a) <= 1 - f(a),

f being the tradeoff function of M (Dong, Roth and Su 2022): the smallest type
II error at type I error a over both orders of the neighbouring pair. Every
view here is derived from the library's certified bounds, in the safe direction
for the data subject:

* :func:`tpr`: an upper bound on every attack's TPR at FPR a, 1 - (certified lower
  bound on f(a)), rounded up;
* :func:`tpr_bounds`: (lower, upper) around max over attacks of TPR(a); the lower end
  from the accountant's lower PLDs (see :func:`_tradeoff_above`);
* :func:`advantage`: an upper bound on max_a (TPR(a) - a) = delta(0), the total
  variation distance between the pair (the hockey-stick divergence at eps = 0);
* :func:`gdp_mu`: the smallest certified mu with M mu-GDP, and a central estimate;
* :func:`pld`: the certified discrete PLDs the FFT accountant composed, as arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import optimize, special

from autoacct import _validation as check
from autoacct import routes, shortcuts
from autoacct.converters.rdp import rdp_to_delta
from autoacct.errors import BudgetExceeded, RouteUnavailableError
from autoacct.exactness import MACHINE_EPSILON, outward
from autoacct.pld.profiles import DiscreteProfile
from autoacct.rdp_curves import max_divergence, rdp_of

if TYPE_CHECKING:
    from autoacct.mechanism import Mechanism

#: delta at which :func:`gdp_mu`'s central estimate matches the mechanism's profile.
ESTIMATE_DELTA = 1e-5
#: Points of the eps grid on which :func:`gdp_mu` checks delta(eps) <= delta_mu(eps).
_GDP_GRID = 20_001
#: Points at which the mechanism's profile is queried before the fine grid is read from the
#: composed PLDs (the queries make the tilted PLDs that certify the small deltas).
_GDP_PROBES = 24
#: Largest mu :func:`gdp_mu` certifies; beyond it the mechanism is reported as not mu-GDP (inf).
_MU_MAX = 1e3
#: Unit roundoff.
_EPS = MACHINE_EPSILON
#: Relative safety applied to the closed-form GDP profile, well above its floating-point error.
_GDP_SAFETY = 1e-9
#: Largest argument of math.exp that does not overflow (with a margin).
_LOG_MAX = 709.0


# ----- tradeoff and ROC ------------------------------------------------------------------------

def tpr(m: Mechanism, fpr: Any, via: str = "auto") -> Any:
    """Upper bound on every membership-inference attack's TPR at false-positive rate ``fpr``.

    1 - f(fpr) with f the certified lower bound ``m.tradeoff(fpr, via)``, in
    [fpr, 1] (an attack can always reach TPR = FPR by guessing), rounded up. An
    array of fpr in [0, 1] gives an array; a number gives a float.
    """
    a = check.real_array("fpr", fpr, low=0.0, high=1.0)
    f = np.asarray(m.tradeoff(a, via=via), dtype=float)
    return outward(np.clip(1.0 - f, a, 1.0), upper=True, cap=1.0)


def tpr_bounds(m: Mechanism, fpr: Any, tol: float | None = None) -> tuple[Any, Any]:
    """(lower, upper) around the largest TPR any attack reaches at FPR ``fpr``.

    The upper end is :func:`tpr` (made no larger by the accountant's curve at
    accuracy ``tol``); the lower end is exact for mu-GDP mechanisms, comes from
    the composed lower PLDs where the accountant's pairs are attained
    (``tight``), else from those of the pairs the mechanism attains at every run
    (``Mechanism.attained_parts``: a composition of steps sampled without
    replacement, whose Poisson-like pair one fixed pair of datasets attains), and
    is ``fpr`` (what guessing reaches) otherwise.
    """
    a = check.real_array("fpr", fpr, low=0.0, high=1.0)
    t = routes.tolerance(tol)
    upper = np.asarray(tpr(m, a), dtype=float)
    lower = a.copy()
    mu = m.exact_gdp_mu()
    if mu is not None:
        lower = np.maximum(lower, special.ndtr(special.ndtri(a) + mu))
    elif "pld" in m.routes:
        try:
            profs = _composed(m, t)
        except BudgetExceeded:
            profs = []
        if profs:
            curve = np.max([up.power(a) for up, _ in profs], axis=0)
            upper = np.minimum(upper, outward(np.clip(curve, a, 1.0), upper=True, cap=1.0))
            lows = [low for _, low in profs] if _accountant(m).tight else _attained_lows(m, t)
            if lows:
                above = np.min([_tradeoff_above(low, a) for low in lows], axis=0)
                lower = np.maximum(lower, 1.0 - above)
    lower = np.minimum(outward(np.clip(lower, a, 1.0), upper=False, cap=1.0), upper)
    return (float(lower), float(upper)) if lower.ndim == 0 else (lower, upper)


def _tradeoff_above(low: Any, alpha: np.ndarray) -> np.ndarray:
    """An upper bound on one direction's tradeoff function from its lower profile.

    The tradeoff function is the convex conjugate of the privacy profile over all
    eps (negative ones included): f(a) = sup_eps [1 - delta(eps) - e^eps a]. Inside a
    cell [x_i, x_{i+1}] of the lattice the lower profile is L(eps) = A - e^eps B + c
    (suffix sums of the cell, error frozen at the cell's left end), and delta >= L, so
    the bracket is at most 1 - L(eps) - e^eps a = const + e^eps (B - a): monotone in
    e^eps, hence largest at an end of the cell (:meth:`DiscreteProfile.cell_ends`).
    Left of the lattice the same holds with the first suffix sums (see below); right of
    it the bracket is at most 1 - e^{x_n} a. A lower profile
    that says nothing (not a composed PLD) gives the trivial 1 - a.
    """
    trivial = 1.0 - alpha
    if not isinstance(low, DiscreteProfile) or len(low.x) < 2:
        return trivial
    x = low.x
    at_left, at_right = low.cell_ends()
    # Left of the lattice, untilted (error term constant): L(eps) = A_0 - e^eps B_0 + c exactly,
    # affine in e^eps in (0, e^{x_0}], so the bracket peaks at an end; at e^eps -> 0 that is
    # 1 - L far to the left (e^eps B_0 underflows to 0 there). Tilted: 1 - L(x_0).
    far = float(low.delta(np.array([x[0] - 800.0]))[0]) if low.lam == 0.0 else math.nan

    # (e^{x_0} overflows for a lattice starting far right: the bracket there is -inf)
    scale = math.exp(float(x[0])) if float(x[0]) < _LOG_MAX else math.inf

    def left_of(a: float) -> float:
        if math.isnan(far):
            return 1.0 - float(at_left[0])
        return max(1.0 - float(at_left[0]) - scale * a if a > 0 else 1.0 - float(at_left[0]), 1.0 - far)

    # The lattice's points may lie D = low.slack from their losses: delta(eps) >= L(eps + D),
    # so the bracket at eps is at most the lattice's at t = eps + D with e^t a e^{-D}: the
    # lattice's brackets are read at a e^{-D}, rounded down.
    flat = np.nextafter(alpha.ravel() * math.exp(-low.slack), 0.0) if low.slack > 0.0 else alpha.ravel()
    vals = np.empty(flat.shape)
    with np.errstate(over="ignore"):
        grow_left, grow_right = np.exp(np.minimum(x[:-1], 700.0)), np.exp(np.minimum(x[1:], 700.0))
        for j, a in enumerate(flat):
            cells = np.maximum(1.0 - at_left - grow_left * a, 1.0 - at_right - grow_right * a)
            right = 1.0 - math.exp(min(float(x[-1]), 700.0)) * a
            vals[j] = max(float(np.max(cells)), left_of(float(a)), right)
    # Three roundings per bracket at most: moved up by a few units of 1 (the bracket is <= 1).
    out = vals.reshape(alpha.shape) + 4.0 * _EPS
    return np.minimum(np.maximum(out, 0.0), trivial)


# ----- advantage ----------------------------------------------------------------------------

def advantage(m: Mechanism, tol: float | None = None) -> float:
    """Upper bound on the membership advantage max_a (TPR(a) - a) of every attack.

    max_a (1 - f(a) - a) is delta(0), the total variation distance between the
    pair's two output laws (Kairouz, Oh and Viswanath 2015), so the certified
    delta at eps = 0 is a certified upper bound; in [0, 1].
    """
    return float(m.delta(0.0, tol=tol))


def advantage_bounds(m: Mechanism, tol: float | None = None) -> tuple[float, float]:
    """(lower, upper) around the largest membership advantage: the delta bounds at eps = 0."""
    lo, up = m.delta_bounds(0.0, tol=tol)
    return float(lo), float(up)


# ----- Gaussian DP --------------------------------------------------------------------------

def gdp_delta(mu: float, eps: np.ndarray) -> np.ndarray:
    """delta_mu(eps) of mu-GDP (Balle and Wang 2018, Theorem 8; Dong, Roth and Su 2022,
    Corollary 2.13): Phi(-eps / mu + mu / 2) - e^eps Phi(-eps / mu - mu / 2), in log space
    so that values down to 1e-300 keep their relative accuracy."""
    eps = np.asarray(eps, dtype=float)
    la = special.log_ndtr(-eps / mu + mu / 2.0)
    lb = special.log_ndtr(-eps / mu - mu / 2.0)
    with np.errstate(divide="ignore", under="ignore"):
        return np.exp(la) * -np.expm1(np.minimum(eps + lb - la, 0.0))


def _gdp_reach(mu: float) -> float:
    """An eps beyond which delta_mu(eps) < MIN_DELTA (log_ndtr(-38.5) < log 1e-300 + log 2)."""
    return mu * (38.5 + mu / 2.0)


def gdp_mu(m: Mechanism, tol: float | None = None) -> tuple[float, float]:
    """(certified, estimate): the smallest mu with m certified mu-GDP, and a central estimate.

    Certified: m is mu-GDP iff delta_m(eps) <= delta_mu(eps) for every eps >= 0
    (Dong, Roth and Su 2022, Corollary 2.13). Both sides are non-increasing in
    eps, so on a grid e_0 = 0 < ... < e_N the condition holds on [e_i, e_{i+1}]
    when delta_up(e_i) <= delta_mu(e_{i+1}), delta_up being the certified upper
    bound. Deltas below MIN_DELTA (1e-300) are not resolved (no query of the library
    goes there): what is certified is delta_m(eps) <= max(delta_mu(eps), MIN_DELTA) for
    every eps >= 0, the grid running to e_N, beyond which delta_mu < MIN_DELTA.
    The smallest such mu on the grid is found by bisection (the condition is
    monotone in mu) and returned rounded up; inf when no mu <= 1000 passes.

    Estimate: the mu whose GDP profile passes through the mechanism's profile at
    delta = 1e-5, i.e. delta_mu(eps_m(1e-5)) = 1e-5 with eps_m the certified eps.

    An exactly mu-GDP mechanism (hook ``exact_gdp_mu``) returns (mu, mu).
    """
    t = routes.tolerance(tol)
    mu_exact = m.exact_gdp_mu()
    if mu_exact is not None:
        return float(mu_exact), float(mu_exact)
    estimate = _gdp_estimate(float(m.epsilon(ESTIMATE_DELTA, tol=t)))
    if estimate == 0.0 and float(m.delta(0.0, tol=t)) == 0.0:
        return 0.0, 0.0
    hi = max(2.0 * estimate, 0.5) if math.isfinite(estimate) else _MU_MAX
    reach = _gdp_reach(min(2.0 * hi, _MU_MAX))
    grid = np.linspace(0.0, reach, _GDP_GRID)
    up = _profile_upper(m, grid, t)

    def passes(mu: float) -> bool:
        # delta_m <= max(delta_mu, MIN_DELTA) on every cell; beyond e_N, delta_mu < MIN_DELTA.
        floor = np.maximum(gdp_delta(mu, grid[1:]) * (1.0 - _GDP_SAFETY), routes.MIN_DELTA)
        return bool(np.all(up[:-1] <= floor) and up[-1] <= routes.MIN_DELTA)

    lo = 0.0
    while not passes(hi):
        if hi >= _MU_MAX:
            return math.inf, estimate
        lo, hi = hi, min(2.0 * hi, _MU_MAX)
        if _gdp_reach(hi) > reach:
            # The larger range, queried afresh. lo only brackets the bisection: what is
            # certified is that the returned mu passes on the grid in use.
            reach = _gdp_reach(min(2.0 * hi, _MU_MAX))
            grid = np.linspace(0.0, reach, _GDP_GRID)
            up = _profile_upper(m, grid, t)
    while hi - lo > 1e-6 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if passes(mid) else (mid, hi)
    return float(outward(hi, upper=True)), estimate


def _gdp_estimate(eps: float) -> float:
    """The mu with delta_mu(eps) = ESTIMATE_DELTA (0 when eps is 0, inf when eps is)."""
    if eps <= 0.0:
        return 0.0
    if not math.isfinite(eps):
        return math.inf

    def gap(mu: float) -> float:
        d = float(gdp_delta(mu, np.array(eps)))
        return (math.log(d) if d > 0.0 else -math.inf) - math.log(ESTIMATE_DELTA)

    lo, hi = 1e-3, 1.0
    while gap(hi) < 0.0 and hi < _MU_MAX:
        hi *= 2.0
    if gap(lo) > 0.0 or gap(hi) < 0.0:
        return lo if gap(lo) > 0.0 else math.inf
    return float(optimize.brentq(gap, lo, hi, xtol=1e-12, rtol=1e-12))


def _profile_upper(m: Mechanism, grid: np.ndarray, tol: float) -> np.ndarray:
    """Certified upper bounds on delta at every grid point, cheaply.

    For a composition on the FFT route the mechanism is first queried at a few
    points (which composes the PLDs, tilted towards the small deltas); the fine
    grid is then read from every composed PLD made (the accountant's best bound,
    no new FFT) and combined with the queried values by monotonicity. Otherwise
    the grid is asked of the mechanism directly (closed forms, RDP conversion).
    """
    if "pld" not in m.routes and "rdp" not in m.routes or shortcuts.closed_profiles(m) is not None:
        return np.asarray(m.delta(grid, tol=tol), dtype=float)
    probes = np.linspace(grid[0], grid[-1], _GDP_PROBES)
    at_probes = np.asarray(m.delta(probes, tol=tol), dtype=float)
    # delta(e) <= delta(probe) for every probe at or below e (the profile is non-increasing).
    best = at_probes[np.searchsorted(probes, grid, side="right") - 1]
    if "pld" in m.routes:
        best = np.minimum(best, _accountant(m).best_delta(grid)[1])
    if "rdp" in m.routes:
        # The RDP conversion at the best order of a fixed grid (unpolished: one pass for all eps).
        rdp = rdp_to_delta(lambda alpha: rdp_of(m, alpha), grid, polish=False)
        best = np.minimum(best, np.where(grid >= max_divergence(m), 0.0, rdp))
    return np.asarray(best, dtype=float)


# ----- the composed PLDs ----------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class PrivacyLossDistribution:
    """One direction of a mechanism's certified discrete PLD, as composed by the FFT accountant.

    The losses are ``losses[i] = (offset + i) h``. ``pmf_upper`` is the upper
    (pessimistic, connect-the-dots) PLD: with its mass ``inf_mass`` at +inf
    (which also holds the mass composed above the window) and the accounted
    rounding and wrap-around error c e^{-rate eps} (``error_log_scale`` = log c,
    ``error_rate`` = rate: the composed law is held tilted by e^{-rate x} while
    composing, rate 0 when it is not),

        delta_upper(eps) = sum_i max(0, 1 - e^{eps - losses[i]}) pmf_upper[i]
                           + inf_mass + c e^{-rate eps}

    is the certified upper bound of this direction, before the rounding margin
    of its floating-point sums. ``pmf_lower`` (with ``inf_mass_lower`` and
    minus ``error_log_scale_lower``) gives the certified lower bound the same
    way; it is all zeros when the accountant has no lower PLD (pairs not attained,
    or a lower bound by cumulants only). Masses are clipped at 0 as the profiles
    clip them; they include the FFT's round-off (masses near 1e-17 where the law has
    none, visible on a log axis), which the error term accounts for.

    Attributes
    ----------
    direction:
        "remove" (the forward law, L = log dP/dQ under P) or "add" (the backward law).
    h, offset, losses, pmf_upper, pmf_lower, inf_mass, inf_mass_lower:
        The lattice and the masses, as above.
    error_log_scale, error_rate, error_log_scale_lower, error_rate_lower:
        The accounted error term c e^{-rate eps} of each side (log c and rate).
    tol:
        The accuracy the PLDs were composed at.
    """

    direction: str
    h: float
    offset: int
    losses: np.ndarray
    pmf_upper: np.ndarray
    pmf_lower: np.ndarray
    inf_mass: float
    inf_mass_lower: float
    error_log_scale: float
    error_log_scale_lower: float
    error_rate: float
    error_rate_lower: float
    tol: float


def pld(m: Mechanism, tol: float | None = None) -> tuple[PrivacyLossDistribution, PrivacyLossDistribution]:
    """(remove, add): the certified discrete PLDs of both directions of the composed mechanism.

    Taken from the FFT accountant's composition at accuracy ``tol`` (the one
    its tradeoff curve reads). A symmetric mechanism composes one direction,
    which then stands for both. Raises RouteUnavailableError for a mechanism
    without loss parts.
    """
    t = routes.tolerance(tol)
    if "pld" not in m.routes:
        raise RouteUnavailableError(f"{m.name} has no privacy-loss laws; available routes: {m.routes}")
    try:
        profs = _composed(m, t)
    except BudgetExceeded as exc:
        raise RuntimeError(f"the composed PLDs do not fit the resource budget ({exc}); "
                           "raise it with autoacct.limits() or pass a larger tol") from exc
    out = [_export(name, up, low, t) for name, (up, low) in zip(("remove", "add"), profs)]
    if len(out) == 1:
        out.append(_export("add", *profs[0], t))
    return out[0], out[1]


def _masses(p: DiscreteProfile) -> np.ndarray:
    """p_i = p~_i e^{K - lam x_i}: the masses a profile holds tilted, untilted."""
    with np.errstate(divide="ignore", over="ignore"):
        logs = np.log(np.maximum(p.tilted, 0.0)) + p.log_k - p.lam * p.x
    return np.exp(np.minimum(logs, 0.0))


def _export(direction: str, up: DiscreteProfile, low: Any, tol: float) -> PrivacyLossDistribution:
    start, stop = up.start, up.start + len(up.tilted)
    lower_ok = isinstance(low, DiscreteProfile) and math.isclose(low.h, up.h, rel_tol=1e-12)
    if lower_ok:
        start, stop = min(start, low.start), max(stop, low.start + len(low.tilted))
    n = stop - start
    pu = np.zeros(n)
    pu[up.start - start:up.start - start + len(up.tilted)] = _masses(up)
    pl = np.zeros(n)
    inf_low, log_c_low, lam_low = 0.0, -math.inf, 0.0
    if lower_ok:
        pl[low.start - start:low.start - start + len(low.tilted)] = _masses(low)
        inf_low, log_c_low, lam_low = float(low.c0), low.error_log_scale, float(low.lam)
    return PrivacyLossDistribution(
        direction=direction, h=float(up.h), offset=int(start), losses=(start + np.arange(n)) * up.h,
        pmf_upper=pu, pmf_lower=pl, inf_mass=float(up.c0), inf_mass_lower=inf_low,
        error_log_scale=up.error_log_scale, error_log_scale_lower=log_c_low, error_rate=float(up.lam),
        error_rate_lower=lam_low, tol=tol)


def _accountant(m: Mechanism) -> Any:
    return routes.ROUTES["pld"].accountant(m)  # type: ignore[attr-defined]


def _attained_lows(m: Mechanism, tol: float) -> list[Any]:
    """The lower composed profiles of the pairs ``m`` attains at every run (hook
    ``attained_parts``), or none where there are no such certified pairs or the budget
    stops their composition: an attack on those datasets reaches what they allow."""
    below = routes.ROUTES["pld"].attained(m)  # type: ignore[attr-defined]
    if below is None:
        return []
    try:
        return [low for _, low in below.composed(below.eps_scale(routes.REFERENCE_DELTA), tol)]
    except BudgetExceeded:
        return []


def _composed(m: Mechanism, tol: float) -> list[tuple[DiscreteProfile, Any]]:
    acc = _accountant(m)
    return acc.composed(acc.eps_scale(routes.REFERENCE_DELTA), tol)
