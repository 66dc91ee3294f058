"""Privacy-loss laws of subsampled dominating pairs.

Every law here is built from a *base* law: the privacy loss L = log(dP/dQ) of
a dominating pair (P, Q) of the mechanism that runs on the sample. The
transformed laws never re-derive densities; their cell masses are the base
law's cell masses at transformed edges, so whatever tail precision the base
law has is kept.

* :class:`PoissonRemoveLoss`: the pair ((1-q) Q + q P, Q), loss phi(L) with
  phi(x) = log(1 - q + q e^x) (Poisson subsampling, removal direction).
* :class:`PoissonAddLoss`: the pair (Q, (1-q) Q + q P), loss -phi(L)
  (Poisson subsampling, addition direction).
* :class:`SymmetrizedLoss`: the symmetric pair whose profile equals that of a
  given pair for eps >= 0 (and is fixed by symmetry for eps < 0); the
  dominating pair of subsampling under the replace-one relation.
* :class:`MixtureLoss`: the disjoint union of weighted pairs (sampling with
  replacement, where the differing record is drawn a random number of times).

``moments`` and ``sizing_cgf`` of these laws (used only to size grids) come from a
*representation*: finitely many loss values with P- and Q-masses. A base law
may give its own; otherwise it is cut into cells, and for a cell the
representative value is log(P-mass / Q-mass), the loss at which e^L has its
conditional Q-mean, so that smooth functions of e^L (such as phi) are
integrated to second order. Representations are rebuilt when asked for (only
the summaries are kept): they are needed once per law, and thousands of distinct
laws would otherwise each hold a few thousand nodes.
"""

from __future__ import annotations

import math
import weakref
from abc import abstractmethod
from functools import cached_property

import numpy as np

from autoacct.losses import PrivacyLoss, segment_sums, sizing_cgf_of

#: Number of grid points used to represent a base law for the moments (which only size
#: grids: 1001 points give them to ~1e-4 of the standard deviation for subsampled Gaussians,
#: mu in [0.05, 20] and q in [1e-4, 0.9], at about half the time of 2001 points).
_REPR_POINTS = 1001
#: Tail mass left out of a base law's representation on each side.
_REPR_ETA = 1e-15

Representation = tuple[np.ndarray, np.ndarray, np.ndarray]


# ----------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------

