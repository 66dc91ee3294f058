"""The public calibrators: the smallest (or largest) parameter of a family of mechanisms whose
certified epsilon, TPR or advantage meets a budget (the search itself: :mod:`search`)."""

from __future__ import annotations

from autoacct.calibrators.goals import goal_of
from autoacct.calibrators.result import DEFAULT_RTOL, CalibrationResult
from autoacct.calibrators.search import Factory, Search


def calibrate_result(factory: Factory, epsilon: float | None = None, delta: float | None = None,
                     bounds: tuple[float | None, float | None] | None = None, *,
                     tpr: float | None = None, fpr: float | None = None,
                     advantage: float | None = None,
                     integer: bool = False, tol: float | None = None, rtol: float = DEFAULT_RTOL,
                     via: str = "auto", increasing: bool | None = None, x0: float | None = None,
                     name: str = "parameter", max_evaluations: int = 100,
                     loose_lower: str | None = None) -> CalibrationResult:
    """Like :func:`calibrate`, returning the full :class:`CalibrationResult`.

    ``loose_lower``, when given, says why the family's certified lower bounds stay apart
    from its upper bounds at every accountant ``tol`` (they bound a pair the mechanism
    attains, the upper bounds a dominating pair that need not be attained); the warning
    of an optimality gap wider than ``rtol`` then gives that reason instead of suggesting
    a smaller ``tol``.
    """
    if not callable(factory):
        raise TypeError(f"factory must be callable, got {type(factory).__name__}")
    goal = goal_of(epsilon, delta, tpr, fpr, advantage)
    return Search(factory, goal, bounds, integer=integer, tol=tol, rtol=rtol, via=via,
                   increasing=increasing, x0=x0, name=name, max_evaluations=max_evaluations,
                   loose_lower=loose_lower).run()


def calibrate(factory: Factory, epsilon: float | None = None, delta: float | None = None,
              bounds: tuple[float | None, float | None] | None = None, *,
              tpr: float | None = None, fpr: float | None = None, advantage: float | None = None,
              integer: bool = False, tol: float | None = None, rtol: float = DEFAULT_RTOL,
              via: str = "auto", increasing: bool | None = None, x0: float | None = None,
              name: str = "parameter", max_evaluations: int = 100) -> float:
    """The parameter value closest to the budget whose certified epsilon(delta) (or TPR, or advantage) meets it.

    With M_x = ``factory(x)`` and eps_up(x) = M_x.epsilon(delta, via=via, tol=tol),
    returns x_s with eps_up(x_s) <= ``epsilon``: the smallest such x when epsilon
    decreases in x (noise scales), the largest when it increases (sampling
    rates, step counts). The direction is detected by probing unless
    ``increasing`` is given.

    Parameters
    ----------
    factory:
        x -> Mechanism, for x > 0. A ``ValueError`` from it marks x as outside
        the parameter's domain (e.g. a sampling rate above 1).
    epsilon:
        Target eps* > 0.
    delta:
        Target delta in (0, 1).
    bounds:
        (low, high), inclusive, either end None for unbounded; default (0, inf)
        for real and [1, inf) for integer parameters. Without bounds the
        search expands geometrically from ``x0`` (up to a factor e^30).
    tpr, fpr:
        In place of (epsilon, delta), an attack-risk target (keywords only): every
        membership-inference attack at false-positive rate ``fpr`` in (0, 1) has a
        true-positive rate of at most ``tpr`` in (fpr, 1), certified by
        ``M_x.tpr(fpr)`` (1 - the certified lower bound on the tradeoff function; its
        lower bound from the accountant's lower PLDs, :func:`autoacct.risk.tpr_bounds`).
    advantage:
        In place of (epsilon, delta): the membership advantage max_a (TPR(a) - a),
        certified by ``M_x.advantage()`` = the certified delta(0), is at most
        ``advantage`` in (0, 1). Exactly one of epsilon, tpr and advantage is given.
    integer:
        Search integers only (steps, batch sizes).
    tol:
        Accountant accuracy at which eps_up is certified (default 1e-3); the
        returned value satisfies ``factory(x_s).epsilon(delta, via=via, tol=tol) <= epsilon``.
    rtol:
        Required certified optimality gap: |x_s - x*| <= rtol x*, where x* is the
        optimal value for the true epsilon. Certified with the accountant's
        lower bounds (refining its tol as needed); an ``AccuracyWarning`` is
        issued if that is impossible at the given ``tol``.
    via:
        Route of the epsilon upper bound: "auto", "exact", "pld" or "rdp".
        With "rdp" optimality is judged against the RDP conversion itself.
    increasing:
        Whether epsilon grows with x; detected when None.
    x0:
        First guess (default: the geometric mean of finite bounds, else 1).
    name:
        The parameter's name, used in messages.
    max_evaluations:
        Cap on accountant calls.

    Returns
    -------
    The calibrated value (an int when ``integer``).

    The optimality certificate assumes that the true epsilon(delta) is monotone
    in the parameter (true for noise scales, sampling rates and step counts);
    the budget guarantee does not depend on it.

    Raises
    ------
    InfeasibleBudgetError
        (a ValueError) when no value in the range meets the budget; its message
        and ``achievable`` attribute give the smallest epsilon reachable.
    ValueError
        For epsilon <= 0, delta outside (0, 1), bad bounds, or a budget met by
        every value (nothing to calibrate).
    """
    return calibrate_result(factory, epsilon, delta, bounds, tpr=tpr, fpr=fpr, advantage=advantage,
                            integer=integer, tol=tol, rtol=rtol,
                            via=via, increasing=increasing, x0=x0, name=name,
                            max_evaluations=max_evaluations).value
