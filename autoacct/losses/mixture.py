"""Loss laws of a mixture of Gaussians against one Gaussian.

The pair is (P, Q) = (sum_i w_i N(t_i, 1), N(0, 1)) with shifts t_i >= 0 (in units
of the noise std), of which the Poisson-subsampled Gaussian ((1-q) N(0, 1) +
q N(1/sigma, 1), N(0, 1)) is the case of two components. Its loss at the output x,

    l(x) = log sum_i w_i e^{t_i x - t_i^2 / 2},

is a log-sum-exp of affine functions with non-negative slopes: convex and
non-decreasing, and increasing when some t_i > 0. So a cell (a, b] of the loss is
the interval (l^{-1}(a), l^{-1}(b)] of outputs, whose masses are differences of
normal distribution functions; l^{-1} is computed by Newton's method from an upper
bound of the root, which for a convex increasing function converges monotonically.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
from scipy import special

from autoacct.exactness import MACHINE_EPSILON
from autoacct.losses.base import ContinuousLoss, _standard_normal_cells, sizing_cgf_of

#: Newton iterations allowed; the start is within a few units of the root and convergence
#: is quadratic, so a handful suffice (the cap only guards against a stall).
_NEWTON_STEPS = 100
#: Work per cell per component, relative to a closed-form law's (``PrivacyLoss.cell_cost``).
_CELL_COST = 3.0


class MixtureGaussianLoss(ContinuousLoss):
    """Loss of (sum_i w_i N(t_i, 1), N(0, 1)) (``direction`` "remove") or of the reversed pair
    (N(0, 1), sum_i w_i N(t_i, 1)) ("add").

    Parameters
    ----------
    shifts:
        Component means t_i >= 0, at least one positive (sensitivities over the noise std).
    weights:
        Component probabilities w_i > 0 summing to 1.
    direction:
        "remove": the loss l(x) under the mixture (P) and under N(0, 1) (Q);
        "add": the loss -l(x) under N(0, 1) (this law's P) and the mixture (its Q).
    """

    def __init__(self, shifts: np.ndarray, weights: np.ndarray, direction: str) -> None:
        if direction not in ("remove", "add"):
            raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")
        self.shifts = np.asarray(shifts, dtype=float)
        self.weights = np.asarray(weights, dtype=float)
        self.direction = direction
        self._log_w = np.log(self.weights)
        self._offsets = self._log_w - self.shifts ** 2 / 2.0
        zero = self.shifts == 0.0
        # Each cell edge is inverted by Newton's method on a log-sum-exp over the components:
        # measured at 10, 34, 47 and 237 times a Gaussian law's work per cell for 2, 5, 12 and
        # 40 components. Charged 1, a query budgeted at 10 s took 13.7 s; charged _CELL_COST a
        # component (about the measured rate at 5 to 12 components: the budget's per-cell
        # rates already err on the slow side), it is refused at once.
        self.cell_cost = _CELL_COST * float(self.shifts.size)
        #: Mass of the components at 0: l(-inf) = log of it (-inf when there is none).
        self._w0 = float(self.weights[zero].sum())
        self._pos = ~zero

    @property
    def key(self) -> tuple:
        return ("mixture-gaussian", self.direction, tuple(self.shifts), tuple(self.weights))

    def loss_at(self, x: np.ndarray) -> np.ndarray:
        """l(x) = log sum_i w_i e^{t_i x - t_i^2 / 2}."""
        x = np.asarray(x, dtype=float)
        return special.logsumexp(self._offsets + self.shifts * x[..., None], axis=-1)

    def inverse(self, y: np.ndarray) -> np.ndarray:
        """l^{-1}(y): -inf for y <= log(w_0) (the infimum of l), +inf at +inf.

        Start: l(x) >= log(w_0 + w_i e^{t_i x - t_i^2/2}) for each positive t_i, so the root
        x_i of that two-term function (in closed form) lies at or above l^{-1}(y); the
        smallest x_i is taken. Newton's method from above a root of a convex increasing
        function decreases monotonically to it; it stops when a step no longer moves
        the iterate by more than a few ulps.
        """
        y = np.asarray(y, dtype=float)
        out = np.full(y.shape, -np.inf)
        log_w0 = np.log(self._w0) if self._w0 > 0 else -np.inf
        live = y > log_w0
        out[np.isposinf(y)] = np.inf
        live &= np.isfinite(y)
        if not live.any():
            return out
        yl = y[live]
        # log(e^y - w_0), without cancellation as y approaches log w_0.
        with np.errstate(divide="ignore"):
            gap = yl + np.log(-np.expm1(np.minimum(log_w0 - yl, 0.0)))
        t = self.shifts[self._pos]
        starts = (gap[:, None] - self._log_w[self._pos] + t * t / 2.0) / t
        x = starts.min(axis=1)
        todo = np.arange(x.size)
        for _ in range(_NEWTON_STEPS):
            xt = x[todo]
            a = self._offsets + self.shifts * xt[:, None]
            lse = special.logsumexp(a, axis=1)
            slope = np.sum(np.exp(a - lse[:, None]) * self.shifts, axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                step = (lse - yl[todo]) / slope
            # Monotone descent: a step upward is rounding at the root; a slope that underflowed
            # (outputs far below every shifted component, loss within ulps of log w_0) stops.
            step = np.where(np.isfinite(step), np.maximum(step, 0.0), 0.0)
            x[todo] = xt - step
            moving = step > 4.0 * MACHINE_EPSILON * (np.abs(xt) + 1.0)
            todo = todo[moving]
            if todo.size == 0:
                break
        out[live] = x
        return out

    def _mixture_tail(self, x: np.ndarray, upper: bool) -> np.ndarray:
        """sum_i w_i Pr(N(t_i, 1) > x) (``upper``) or <= x: sums of positive terms."""
        z = x[..., None] - self.shifts
        return np.sum(self.weights * special.ndtr(-z if upper else z), axis=-1)

    def _output_tails(self, y: np.ndarray, under: str) -> tuple[np.ndarray, np.ndarray]:
        """(Pr(L <= y), Pr(y < L < inf)) under ``under`` in {"P", "Q"} of this law."""
        y = np.asarray(y, dtype=float)
        mixture = (under == "P") == (self.direction == "remove")
        if self.direction == "remove":
            x = self.inverse(y)             # L <= y iff X <= x
            low_side, high_side = True, False
        else:
            x = self.inverse(-y)            # -l(X) <= y iff X >= l^{-1}(-y)
            low_side, high_side = False, True
        if mixture:
            below = self._mixture_tail(x, upper=not low_side)
            above = self._mixture_tail(x, upper=not high_side)
        else:
            below = special.ndtr(x if low_side else -x)
            above = special.ndtr(-x if low_side else x)
        return below, above

    def _cdf(self, x: np.ndarray, under: str) -> np.ndarray:
        return self._output_tails(x, under)[0]

    def _sf(self, x: np.ndarray, under: str) -> np.ndarray:
        return self._output_tails(x, under)[1]

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """As :class:`ContinuousLoss` (differences of the smaller tail), inverting the edges once."""
        edges = np.asarray(edges, dtype=float)
        x = self.inverse(edges if self.direction == "remove" else -edges)
        out = []
        for under in ("P", "Q"):
            mixture = (under == "P") == (self.direction == "remove")
            sign = 1.0 if self.direction == "remove" else -1.0
            if mixture:
                cdf = self._mixture_tail(x, upper=self.direction == "add")
                sf = self._mixture_tail(x, upper=self.direction == "remove")
            else:
                cdf = special.ndtr(sign * x)
                sf = special.ndtr(-sign * x)
            use_sf = sf[:-1] < 0.5
            m = np.where(use_sf, sf[:-1] - sf[1:], cdf[1:] - cdf[:-1])
            out.append(np.maximum(m, 0.0))
        return out[0], out[1]

    def quantile_range(self, eta: float) -> tuple[float, float]:
        """Loss values of the outputs x whose tails under both distributions are below eta:
        N(0, 1) below -z and every component above max t_i + z, z = Phi^{-1}(1 - eta / 2)."""
        z = -float(special.ndtri(eta / 2.0))
        ends = self.loss_at(np.array([-z, float(self.shifts.max()) + z]))
        lo, hi = float(ends[0]), float(ends[1])
        return (lo, hi) if self.direction == "remove" else (-hi, -lo)

    @cached_property
    def _nodes(self) -> tuple[np.ndarray, np.ndarray]:
        """Loss values and P-masses of this law on the standard normal cells (for grid sizing
        only): each P component's cells shifted to its mean, at their conditional means."""
        x, _, w_q = _standard_normal_cells()
        w = w_q[:x.size]
        if self.direction == "remove":
            points = (x[None, :] + self.shifts[:, None]).ravel()
            masses = (self.weights[:, None] * w[None, :]).ravel()
            return self.loss_at(points), masses
        return -self.loss_at(x), w

    @cached_property
    def moments(self) -> tuple[float, float]:
        values, masses = self._nodes
        tot = masses.sum()
        mean = float((masses * values).sum() / tot)
        var = float((masses * (values - mean) ** 2).sum() / tot)
        return mean, max(var, 1e-300)

    @cached_property
    def sizing_cgf(self) -> np.ndarray:
        return sizing_cgf_of(*self._nodes)
