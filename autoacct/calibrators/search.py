"""Generic calibration: the parameter value whose certified epsilon(delta) meets a budget.

Given a family x -> M_x of mechanisms (``factory``), a budget (eps*, delta) and
the certified upper bound eps_up(x) = M_x.epsilon(delta, tol=tol), the search
returns the value x_s closest to the budget among those with eps_up(x_s) <= eps*:

* for a parameter that makes the mechanism more private as it grows (noise
  multiplier sigma, Laplace scale b), the smallest such x;
* for one that makes it less private (sampling rate q, number of steps k, a
  pure-DP epsilon), the largest such x.

The search works in log space, u = s log x with s = +1 when epsilon grows with x
and s = -1 when it shrinks (found by probing unless ``increasing`` is given), so
that eps_up is increasing in u and roughly linear in log scale. It

1. brackets the budget by geometric expansion from a first guess, each step
   aimed by the log-log slope of the evaluations so far and capped at a
   factor that grows geometrically, within ``bounds``;
2. shrinks the bracket [u_safe, u_unsafe] (eps_up(u_safe) <= eps* < eps_up(u_unsafe))
   by inverse quadratic or secant interpolation of log eps_up, aimed a little
   (rtol / 8) on the safe side of the root, with a bisection step whenever the
   bracket has not halved in three steps (so convergence is guaranteed, as in
   Brent's method); integer parameters are searched until the bracket is two
   adjacent integers;
3. certifies the result: a point x_c within a factor 1 + rtol of x_s on the
   unsafe side whose certified *lower* bound eps_low(x_c) exceeds eps*. The true
   epsilon being monotone in x, every value on x_c's side of it fails the
   budget, so the optimal value (the smallest sigma meeting the budget for the
   true epsilon, which is no larger than the best certified one) lies between
   x_c and x_s. When the accountant's bounds are too far apart for that, the
   lower bound at x_c is refined with a smaller accountant ``tol``.

The first guess and the bracketing steps toward more private values are *probes*:
queries under a smaller time budget (:mod:`autoacct.limits`), since far from the
budget a query can cost tens of times one at it (DP-SGD at q 1e-5, k 1e4, eps 1:
30 s at the CLT guess, 7 s at the answer). The budget only decides whether the
accountant starts its next step, by predicted times, so a probe that is not cut
short is the full query. One that is cut keeps its valid, looser bounds, which
decide its side of the budget (or, undecided, presume it unsafe), and is queried
in full only if the bracket closes around it.

The returned value is always one whose certified epsilon at the caller's ``tol``
(and time budget) was checked to be within the budget (the safe end of the
bracket), re-checked on the mechanism handed back; the optimality gap rests on
certified lower bounds only. Every evaluation is cached, so no parameter value
is accounted twice at the same accuracy and budget.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from autoacct import _validation as check
from autoacct.calibrators.goals import AdvantageGoal, EpsilonGoal, Goal, TprGoal
from autoacct.calibrators.result import CalibrationResult
from autoacct.errors import AccuracyWarning, BudgetWarning, InfeasibleBudgetError
from autoacct.limits import current as current_limits
from autoacct.limits import limits, predicted_seconds
from autoacct.mechanism import ROUTES, Mechanism
from autoacct.pld import DEFAULT_TOL

Factory = Callable[[Any], Mechanism]

#: Smallest accountant tolerance used to certify a lower bound.
_MIN_CERT_TOL = 1e-6
#: Each refinement of the certification tolerance divides it by this.
_TOL_SHRINK = 8.0
#: The name of each goal's quantity in a :class:`CalibrationResult`.
_TARGET_NAMES = {EpsilonGoal: "epsilon", TprGoal: "tpr", AdvantageGoal: "advantage"}
#: Largest distance in log space the bracketing may travel from the first guess.
_MAX_LOG_RANGE = 30.0
#: Slope of log eps_up in u assumed for a first step toward less private values. DP-SGD's
#: epsilon falls like 1/sigma for much noise but like 1/sigma^2 to 1/sigma^3 for little (at
#: eps 50, q 1e-3, k 1e3 the slope is 3): a smaller prior overshoots into values with a
#: larger epsilon, where a query costs up to 20 times one at the budget.
_PRIOR_SLOPE_UP = 3.0
#: Time budget (predicted seconds, see autoacct.limits) of a probe: an evaluation away from
#: the budget, which needs only to say on which side of it a value lies. It is this many
#: times the predicted seconds of the longest full evaluation so far (predictions ran about
#: 4 to 5 times the CPU seconds of the machine where the rule was tuned as twice the wall
#: time under load; on a 2-core AMD EPYC a DP-SGD query's prediction is 1.1 to 3.4 times its
#: CPU seconds, median 1.9), and at least _PROBE_MIN_SECONDS.
#: A smaller floor cuts queries that are cheap in full (DP-SGD at q 0.1, k 1e6, eps 0.01:
#: cut at 0.5 s of predicted time, its fallback bounds took 3.7 s of wall time against 0.4 s
#: in full).
_PROBE_FACTOR = 1.0
_PROBE_MIN_SECONDS = 1.0
#: A probe that met the budget is evaluated in full once the bracket is this many rtol
#: windows wide: it may be the answer, which must be certified at the caller's budget.
_PROBE_WINDOWS = 16.0


@dataclass
class _Point:
    """One evaluated parameter value; ``mech`` is None when the factory rejected it."""

    x: float
    t: float
    mech: Mechanism | None
    error: str = ""
    up: float | None = None
    up_best: float = math.inf
    low: float = -math.inf
    tols: set[float] = field(default_factory=set)
    stalled: bool = False
    #: ``up`` and ``low`` come from a probe cut short by its time budget: valid bounds on the
    #: quantity, but ``up`` is not the certified value at the caller's tol and budget.
    limited: bool = False

    @property
    def valid(self) -> bool:
        return self.mech is not None


class Search:
    """State of one calibration: cached evaluations and the bracketing logic."""

    def __init__(self, factory: Factory, goal: Goal,
                 bounds: tuple[float | None, float | None] | None, *, integer: bool,
                 tol: float | None, rtol: float, via: str, increasing: bool | None,
                 x0: float | None, name: str, max_evaluations: int,
                 loose_lower: str | None = None) -> None:
        if not callable(factory):
            raise TypeError(f"factory must be callable, got {type(factory).__name__}")
        self.factory = factory
        self.goal = goal
        self.target = goal.value
        self.tol = DEFAULT_TOL if tol is None else check.real("tol", tol, low=1e-7, high=0.5)
        self.rtol = check.real("rtol", rtol, low=1e-9, high=0.5)
        if via not in ROUTES:
            raise ValueError(f"via must be one of {ROUTES}, got {via!r}")
        self.via = via
        self.integer = bool(integer)
        self.name = str(name)
        self.loose_lower = loose_lower
        self.max_evaluations = check.positive_int("max_evaluations", max_evaluations)
        self.window = math.log1p(self.rtol)
        self.lo, self.hi = self._bounds(bounds)
        self.x0 = self._first_guess(x0)
        self.points: dict[float, _Point] = {}
        self.evaluations = 0
        self.sign = 0 if increasing is None else (1 if increasing else -1)
        self.widths: list[float] = []
        #: Predicted seconds (autoacct.limits.predicted_seconds) of the longest full evaluation
        #: so far, which sizes the probes' budget: predicted, not measured, so that the
        #: search, hence its answer, does not depend on the machine or its load.
        self.slowest = 0.0

    # ----- domain -------------------------------------------------------------------
    def _bounds(self, bounds: tuple[float | None, float | None] | None) -> tuple[float, float]:
        lo_default = 1.0 if self.integer else 0.0
        if bounds is None:
            return lo_default, math.inf
        try:
            a, b = bounds
        except (TypeError, ValueError) as exc:
            raise TypeError(f"bounds must be a pair (low, high), got {bounds!r}") from exc
        lo = lo_default if a is None else check.real("bounds[0]", a, low=0.0)
        hi = math.inf if b is None else check.real("bounds[1]", b, low=0.0, allow_inf=True)
        if self.integer:
            lo = max(math.ceil(lo), 1)
            hi = math.floor(hi) if math.isfinite(hi) else math.inf
        if not lo < hi:
            raise ValueError(f"bounds must satisfy low < high, got {bounds!r}")
        return float(lo), float(hi)

    def _inside(self, x: float) -> bool:
        return (x > 0 and x >= self.lo) and x <= self.hi

    def _first_guess(self, x0: float | None) -> float:
        if x0 is not None:
            x = check.real("x0", x0, low=0.0, low_open=True)
            if not self._inside(x):
                raise ValueError(f"x0={x0!r} lies outside bounds [{self.lo:g}, {self.hi:g}]")
        elif self.lo > 0 and math.isfinite(self.hi):
            x = math.sqrt(self.lo * self.hi)
        elif math.isfinite(self.hi):
            x = min(1.0, self.hi)
        else:
            x = max(1.0, self.lo)
        return self._normal(x)

    def _normal(self, x: float) -> float:
        if self.integer:
            return float(min(max(round(x), self.lo), self.hi))
        for edge in (self.lo, self.hi):
            if 0 < edge < math.inf and abs(x - edge) <= 1e-12 * edge:
                return float(edge)  # undo the rounding of exp(log(edge))
        return float(min(max(x, self.lo), self.hi))

    # ----- evaluations --------------------------------------------------------------
    def point(self, x: float) -> _Point:
        """The cached record of x, building the mechanism on first use."""
        x = self._normal(x)
        p = self.points.get(x)
        if p is None:
            arg: Any = int(x) if self.integer else x
            try:
                mech = self.factory(arg)
            except ValueError as exc:
                p = _Point(x, math.log(x), None, error=str(exc))
            else:
                if not isinstance(mech, Mechanism):
                    raise TypeError(f"factory({arg!r}) must return a Mechanism, "
                                    f"got {type(mech).__name__}")
                p = _Point(x, math.log(x), mech)
            self.points[x] = p
        return p

    def evaluate(self, x: float, tol: float | None = None, *, probe: bool = False) -> _Point:
        """Certified (lower, upper) epsilon of x at accuracy ``tol`` (the caller's by default).

        A ``probe`` runs under a smaller time budget (:meth:`_probe_seconds`). The budget only
        decides whether the accountant's next step is started, from predicted, not measured,
        times, so a probe that finishes without a BudgetWarning has computed exactly the full
        evaluation and counts as one; one cut short keeps its (valid, looser) bounds and is
        marked ``limited``, to be evaluated in full if it comes near the answer.
        """
        p = self.point(x)
        t = self.tol if tol is None else tol
        if not p.valid or t in p.tols or (probe and p.limited):
            return p
        if self.evaluations >= self.max_evaluations:
            raise _OutOfEvaluations
        self.evaluations += 1
        assert p.mech is not None
        if probe:
            seconds = min(current_limits().seconds, self._probe_seconds())
            with warnings.catch_warnings(record=True) as caught, limits(seconds=seconds):
                # Warnings of a value away from the answer are not the caller's concern; the
                # answer's own are issued again when it is re-checked (a different budget).
                warnings.simplefilter("always")
                low, up = self.goal.bounds(p.mech, self.via, t)
            if any(issubclass(w.category, BudgetWarning) for w in caught):
                # Cut short. Its side of the budget is decided when low > target (certified
                # to miss it) or up <= target (meets it in truth); otherwise it is presumed
                # to miss it (up > target), which the search checks in full before relying
                # on it near the answer: a cut upper bound can be many times the full one
                # (at q 1e-5, k 1e6, sigma 0.63: 1.12 against 0.109).
                p.limited = True
                p.low = max(p.low, low)
                p.up_best = min(p.up_best, up)
                p.up = up if t == self.tol else p.up
                return p
        else:
            start = predicted_seconds()
            with warnings.catch_warnings():
                if t != self.tol:
                    warnings.simplefilter("ignore", AccuracyWarning)
                low, up = self.goal.bounds(p.mech, self.via, t)
            self.slowest = max(self.slowest, predicted_seconds() - start)
        p.limited = False
        p.tols.add(t)
        p.stalled = len(p.tols) > 1 and low <= p.low
        p.low = max(p.low, low)
        p.up_best = min(p.up_best, up)
        if t == self.tol:
            p.up = up
        return p

    def _probe_seconds(self) -> float:
        """A probe's time budget: _PROBE_FACTOR times the predicted seconds of the longest full
        evaluation so far, at least _PROBE_MIN_SECONDS."""
        return max(_PROBE_MIN_SECONDS, _PROBE_FACTOR * self.slowest)

    def u(self, p: _Point) -> float:
        return self.sign * p.t

    def g(self, p: _Point) -> float:
        """log(eps_up / eps*): <= 0 exactly when p meets the budget."""
        assert p.up is not None
        if p.up <= 0:
            return -math.inf
        return math.log(p.up) - math.log(self.target)

    def g_est(self, p: _Point) -> float:
        """g(p) for interpolation: for a probe cut short, whose upper bound may be far above
        the full one, log of the geometric mean of its bounds over eps* (g(p) if low is 0)."""
        if p.limited and p.low > 0 and p.up is not None and math.isfinite(p.up):
            return 0.5 * (math.log(p.low) + math.log(p.up)) - math.log(self.target)
        return self.g(p)

    def x_of(self, u: float) -> float:
        return math.exp(self.sign * u)

    # ----- the search ---------------------------------------------------------------
    def run(self) -> CalibrationResult:
        # With the direction known, the first guess is a probe (it is rarely the answer);
        # otherwise its value is compared with its neighbours' and must be the full one.
        probe = self.sign != 0
        p0 = self.evaluate(self.x0, probe=probe)
        for x in self._probes(self.x0):
            if p0.valid:
                break
            p0 = self.evaluate(x, probe=probe)  # a rejected value costs no accounting
        if not p0.valid:
            first = self.points[self.x0]
            raise ValueError(f"factory rejected the first guess {self.name}={self._show(first.x)} "
                             f"({first.error}) and the values tried around it; pass x0= or bounds=")
        try:
            if self.sign == 0:
                self.sign = self._detect_direction(p0)
            return self._search()
        except _OutOfEvaluations:
            safe = [p for p in self._safe_points() if not p.limited]
            if not safe:
                raise RuntimeError(f"calibration of {self.name} did not bracket the budget in "
                                   f"{self.max_evaluations} evaluations") from None
            best = max(safe, key=self.u)
            _warn(f"calibration of {self.name} stopped after {self.max_evaluations} "
                  "evaluations; returning the best value found")
            return self._finish(best, math.inf)

    def _detect_direction(self, p0: _Point) -> int:
        assert p0.up is not None
        for x in self._probes(p0.x):
            p = self.evaluate(x)
            if not p.valid or p.up is None or p.up == p0.up:
                continue
            return 1 if (p.up > p0.up) == (p.x > p0.x) else -1
        if p0.up == math.inf:
            self._infeasible_everywhere()
        raise ValueError(f"the certified {self.goal.quantity} does not change with "
                         f"{self.name} around {self._show(p0.x)} (it is {p0.up:.6g} there); "
                         "cannot tell which way to search: pass increasing= or x0=")

    def _probes(self, x0: float) -> list[float]:
        out: list[float] = []
        for factor in (2.0, 1.25, 4.0, 16.0, 256.0, 65536.0):
            for x in (x0 * factor, x0 / factor):
                if self.integer:
                    x = float(round(x)) if x > x0 else float(math.floor(x))
                x = self._normal(x)
                if x != x0 and x not in out and self._inside(x):
                    out.append(x)
        return out

    def _safe_points(self) -> list[_Point]:
        return [p for p in self.points.values()
                if p.valid and p.up is not None and p.up <= self.target]

    def _search(self) -> CalibrationResult:
        tried: set[tuple[float, float | None, bool]] = set()
        while True:
            safe = self._safe_points()
            if not safe:
                self._expand_down()
                continue
            s = max(safe, key=self.u)
            above = [p for p in self.points.values()
                     if self.u(p) > self.u(s) and (not p.valid or p.up is not None)]
            barrier = min(above, key=self.u) if above else None
            if barrier is None:
                done = self._expand_up(s)
                if done is not None:
                    return done
                continue
            presumed = barrier.valid and barrier.limited and barrier.low <= self.target
            if self.u(barrier) - self.u(s) <= _PROBE_WINDOWS * self.window:
                if s.limited:
                    self.evaluate(s.x)  # it may be the answer: certify it at the caller's budget
                    continue
                if presumed:
                    self.evaluate(barrier.x)  # only presumed to miss the budget
                    continue
            if presumed and self._contradicted(barrier):
                self.evaluate(barrier.x)
                continue
            certs = [p for p in above if (not p.valid) or p.low > self.target]
            cert = min(certs, key=self.u) if certs else None
            if cert is not None and self._close_enough(s, cert):
                return self._finish(s, self._gap(s, cert))
            step = self._next_step(s, barrier)
            if step is None or step in tried:
                if s.limited:
                    self.evaluate(s.x)
                    continue
                return self._finish(s, self._gap(s, cert) if cert is not None else math.inf)
            tried.add(step)
            x, tol, probe = step
            self.evaluate(x, tol, probe=probe)

    def _contradicted(self, b: _Point) -> bool:
        """Whether the full evaluations nearest the budget extrapolate past the cut probe b
        presumed to miss it: its cut upper bound may be far above the truth (at q 1e-5,
        k 1e6, eps 0.1 a first guess 1% from the answer was cut to [0, 1.07]), and the
        search would creep toward it from the safe side. log eps_up being convex in u, the
        extrapolation errs toward b, so b is then often just beyond the budget."""
        full = sorted((p for p in self._valid_sorted() if not p.limited and math.isfinite(self.g(p))),
                      key=lambda p: abs(self.g(p)))[:2]
        if len(full) < 2 or full[0].t == full[1].t:
            return False
        (ua, ga), (ub, gb) = ((self.u(p), self.g(p)) for p in full)
        slope = (ga - gb) / (ua - ub)
        return slope > 0 and ua - ga / slope >= self.u(b)

    def _close_enough(self, s: _Point, c: _Point) -> bool:
        if self.integer and abs(c.x - s.x) <= 1:
            return True
        return self.u(c) - self.u(s) <= self.window * (1 + 1e-12)

    def _gap(self, s: _Point, c: _Point) -> float:
        if self.integer:
            return (abs(c.x - s.x) - 1) / min(s.x, c.x)
        return math.expm1(abs(c.t - s.t))

    # bracketing ---------------------------------------------------------------------
    def _slope(self, a: _Point, b: _Point | None) -> float | None:
        """d log eps_up / du between two evaluated points, or None when unusable."""
        if b is None or a.limited or b.limited or not (a.up and b.up) \
                or not math.isfinite(self.g(a) + self.g(b)):
            return None
        du = self.u(a) - self.u(b)
        if du == 0:
            return None
        sl = (self.g(a) - self.g(b)) / du
        return min(sl, 50.0) if math.isfinite(sl) and sl > 1e-3 else None

    def _step_size(self, edge: _Point, neighbour: _Point | None, n: int, *,
                   private: bool) -> float:
        """How far (in u) to step from ``edge`` to bracket the budget.

        Aimed by the slope of log eps_up through ``edge`` and ``neighbour`` and
        capped at log(4) 1.5^n. Steps toward less private values (larger eps,
        where accounting is dearer and the curve steeper) are cautious: no
        overshoot, and without a measured slope a prior slope of 3 and at most a
        factor 2 (an undershoot costs a cheap query on the safe side, an overshoot
        a dear one); steps toward more private values overshoot by 15% with a
        prior slope of 1, so that one step usually brackets the budget.
        """
        cap = math.log(4.0) * 1.5 ** n
        gval = self.g(edge)
        slope = self._slope(edge, neighbour)
        if slope is None and not private:
            cap = min(cap, math.log(2.0))
        if not math.isfinite(gval):
            return cap
        if slope is None:
            slope = 1.0 if private else _PRIOR_SLOPE_UP
        dist = abs(gval) / slope
        overshoot = 1.15 if private else 1.0
        return min(max(overshoot * dist + self.window, self.window), cap)

    def _valid_sorted(self) -> list[_Point]:
        return sorted((p for p in self.points.values() if p.valid and p.up is not None), key=self.u)

    def _expand_down(self) -> None:
        """No value meets the budget yet: move to more private values."""
        pts = self._valid_sorted()
        edge = pts[0]
        u_edge = self.u(edge)
        invalid_below = [self.u(p) for p in self.points.values() if not p.valid and self.u(p) < u_edge]
        u_bound = self._u_bound(private=True)
        at_bound = self._at_bound(edge, private=True)
        near_edge = bool(invalid_below) and u_edge - max(invalid_below) <= self.window
        if at_bound or near_edge or abs(edge.t - math.log(self.x0)) >= _MAX_LOG_RANGE or len(pts) > 60:
            if edge.limited:
                self.evaluate(edge.x)  # the message reports its certified value
                return
            self._infeasible(edge)
        u_new = u_edge - self._step_size(edge, pts[1] if len(pts) > 1 else None, len(pts),
                                         private=True)
        if invalid_below and u_new <= max(invalid_below):
            u_new = 0.5 * (u_edge + max(invalid_below))
        u_new = max(u_new, u_bound, u_edge - _MAX_LOG_RANGE)
        # A probe: the step overshoots the budget, so a cut-short query usually decides it.
        self._evaluate_u(u_new, edge, toward_private=True, probe=True)

    def _expand_up(self, s: _Point) -> CalibrationResult | None:
        """Every value so far meets the budget: move to less private values."""
        pts = self._valid_sorted()
        if self._at_bound(s, private=False):
            if s.limited:
                self.evaluate(s.x)
                return None
            return self._finish(s, 0.0)
        if abs(s.t - math.log(self.x0)) >= _MAX_LOG_RANGE or len(pts) > 60:
            raise ValueError(f"every {self.name} tried up to {self._show(s.x)} meets "
                             f"{self.goal.text} (certified {self.goal.quantity} "
                             f"{s.up:.6g} there); pass bounds= to limit the search")
        below = [p for p in pts if self.u(p) < self.u(s)]
        u_new = self.u(s) + self._step_size(s, below[-1] if below else None, len(pts),
                                           private=False)
        u_new = min(u_new, self._u_bound(private=False), self.u(s) + _MAX_LOG_RANGE)
        self._evaluate_u(u_new, s, toward_private=False)
        return None

    def _u_bound(self, *, private: bool) -> float:
        """The u of the bound on the private (small-u) or the other side (-inf/inf if open)."""
        lo_t = math.log(self.lo) if self.lo > 0 else -math.inf
        hi_t = math.log(self.hi) if math.isfinite(self.hi) else math.inf
        us = sorted((self.sign * lo_t, self.sign * hi_t))
        return us[0] if private else us[1]

    def _at_bound(self, p: _Point, *, private: bool) -> bool:
        b = self._u_bound(private=private)
        return math.isfinite(b) and abs(self.u(p) - b) <= 1e-12 * max(1.0, abs(b))

    def _evaluate_u(self, u_new: float, frm: _Point, *, toward_private: bool,
                    probe: bool = False) -> None:
        x = self.x_of(u_new)
        if self.integer:
            up_in_x = (self.sign > 0) != toward_private
            x = float(math.ceil(x - 1e-9) if up_in_x else math.floor(x + 1e-9))
            if x == frm.x:
                x = frm.x + (1 if up_in_x else -1)
        x = self._normal(x)
        if x == frm.x:
            if toward_private:
                self._infeasible(frm)
            raise AssertionError("bracketing made no progress")
        self.evaluate(x, probe=probe)

    def _infeasible(self, edge: _Point) -> None:
        rel = "<=" if self.sign < 0 else ">="
        assert edge.up is not None
        raise InfeasibleBudgetError(
            f"{self.goal.unreachable}: the smallest {self.goal.name} "
            f"reachable with {self.name} {rel} {self._show(edge.x)} is {edge.up:.6g} "
            f"(certified upper bound; lower bound {max(edge.low, 0.0):.6g})",
            achievable=edge.up, at=int(edge.x) if self.integer else edge.x)

    def _infeasible_everywhere(self) -> None:
        """Every value tried has an infinite certified epsilon(delta): delta is below reach.

        epsilon(delta) is infinite when delta is below the mechanism's delta at
        eps -> inf (e.g. the delta of an (eps, delta)-DP part), so no value of the
        parameter near the ones tried meets the budget. The message reports the
        smallest certified delta(epsilon) found, which is what is achievable.
        """
        if not isinstance(self.goal, EpsilonGoal):
            raise InfeasibleBudgetError(f"{self.goal.text} is not reachable: the certified "
                                        f"{self.goal.quantity} is infinite for every {self.name} tried",
                                        achievable=math.inf, at=self.x0)
        delta = self.goal.delta
        tried = [p for p in self.points.values() if p.valid]
        best_delta, best_x = math.inf, tried[0].x
        for p in tried:
            assert p.mech is not None
            d = float(p.mech.delta(self.target))
            if d < best_delta:
                best_delta, best_x = d, p.x
        lo, hi = min(p.x for p in tried), max(p.x for p in tried)
        raise InfeasibleBudgetError(
            f"epsilon={self.target:g} is not reachable at delta={delta:g}: the certified "
            f"epsilon(delta={delta:g}) is infinite for every {self.name} tried in "
            f"[{self._show(lo)}, {self._show(hi)}]; the smallest delta reachable at "
            f"epsilon={self.target:g} there is {best_delta:.6g} (certified upper bound, at "
            f"{self.name}={self._show(best_x)})",
            achievable=math.inf, at=int(best_x) if self.integer else best_x)

    # refinement --------------------------------------------------------------------
    def _next_step(self, s: _Point, n: _Point) -> tuple[float, float | None, bool] | None:
        """The next (x, tol, probe) to evaluate, or None when nothing more can be certified.

        Refinement steps aim at the budget itself, where a probe would rarely decide the
        side, so none is a probe."""
        us, un = self.u(s), self.u(n)
        width = un - us
        root = self._root_estimate(s, n)
        if self.integer:
            if abs(n.x - s.x) <= 1:
                return self._certify(s)
        elif width <= self.window or (root is not None and root - us <= 0.5 * self.window):
            self.widths.append(width)
            return self._certify(s)
        if (len(self.widths) >= 3 and width > 0.5 * self.widths[-3]) or root is None:
            aim = us + 0.5 * width  # safeguard: the bracket must halve every three steps
        elif self.integer:
            aim = root
        else:
            aim = min(max(root - 0.125 * self.window, us + 0.125 * self.window),
                      un - 0.125 * self.window)
        self.widths.append(width)
        x = self.x_of(aim)
        if self.integer:
            lo_x, hi_x = sorted((s.x, n.x))
            x = float(math.floor(x) if self.sign > 0 else math.ceil(x))
            x = min(max(x, lo_x + 1), hi_x - 1)
        return x, None, False

    def _certify(self, s: _Point) -> tuple[float, float | None, bool] | None:
        """Evaluate, or refine the lower bound of, the furthest value within rtol of s."""
        if self.integer:
            far = s.x * math.exp(self.sign * 0.999 * self.window)
            xc = float(math.floor(far) if self.sign > 0 else math.ceil(far))
            if abs(xc - s.x) < 1:
                xc = s.x + self.sign
        else:
            xc = self.x_of(self.u(s) + 0.999 * self.window)
        xc = self._normal(xc)
        if xc == s.x:
            return None
        c = self.point(xc)
        if not c.valid:
            return None
        if self.tol not in c.tols:
            return xc, None, False
        if c.up_best <= self.target or c.stalled:
            # Safe at a finer accuracy only (the caller's tol is what limits the gap),
            # or the accountant's lower bound no longer improves.
            return None
        finest = min(c.tols)
        nxt = finest / _TOL_SHRINK
        if nxt < _MIN_CERT_TOL:
            return None
        return xc, nxt, False

    def _root_estimate(self, s: _Point, n: _Point) -> float | None:
        """Where log eps_up crosses log eps*: inverse quadratic or secant interpolation in u.

        A probe cut short enters at :meth:`g_est`: its upper bound can be far above the
        full one (at q 1e-3, k 1e4, sigma 0.956: 0.88 against 0.52), and a secant through
        it would aim far on the safe side. Only the bracket's ends are interpolated by the
        secant, never extrapolated: log eps_up is convex in u at extreme budgets, so a
        line through two safe values aims past the budget, where queries are dearest."""
        if not n.valid or n.up is None:
            return None
        us, un = self.u(s), self.u(n)
        gs, gn = self.g_est(s), self.g_est(n)
        if not (math.isfinite(gs) and math.isfinite(gn)) or gn <= gs:
            return None
        secant = us - gs * (un - us) / (gn - gs)
        pts = [p for p in self._valid_sorted() if math.isfinite(self.g_est(p))]
        pts.sort(key=lambda p: abs(self.g_est(p)))
        pts = pts[:3]
        if len(pts) == 3:
            (ua, ga), (ub, gb), (uc, gc) = ((self.u(p), self.g_est(p)) for p in pts)
            if len({ga, gb, gc}) == 3:
                iqi = (ua * gb * gc / ((ga - gb) * (ga - gc)) + ub * ga * gc / ((gb - ga) * (gb - gc))
                       + uc * ga * gb / ((gc - ga) * (gc - gb)))
                # The inverse quadratic is trusted only within a quarter of the bracket of the
                # secant: at extreme budgets log eps_up bends sharply in u (a subsampled Gaussian
                # with little noise), a parabola through a far point lands deep on the unsafe
                # side, and values there are the dearest to account (DP-SGD at q = 1e-5,
                # k = 1e6, eps 1: the parabola aimed at eps 3, the secant at eps 1.1).
                if us < iqi < un and abs(iqi - secant) <= 0.25 * (un - us):
                    return iqi
        return secant

    # result ---------------------------------------------------------------------------
    def _finish(self, s: _Point, gap: float) -> CalibrationResult:
        assert s.mech is not None and s.up is not None and not s.limited
        eps = self.goal.upper(s.mech, self.via, self.tol)
        if not eps <= self.target:
            raise RuntimeError(f"internal error: {self.name}={self._show(s.x)} re-checked at "
                               f"{self.goal.quantity}={eps!r} > {self.target!r}")
        certified = gap <= self.rtol * (1 + 1e-9) or (self.integer and gap == 0.0)
        if not certified and self.loose_lower:
            within = (f"certified only within {gap:.3g} (relative)" if math.isfinite(gap)
                      else "not certified at all")
            _warn(f"the calibrated {self.name}={self._show(s.x)} meets {self.goal.text} "
                  f"(certified: {self.goal.quantity} <= {eps:.6g}), but its optimality is "
                  f"{within}, not within rtol={self.rtol:g}: {self.loose_lower}; "
                  "a smaller tol= cannot close that gap")
        elif not certified:
            _warn(f"the calibrated {self.name}={self._show(s.x)} is certified within "
                  f"{gap:.3g} (relative) of the optimum, not within rtol={self.rtol:g}; "
                  "a smaller tol= may tighten it")
        return CalibrationResult(
            value=int(s.x) if self.integer else s.x, mechanism=s.mech, epsilon=eps,
            epsilon_lower=max(s.low, 0.0), target_epsilon=self.target,
            delta=self.goal.delta if isinstance(self.goal, EpsilonGoal) else None,
            increasing=self.sign > 0, optimality_gap=gap, certified=certified, tol=self.tol,
            evaluations=self.evaluations, target=_TARGET_NAMES[type(self.goal)],
            fpr=self.goal.fpr if isinstance(self.goal, TprGoal) else None)

    def _show(self, x: float) -> str:
        return str(int(x)) if self.integer else f"{x:.6g}"


class _OutOfEvaluations(Exception):
    """Raised inside the search when the evaluation budget is spent."""


def _warn(msg: str) -> None:
    warnings.warn(msg, AccuracyWarning, stacklevel=4)