def _masses_between(loss: PrivacyLoss, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P- and Q-masses of the finite part of ``loss`` in (t_i, t_{i+1}], for non-decreasing t.

    ``t`` may repeat values (a repeated value makes an empty cell) and contain
    +-inf. The base law is asked once, on the distinct values only, so that it
    always sees strictly increasing edges: the cells (t_i, t_{i+1}] with t_i < t_{i+1}
    are, in order, exactly the cells between consecutive distinct values.
    """
    t = np.asarray(t, dtype=float)
    grows = t[1:] != t[:-1]
    m_p, m_q = np.zeros(max(len(t) - 1, 0)), np.zeros(max(len(t) - 1, 0))
    if grows.any():
        mp_u, mq_u = loss.cell_masses(t[np.concatenate(([True], grows))])
        m_p[grows] = mp_u
        m_q[grows] = mq_u
    return m_p, m_q


def _masses_on(loss: PrivacyLoss, edge_sets: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`_masses_between` for several non-decreasing edge arrays, with one call to ``loss``.

    The law is asked for the masses of the elementary cells between all distinct
    edges; each requested cell is the sum of the elementary cells it covers (sums
    of non-negative terms, so tail cells keep their relative precision).
    """
    u = np.unique(np.concatenate([np.asarray(t, dtype=float) for t in edge_sets]))
    out = []
    if len(u) < 2:
        for t in edge_sets:
            z = np.zeros(max(len(t) - 1, 0))
            out.append((z, z.copy()))
        return out
    mp_u, mq_u = loss.cell_masses(u)
    for t in edge_sets:
        if len(t) < 2:
            out.append((np.zeros(0), np.zeros(0)))
            continue
        idx = np.searchsorted(u, t)
        out.append((segment_sums(mp_u, idx), segment_sums(mq_u, idx)))
    return out


def _prev(x: np.ndarray) -> np.ndarray:
    """The largest float below each finite entry; infinities are kept.

    Turns a half-open cell [a, b) into the cell (prev(a), prev(b)] holding the
    same floating-point values, so atoms on an edge land in the right cell.
    """
    x = np.asarray(x, dtype=float)
    return np.where(np.isfinite(x), np.nextafter(x, -np.inf), x)


def _cell_of(edges: np.ndarray, value: float) -> int | None:
    """Index i with edges[i] < value <= edges[i+1], or None when there is none."""
    i = int(np.searchsorted(edges, value, side="left")) - 1
    if 0 <= i < len(edges) - 1:
        return i
    return None


def representation(loss: PrivacyLoss) -> Representation:
    """Finitely many (value, P-mass, Q-mass) triples approximating the finite part of ``loss``.

    Laws with a ``_representation`` of their own give it (those of this module, and
    :class:`~autoacct.losses.GaussianLoss`, which integrates its two marginals
    separately); any other law is represented by its cell masses on a fine grid
    over its quantile range, each cell at the loss log(P-mass / Q-mass) (the
    cell's midpoint when a mass vanishes).
    """
    own = getattr(loss, "_representation", None)
    if own is not None:
        return own
    if loss not in _GRID_REPRESENTATIONS:
        _GRID_REPRESENTATIONS[loss] = _grid_representation(loss)
    return _GRID_REPRESENTATIONS[loss]


#: Grid representations of laws that have no own one, kept while the law lives: the
#: removal and addition laws of a subsampled mechanism share one base law.
_GRID_REPRESENTATIONS: weakref.WeakKeyDictionary[PrivacyLoss, Representation] = weakref.WeakKeyDictionary()


def _grid_representation(loss: PrivacyLoss) -> Representation:
    """The representation of :func:`representation` for a law without its own."""
    a, b = (float(x) for x in loss.quantile_range(_REPR_ETA))
    if b <= a:
        a, b = a - 1e-9, a + 1e-9
    grid = np.linspace(a, b, _REPR_POINTS)
    edges = np.concatenate(([-np.inf], grid, [np.inf]))
    m_p, m_q = loss.cell_masses(edges)
    m_p = np.asarray(m_p, dtype=float)
    m_q = np.asarray(m_q, dtype=float)
    mids = np.concatenate(([a], 0.5 * (grid[1:] + grid[:-1]), [b]))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.log(m_p) - np.log(m_q)
    lo = np.concatenate(([-np.inf], grid))
    hi = np.concatenate((grid, [np.inf]))
    ok = np.isfinite(ratio)
    values = np.where(ok, np.clip(ratio, lo, hi), mids)
    keep = (m_p > 0) | (m_q > 0)
    return values[keep], m_p[keep], m_q[keep]


def _moments_of(rep: Representation) -> tuple[float, float]:
    """Mean and variance under P of a representation (finite part, renormalised)."""
    values, m_p, _ = rep
    tot = float(m_p.sum())
    if tot <= 0.0:
        return 0.0, 0.0
    mean = float((m_p * values).sum() / tot)
    var = float((m_p * (values - mean) ** 2).sum() / tot)
    return mean, max(var, 0.0)


class _RepresentedLoss(PrivacyLoss):
    """A law whose grid-sizing summaries, :attr:`moments` and :attr:`sizing_cgf`, come from
    its :attr:`_representation`, built once for both (see the module docstring)."""

    @property
    @abstractmethod
    def _representation(self) -> Representation: ...

    @cached_property
    def _sizing(self) -> tuple[tuple[float, float], np.ndarray]:
        rep = self._representation
        return _moments_of(rep), sizing_cgf_of(rep[0], rep[1])

    @property
    def moments(self) -> tuple[float, float]:
        return self._sizing[0]

    @property
    def sizing_cgf(self) -> np.ndarray:
        return self._sizing[1]


def _check_q(q: float) -> float:
    q = float(q)
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must lie in (0, 1) for a subsampled loss law, got {q!r}")
    return q


class _Phi:
    """phi(x) = log(1 - q + q e^x) and its inverse, to full relative precision in the tails."""

    def __init__(self, q: float) -> None:
        self.q = q
        self.log_q = math.log(q)
        #: log(1 - q): the image of x = -inf.
        self.c = math.log1p(-q)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """phi(x) = logaddexp(log(1-q), log q + x); -inf maps to log(1 - q)."""
        x = np.asarray(x, dtype=float)
        return np.logaddexp(self.c, self.log_q + x)

    def inverse(self, y: np.ndarray) -> np.ndarray:
        """phi^{-1}(y) = log((e^y - 1 + q) / q): -inf for y <= log(1-q), +inf at +inf.

        For y > 0 as y + log1p(-(1-q) e^{-y}) - log q; for log(1-q) < y <= 0 as
        log(1-q) + log(expm1(y - log(1-q))) - log q, which keeps its precision
        right down to the bottom of the range.
        """
        y = np.asarray(y, dtype=float)
        out = np.full(y.shape, -np.inf)
        pos = y > 0.0
        mid = (y > self.c) & ~pos
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            yp = y[pos]
            out[pos] = yp + np.log1p(-(1.0 - self.q) * np.exp(-yp)) - self.log_q
            d = y[mid] - self.c
            out[mid] = self.c + np.log(np.expm1(d)) - self.log_q
        return out


# ----------------------------------------------------------------------------------
# Poisson subsampling
# ----------------------------------------------------------------------------------

class PoissonRemoveLoss(_RepresentedLoss):
    """Loss of the pair ((1-q) Q + q P, Q) for a base pair (P, Q) with loss L.

    The loss is phi(L) = log(1 - q + q e^L), increasing in L. Under the first
    distribution its law is (1-q) (law of phi(L) under Q) + q (law of phi(L)
    under P); under Q it is the law of phi(L) under Q. The base atom L = -inf
    (Q-mass ``q_ninf``) becomes the finite atom log(1-q) with masses
    ((1-q) q_ninf, q_ninf); the base atom L = +inf keeps its place with P-mass
    q p_inf.

    Parameters
    ----------
    base:
        Law of L = log(dP/dQ); cell masses and profile hold for any pair, the
        quantile range assumes a symmetric one (the law of L under P equals the
        law of -L under Q).
    q:
        Sampling probability, 0 < q < 1.
    """

    def __init__(self, base: PrivacyLoss, q: float) -> None:
        self.base = base
        self.q = _check_q(q)
        self._phi = _Phi(self.q)
        self.p_inf = self.q * base.p_inf
        self.p_inf_truncated = self.q * base.p_inf_truncated
        self.q_ninf = 0.0
        self.has_atoms = bool(base.has_atoms or base.q_ninf > 0)

    @property
    def key(self) -> tuple:
        return ("poisson-remove", self.q, self.base.key)

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e = np.asarray(edges, dtype=float)
        t = np.maximum.accumulate(self._phi.inverse(e))
        m_p, m_q = _masses_between(self.base, t)
        p = (1.0 - self.q) * m_q + self.q * m_p
        qm = m_q.copy()
        if self.base.q_ninf > 0:
            i = _cell_of(e, self._phi.c)
            if i is not None:
                p[i] += (1.0 - self.q) * self.base.q_ninf
                qm[i] += self.base.q_ninf
        return p, qm

    def profile(self, eps: np.ndarray) -> np.ndarray:
        """H_{e^eps} = q H_{gamma}(P || Q) with gamma = 1 + (e^eps - 1)/q, i.e. log gamma = phi^{-1}(eps).

        Where e^eps <= 1 - q the first distribution exceeds e^eps Q everywhere
        and the value is 1 - e^eps.
        """
        eps = np.asarray(eps, dtype=float)
        inner = self._phi.inverse(eps)
        big = np.isfinite(inner) | (inner == np.inf)
        safe = np.where(np.isfinite(inner), inner, 0.0)
        val = self.q * np.asarray(self.base.profile(safe), dtype=float)
        val = np.where(inner == np.inf, self.p_inf, val)
        low = -np.expm1(np.minimum(eps, 0.0))
        return np.clip(np.where(big, val, low), 0.0, 1.0)

    def _base_range(self, eta: float) -> tuple[float, float]:
        """An interval holding L under P and under Q up to eta on each side (symmetric base)."""
        a, b = self.base.quantile_range(eta)
        return min(a, -b), max(b, -a)

    def quantile_range(self, eta: float) -> tuple[float, float]:
        lo, hi = self._base_range(eta)
        phi = self._phi.forward(np.array([lo, hi]))
        a = self._phi.c if self.base.q_ninf > 0 else float(phi[0])
        return a, float(phi[1])

    @property
    def _representation(self) -> Representation:
        v, mp, mq = representation(self.base)
        values = self._phi.forward(v)
        p = (1.0 - self.q) * mq + self.q * mp
        qm = mq
        if self.base.q_ninf > 0:
            values = np.append(values, self._phi.c)
            p = np.append(p, (1.0 - self.q) * self.base.q_ninf)
            qm = np.append(qm, self.base.q_ninf)
        return values, p, qm


class PoissonAddLoss(_RepresentedLoss):
    """Loss of the pair (Q, (1-q) Q + q P) for a symmetric base pair (P, Q) with loss L.

    The loss is -phi(L), decreasing in L: a cell (a, b] of it is the set of L in
    [phi^{-1}(-b), phi^{-1}(-a)). Its law under Q is the law of -phi(L) under Q,
    and under the mixture (1-q) (law under Q) + q (law under P). The base atom
    L = +inf becomes -inf (Q-side mass q p_inf); L = -inf becomes the finite atom
    -log(1-q) with masses (q_ninf, (1-q) q_ninf).

    Parameters
    ----------
    base:
        Law of L = log(dP/dQ); its pair must be symmetric (the law of L under P
        equals the law of -L under Q), as for every single-part zoo mechanism.
    q:
        Sampling probability, 0 < q < 1.
    """

    def __init__(self, base: PrivacyLoss, q: float) -> None:
        self.base = base
        self.q = _check_q(q)
        self._phi = _Phi(self.q)
        self.p_inf = 0.0
        self.q_ninf = self.q * base.p_inf
        self.has_atoms = bool(base.has_atoms or base.q_ninf > 0)

    @property
    def key(self) -> tuple:
        return ("poisson-add", self.q, self.base.key)

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e = np.asarray(edges, dtype=float)
        s = self._phi.inverse(-e)
        r = np.maximum.accumulate(s[::-1])
        m_p_rev, m_q_rev = _masses_between(self.base, _prev(r))
        m_p, m_q = m_p_rev[::-1], m_q_rev[::-1]
        p = m_q.copy()
        qm = (1.0 - self.q) * m_q + self.q * m_p
        if self.base.q_ninf > 0:
            i = _cell_of(e, -self._phi.c)
            if i is not None:
                p[i] += self.base.q_ninf
                qm[i] += (1.0 - self.q) * self.base.q_ninf
        return p, qm

    def profile(self, eps: np.ndarray) -> np.ndarray:
        """H_{e^eps}(Q || (1-q) Q + q P) = (1 - (1-q) e^eps) H_beta(P || Q), 0 once (1-q) e^eps >= 1.

        Here log beta = -phi^{-1}(-eps), and H_beta(Q || P) = H_beta(P || Q)
        because the base pair is symmetric.
        """
        eps = np.asarray(eps, dtype=float)
        log_c = np.log(-np.expm1(np.minimum(eps + self._phi.c, -1e-300)))
        inner = self._phi.inverse(-eps)
        alive = (eps + self._phi.c < 0) & np.isfinite(inner)
        arg = np.where(alive, -inner, 0.0)
        val = np.exp(log_c) * np.asarray(self.base.profile(arg), dtype=float)
        return np.clip(np.where(alive, val, 0.0), 0.0, 1.0)

    def quantile_range(self, eta: float) -> tuple[float, float]:
        a, b = self.base.quantile_range(eta)
        lo, hi = min(a, -b), max(b, -a)
        phi = self._phi.forward(np.array([lo, hi]))
        top = -self._phi.c if self.base.q_ninf > 0 else float(-phi[0])
        return float(-phi[1]), top

    @property
    def _representation(self) -> Representation:
        v, mp, mq = representation(self.base)
        values = -self._phi.forward(v)
        p = mq
        qm = (1.0 - self.q) * mq + self.q * mp
        if self.base.q_ninf > 0:
            values = np.append(values, -self._phi.c)
            p = np.append(p, self.base.q_ninf)
            qm = np.append(qm, (1.0 - self.q) * self.base.q_ninf)
        return values, p, qm


# ----------------------------------------------------------------------------------
# symmetrisation (replace-one relation)
# ----------------------------------------------------------------------------------

class SymmetrizedLoss(_RepresentedLoss):
    """The symmetric pair (X, Y) whose profile agrees with that of a pair ``half`` for eps >= 0.

    With (A, B) the pair of ``half`` and L_h its loss, the law of the new loss L
    under X is: the law of L_h under A on (0, +inf] (so H_{e^eps}(X || Y) =
    H_{e^eps}(A || B) for eps >= 0); an atom at 0 of mass
    a0 = 1 - A(L_h > 0) - B(0 < L_h < inf) under both X and Y; and on (-inf, 0)
    the mirror image of the law of L_h under B on (0, inf). Under Y the law is
    the mirror image of the law under X, so the pair is symmetric and for
    eps < 0 its profile is 1 - e^eps + e^eps H_{e^-eps}(A || B).

    For a symmetric relation (replace-one) the privacy profile of a mechanism
    satisfies exactly that identity, so any bound on it for eps >= 0 extends to
    all eps through this pair, which is then a dominating pair.

    Raises ValueError when a0 < 0 (the positive part of ``half`` is not the
    positive part of any symmetric pair).
    """

    def __init__(self, half: PrivacyLoss) -> None:
        self.half = half
        m_p, m_q = half.cell_masses(np.array([0.0, np.inf]))
        a0 = 1.0 - float(m_p[0]) - half.p_inf - float(m_q[0])
        if a0 < -1e-12:
            raise ValueError("the law has too much mass above 0 to be the positive part of a "
                             f"symmetric pair (atom at 0 would be {a0:.3g})")
        self.a0 = max(a0, 0.0)
        self.p_inf = half.p_inf
        self.p_inf_truncated = half.p_inf_truncated
        self.q_ninf = half.p_inf
        self.has_atoms = bool(self.a0 > 0 or half.has_atoms)

    @property
    def key(self) -> tuple:
        return ("symmetrized", self.half.key)

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e = np.asarray(edges, dtype=float)
        # Positive losses: the cells clipped to (0, inf). Negative losses: L in
        # (e_i, e_{i+1}] with L < 0 is s = -L in [-e_{i+1}, -e_i) with s > 0, i.e.
        # (prev(-e_{i+1}), prev(-e_i)]; without atoms the shift by one ulp is void.
        f = -e[::-1]
        g = _prev(f) if self.half.has_atoms else f
        g = np.where(f > 0.0, g, 0.0)
        (pos_p, pos_q), (neg_p_rev, neg_q_rev) = _masses_on(self.half, [np.maximum(e, 0.0), g])
        neg_p, neg_q = neg_p_rev[::-1], neg_q_rev[::-1]
        p = pos_p + neg_q
        qm = pos_q + neg_p
        if self.a0 > 0:
            i = _cell_of(e, 0.0)
            if i is not None:
                p[i] += self.a0
                qm[i] += self.a0
        return p, qm

    def profile(self, eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        h = np.asarray(self.half.profile(np.abs(eps)), dtype=float)
        neg = -np.expm1(np.minimum(eps, 0.0)) + np.exp(np.minimum(eps, 0.0)) * h
        return np.clip(np.where(eps >= 0, h, neg), 0.0, 1.0)

    def quantile_range(self, eta: float) -> tuple[float, float]:
        # X(L < -b) = B(L_h > b) <= A(L_h > b) for b >= 0.
        b = max(float(self.half.quantile_range(eta)[1]), 0.0)
        return -b, b

    @property
    def _representation(self) -> Representation:
        v, mp, mq = representation(self.half)
        pos = v > 0
        values = np.concatenate((v[pos], [0.0], -v[pos]))
        p = np.concatenate((mp[pos], [self.a0], mq[pos]))
        qm = np.concatenate((mq[pos], [self.a0], mp[pos]))
        return values, p, qm


# ----------------------------------------------------------------------------------
# mixtures (disjoint unions of pairs)
# ----------------------------------------------------------------------------------

class MixtureLoss(_RepresentedLoss):
    """Loss of the disjoint union of pairs: with probability w_i the pair i, plus an infinite part.

    The pair is (sum_i w_i P_i (+) w_inf U, sum_i w_i Q_i (+) w_inf V) on the
    disjoint union of the components' outcome spaces, where U and V are point
    masses on two extra outcomes that only one side can produce: the loss law
    is the w-mixture of the components' laws, plus P-mass w_inf at +inf and
    Q-mass w_inf at -inf. The mixture is symmetric when every component is.

    Parameters
    ----------
    components:
        Loss laws of the component pairs.
    weights:
        Their probabilities w_i >= 0, with sum(w) + w_inf = 1.
    w_inf:
        Probability of the part where the outcome reveals which side it came from.
    """

    def __init__(self, components: list[PrivacyLoss], weights: np.ndarray, w_inf: float = 0.0) -> None:
        w = np.asarray(weights, dtype=float)
        if len(components) != len(w) or len(components) == 0:
            raise ValueError("components and weights must be non-empty and of the same length")
        if np.any(w < 0) or w_inf < 0:
            raise ValueError("weights must be non-negative")
        self.components = list(components)
        self.weights = w
        self.w_inf = float(w_inf)
        self.p_inf = float(np.dot(w, [c.p_inf for c in components])) + self.w_inf
        self.p_inf_truncated = float(np.dot(w, [c.p_inf_truncated for c in components]))
        self.q_ninf = float(np.dot(w, [c.q_ninf for c in components])) + self.w_inf
        self.has_atoms = any(c.has_atoms for c in components)

    @property
    def key(self) -> tuple:
        return ("mixture", tuple((c.key, float(w)) for c, w in zip(self.components, self.weights)),
                self.w_inf)

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e = np.asarray(edges, dtype=float)
        p = np.zeros(len(e) - 1)
        qm = np.zeros(len(e) - 1)
        for c, w in zip(self.components, self.weights):
            mp, mq = c.cell_masses(e)
            p += w * np.asarray(mp, dtype=float)
            qm += w * np.asarray(mq, dtype=float)
        return p, qm

    def profile(self, eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        val = np.full(eps.shape, self.w_inf)
        for c, w in zip(self.components, self.weights):
            val = val + w * np.asarray(c.profile(eps), dtype=float)
        return np.clip(val, 0.0, 1.0)

    def quantile_range(self, eta: float) -> tuple[float, float]:
        """Component i is cut at tail mass eta / (m w_i) (m components), so the mixture's
        tails total at most eta; components lighter than eta / m need no range."""
        m = len(self.components)
        ranges = [c.quantile_range(eta / (m * w)) for c, w in zip(self.components, self.weights)
                  if m * w > eta]
        if not ranges:
            ranges = [c.quantile_range(eta) for c in self.components]
        return min(r[0] for r in ranges), max(r[1] for r in ranges)

    @property
    def _representation(self) -> Representation:
        parts = [representation(c) for c in self.components]
        values = np.concatenate([r[0] for r in parts])
        p = np.concatenate([w * r[1] for r, w in zip(parts, self.weights)])
        qm = np.concatenate([w * r[2] for r, w in zip(parts, self.weights)])
        return values, p, qm
