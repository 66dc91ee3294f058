"""The characteristic-function (phi) accountant (Zhu, Dong and Wang 2022; seed 001).

Representation. A dominating pair (P, Q) is described by the characteristic
functions of its privacy loss L = log(dP/dQ),

    phi_P(t) = E_P[e^{itL}; L finite],    phi_Q(t) = E_Q[e^{itL}; L finite] = E_P[e^{(it-1)L}; L finite]

(seed 001's phi'(t) = E_Q[e^{it log(q/p)}] is phi_Q(-t)), and more generally by
M(z) = E_P[e^{zL}; L finite] on a vertical line z = alpha + it, alpha > 0.
Composition multiplies them: log M of a composition is the sum of the parts'
log M times their counts (branches of the logarithm do not matter, counts
being integers). Closed forms: Gaussian, Laplace and finitely many atoms
(randomized response, pure DP, leaky randomized response with its atoms at
+-inf); any other law (e.g. Poisson-subsampled) is read through its cell masses.

Inversion (Levy's formula for an exponentially damped profile). With p_inf the
P-mass at L = +inf, delta(eps) = p_inf + C(eps), C(eps) = E_P[(1 - e^{eps - L})_+; L finite].
For alpha > 0 the damped profile c(x) = e^{alpha x} C(x) is integrable, with
Fourier transform

    c^(t) = int c(x) e^{itx} dx = M(alpha + it) / ((alpha + it)(alpha + 1 + it)),

and the trapezoid rule with step D (nodes t_k = k D) computes, by Poisson
summation, exactly sum_j c(eps + j W) with W = 2 pi / D. Every alias is
nonnegative, so

    delta(eps) <= p_inf + (D / 2 pi) e^{-alpha eps} [c^(0) + 2 sum_{k>=1} Re(c^(t_k) e^{-i t_k eps})]

with no aliasing term to add: the window W only affects tightness (it is
chosen from Chernoff bounds so that the aliases stay below tol/1000 of the
answer). alpha is the saddle point of the Chernoff bound at eps, so the sum
has magnitude e^{K(alpha) - alpha eps}, within a polynomial factor of delta:
rounding errors are relative to delta, not to 1 (no e^eps amplification).
The series is cut after n terms; the rest is bounded by
sum_{k>=n} e^{-mu^2 t_k^2 / 2} / t_k^2, mu^2 the Gaussian part of the
composition (|M(alpha + it)| <= M(alpha) e^{-mu^2 t^2 / 2}).

Smoothing. Laws without a Gaussian part (randomized response, Laplace,
discrete or subsampled laws) decay only like 1/t^2 here. The accountant then
composes one extra, tiny Gaussian mechanism (loss N(mu_s^2/2, mu_s^2)); the
composition with it is at least as revealing (post-processing), so its delta
is still a valid upper bound. Its bias is budgeted against the tolerance:
second order in mu_s for smooth laws, first order (a few mu_s on the eps
scale) next to an atom of the loss, so laws with atoms get mu_s <= tol eps / 6.

Generic laws are replaced by a dominating lattice law: the P-mass of each cell
is split between the cell's two end points so that its P- and Q-masses are
kept (connect the dots), mass below the grid is rounded up to its first point
and mass above it goes to +inf. The split is a mean-preserving spread of the
likelihood ratio under Q, so the profile can only grow, pointwise in eps, and
profiles ordered pointwise stay ordered under composition. Lattice laws (these,
and atom laws on a lattice) get M on all nodes from one FFT.

Two more valid bounds are folded in: delta(eps) <= p_inf + P(L > eps) <=
p_inf + e^{K(lambda) - lambda eps} (Chernoff), and, delta being non-increasing,
the bound at any smaller eps of the same query.

Soundness. Every step above is a proven bound except the floating-point
rounding term, which is a conservative a-priori estimate (componentwise error
bounds for the sums and the FFT, propagated through the powers), not a proof;
the law implementations' own cell masses are trusted.

References: Zhu, Dong and Wang (2022), "Optimal accounting of differential
privacy via characteristic function" (the representation and its
composition); Levy's inversion formula; Carr and Madan (1999) for the damped
transform of a hockey-stick payoff.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special

from autoacct.converters.profile import tradeoff_from_profile
from autoacct.errors import AccuracyWarning
from autoacct.losses import LaplaceLoss, PrivacyLoss

#: Default relative accuracy (on the epsilon scale), as for the PLD accountant.
DEFAULT_TOL = 1e-3
#: Bound on the truncated part of the transform, in units of the answer's scale
#: e^{K(alpha) - alpha eps} (which exceeds delta by a polynomial factor only).
_ETA_TAIL = 1e-13
#: Largest number of frequencies the accountant evaluates.
K_MAX = 1 << 21
#: Largest number of lattice points of one discretised law.
M_MAX = 1 << 18
#: Discrete laws with at most this many atoms keep their exact closed form.
_EXACT_ATOMS = 256
_U = np.finfo(float).eps
#: Smallest normal double: a Chernoff excess below it settles delta without a spectrum.
_TINY = np.finfo(float).tiny
_CHUNK = 1 << 14
#: Compositions of atom laws with at most this many distinct composed atoms are enumerated.
N_ENUMERATE = 1 << 18
#: Largest pairwise sum table formed while enumerating.
_PAIR_MAX = 1 << 22


class PhiAccuracyWarning(AccuracyWarning):
    """The phi accountant could not reach the requested accuracy; its bounds remain valid."""


# ---------------------------------------------------------------------------------------------
# Component laws: log phi under P and Q, cumulant function, sizes.
# ---------------------------------------------------------------------------------------------
class _Law:
    """One component law of the privacy loss (finite part) plus its atom at +inf."""

    p_inf: float = 0.0
    #: mu^2 of the Gaussian factor of |phi| (0 if none): |phi(t)| <= mass * exp(-mu2 t^2 / 2).
    mu2: float = 0.0
    #: Finite masses under P and Q.
    mass_p: float = 1.0
    mass_q: float = 1.0

    def log_phi(self, t: np.ndarray, under: str) -> np.ndarray:
        raise NotImplementedError

    def log_mgf(self, s: np.ndarray) -> np.ndarray:
        """K(s) = log E_P[e^{sL}; L finite] for real s."""
        raise NotImplementedError

    def log_m_grid(self, alpha: float, dt: float, n: int) -> tuple[np.ndarray, float]:
        """log M(alpha + i t_k) at t_k = k dt, k = 0..n-1, with M(s) = E_P[e^{sL}; L finite];
        and the absolute rounding error of M there, as a multiple of M(alpha)."""
        raise NotImplementedError

    def moments(self) -> tuple[float, float]:
        raise NotImplementedError


@dataclass
class _Gauss(_Law):
    """Loss of (N(mu, 1), N(0, 1)): N(mu^2/2, mu^2) under P, N(-mu^2/2, mu^2) under Q."""

    mu2: float = 0.0

    def log_phi(self, t: np.ndarray, under: str) -> np.ndarray:
        sign = 1.0 if under == "P" else -1.0
        return 1j * sign * t * self.mu2 / 2.0 - self.mu2 * t * t / 2.0

    def log_mgf(self, s: np.ndarray) -> np.ndarray:
        return self.mu2 * (s + s * s) / 2.0

    def log_m_grid(self, alpha: float, dt: float, n: int) -> tuple[np.ndarray, float]:
        z = alpha + 1j * dt * np.arange(n)
        return self.mu2 * (z + z * z) / 2.0, 0.0

    def moments(self) -> tuple[float, float]:
        return self.mu2 / 2.0, self.mu2


def _log_exprel(x: np.ndarray) -> np.ndarray:
    """log((e^x - 1)/x) for real x, stable for every x (0 at x = 0)."""
    x = np.asarray(x, dtype=float)
    out = np.zeros(x.shape)
    pos = x > 0
    neg = x < 0
    xp = x[pos]
    out[pos] = xp + np.log(-np.expm1(-xp)) - np.log(xp)
    xn = x[neg]
    out[neg] = np.log(-np.expm1(xn)) - np.log(-xn)
    return out


@dataclass
class _Laplace(_Law):
    """Loss of (Lap(1, b), Lap(0, b)): atoms +1/b (P-mass 1/2), -1/b (P-mass e^{-1/b}/2), and
    (2o - 1)/b for o in (0, 1).

    E_P[e^{sL}] = e^{s/b}/2 + e^{-(1+s)/b}/2 + e^{-(1+s)/b} (e^{(1+2s)/b} - 1) / (2 (1 + 2s));
    phi_P(t) is this at s = it, phi_Q(t) at s = it - 1.
    """

    b: float = 1.0
    mean: float = 0.0
    var: float = 1.0

    def log_phi(self, t: np.ndarray, under: str) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        r = math.exp(-1.0 / self.b)
        z = np.exp(1j * t / self.b)
        zc = np.conj(z)
        if under == "P":
            # s = it: e^{s/b} = z, e^{-(1+s)/b} = r conj(z), 1 + 2s = 1 + 2it.
            val = 0.5 * (z + r * zc) + 0.5 * (z - r * zc) / (1.0 + 2j * t)
        else:
            # s = it - 1: e^{s/b} = r z, e^{-(1+s)/b} = conj(z), 1 + 2s = 2it - 1.
            val = 0.5 * (r * z + zc) + 0.5 * (r * z - zc) / (2j * t - 1.0)
        with np.errstate(divide="ignore"):
            return np.log(val)

    def log_mgf(self, s: np.ndarray) -> np.ndarray:
        s = np.asarray(s, dtype=float)
        b = self.b
        a1 = s / b
        a2 = -(1.0 + s) / b
        a3 = a2 + _log_exprel((1.0 + 2.0 * s) / b) - math.log(b)
        return special.logsumexp(np.stack([a1, a2, a3]), axis=0) + math.log(0.5)

    def log_m_grid(self, alpha: float, dt: float, n: int) -> tuple[np.ndarray, float]:
        # M(z) = e^{z/b}/2 + e^{-(1+z)/b}/2 + e^{z/b} (1 - e^{-(1+2z)/b}) / (2 (1+2z))
        #      = e^{z/b} (1 - z (1 - e^{-(1+2z)/b}) / (1 + 2z)),
        # with |e^{-(1+2z)/b}| < 1 for alpha > 0 and 1 - e^{-x} by expm1. The bracket's
        # absolute error is a few ulps, and M(alpha) >= e^{alpha/b} / 2, hence the bound.
        b = self.b
        z = alpha + 1j * dt * np.arange(n)
        u = 1.0 + 2.0 * z
        with np.errstate(divide="ignore"):
            return z / b + np.log(1.0 - z * (-np.expm1(-u / b)) / u), 32.0 * _U

    def moments(self) -> tuple[float, float]:
        return self.mean, self.var


@dataclass
class _Atoms(_Law):
    """Finitely many atoms x_j with P-masses w_j and Q-masses v_j (finite part of L).

    On a lattice (x_j = (start + j) h), M(alpha + i t_k) at all nodes t_k = k D with
    D = 2 pi / (N h) comes from one FFT of length N of the tilted weights w_j e^{alpha x_j}.
    """

    x: np.ndarray = field(default_factory=lambda: np.zeros(1))
    logw_p: np.ndarray = field(default_factory=lambda: np.zeros(1))
    logw_q: np.ndarray = field(default_factory=lambda: np.zeros(1))
    h: float | None = None
    start: int = 0

    def __post_init__(self) -> None:
        self.mass_p = float(np.exp(special.logsumexp(self.logw_p))) if self.x.size else 0.0
        self.mass_q = float(np.exp(special.logsumexp(self.logw_q))) if self.x.size else 0.0

    def _logw(self, under: str) -> np.ndarray:
        return self.logw_p if under == "P" else self.logw_q

    def log_phi(self, t: np.ndarray, under: str) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        lw = self._logw(under)
        if lw.size == 0:
            return np.full(t.shape, -np.inf + 0j)
        top = float(lw.max())
        w = np.exp(lw - top)
        out = np.empty(t.shape, dtype=complex)
        step = max(1, (1 << 22) // max(lw.size, 1))
        flat_t = t.ravel()
        flat_o = out.ravel()
        for i in range(0, flat_t.size, step):
            tt = flat_t[i:i + step]
            flat_o[i:i + step] = np.exp(1j * np.outer(tt, self.x)) @ w
        with np.errstate(divide="ignore"):
            return (np.log(flat_o) + top).reshape(t.shape)

    def log_m_grid(self, alpha: float, dt: float, n: int) -> tuple[np.ndarray, float]:
        if self.x.size == 0:
            return np.full(n, -np.inf + 0j), 0.0
        lw = self.logw_p + alpha * self.x            # tilted weights
        top = float(lw.max())
        v = np.exp(lw - top)
        t = dt * np.arange(n)
        if self.h is not None:
            period = 2.0 * math.pi / (dt * self.h)
            big_n = int(round(period))
            if big_n >= 1 and abs(period - big_n) <= 1e-9 * period:
                # sum_j v_j e^{i k D (start + j) h} = e^{i k D start h} sum_j v_j e^{2 pi i k j / N}
                j = np.arange(v.size)
                if v.size > big_n:
                    v = np.bincount(j % big_n, weights=v, minlength=big_n)
                else:
                    v = np.concatenate((v, np.zeros(big_n - v.size)))
                spec = np.fft.ifft(v) * big_n
                vals = spec[np.arange(n) % big_n]
                with np.errstate(divide="ignore"):
                    out = np.log(vals) + top + 1j * (t * self.start * self.h)
                # Componentwise FFT rounding: c u log2(N) ||v||_1, ||v||_1 = M(alpha) e^{-top}.
                return out, (5.0 * math.log2(max(big_n, 2)) + 4.0) * _U
        out = np.empty(n, dtype=complex)
        step = max(1, (1 << 22) // v.size)
        for i in range(0, n, step):
            out[i:i + step] = np.exp(1j * np.outer(t[i:i + step], self.x)) @ v
        with np.errstate(divide="ignore"):
            return np.log(out) + top, (v.size + 4.0) * _U

    def log_mgf(self, s: np.ndarray) -> np.ndarray:
        s = np.asarray(s, dtype=float)
        if self.x.size == 0:
            return np.full(s.shape, -np.inf)
        key = s.tobytes()
        memo = self.__dict__.setdefault("_mgf_memo", {})
        if key not in memo:
            flat = s.ravel()
            out = np.empty(flat.size)
            step = max(1, (1 << 21) // self.x.size)
            for i in range(0, flat.size, step):
                z = self.logw_p[None, :] + flat[i:i + step, None] * self.x[None, :]
                top = z.max(axis=1)
                out[i:i + step] = top + np.log(np.exp(z - top[:, None]).sum(axis=1))
            memo[key] = out.reshape(s.shape)
        return memo[key]

    def moments(self) -> tuple[float, float]:
        if self.x.size == 0 or self.mass_p <= 0:
            return 0.0, 0.0
        w = np.exp(self.logw_p) / self.mass_p
        mean = float(np.dot(w, self.x))
        return mean, float(np.dot(w, (self.x - mean) ** 2))


def _atom_arrays(loss: PrivacyLoss) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(values, P-masses, Q-masses) of a law held as finitely many atoms, or None.

    Any law exposing ``values``, ``p_mass`` and ``q_mass`` arrays qualifies
    (:class:`~autoacct.losses.DiscreteLoss` and the zoo's large-support atom laws).
    """
    arrays = [getattr(loss, name, None) for name in ("values", "p_mass", "q_mass")]
    if any(a is None for a in arrays):
        return None
    values, p_mass, q_mass = (np.asarray(a, dtype=float).ravel() for a in arrays)
    if not values.size == p_mass.size == q_mass.size:
        return None
    return values, p_mass, q_mass


def _discrete_law(loss: PrivacyLoss, arrays: tuple[np.ndarray, np.ndarray, np.ndarray]) -> _Atoms:
    """The exact law of finitely many atoms; on the FFT path when they lie on the loss's lattice."""
    values, p_mass, q_mass = arrays
    with np.errstate(divide="ignore"):
        lp = np.log(p_mass)
        lq = np.log(q_mass)
    keep = np.isfinite(lp) | np.isfinite(lq)
    values, lp, lq = values[keep], lp[keep], lq[keep]
    h = getattr(loss, "lattice", None)
    if h and values.size > _EXACT_ATOMS:
        idx = np.round(values / h)
        if np.all(np.abs(values - idx * h) <= 1e-9 * h * np.maximum(1.0, np.abs(idx))):
            start = int(idx.min())
            n = int(idx.max()) - start + 1
            if n <= M_MAX:
                j = (idx - start).astype(int)
                # Atoms on the lattice: dense arrays (log 0 = -inf where no atom).
                full_p = np.full(n, -np.inf)
                full_q = np.full(n, -np.inf)
                np.logaddexp.at(full_p, j, lp)
                np.logaddexp.at(full_q, j, lq)
                law = _Atoms(x=(start + np.arange(n)) * h, logw_p=full_p, logw_q=full_q,
                             h=float(h), start=start)
                law.p_inf = float(loss.p_inf)
                return law
    law = _Atoms(x=values, logw_p=lp, logw_q=lq)
    law.p_inf = float(loss.p_inf)
    return law


def _lattice_law(loss: PrivacyLoss, h: float, eta: float) -> _Atoms:
    """A dominating lattice law on hZ for any loss, from its cell masses (connect the dots)."""
    a, b = loss.quantile_range(eta)
    j_lo = math.floor(a / h) - 1
    j_hi = max(math.ceil(b / h) + 1, j_lo + 2)
    if j_hi - j_lo + 1 > M_MAX:
        raise _TooFine
    grid = np.arange(j_lo, j_hi + 1) * h
    edges = np.concatenate(([-np.inf], grid, [np.inf]))
    m_p, m_q = (np.asarray(v, dtype=float) for v in loss.cell_masses(edges))
    m_p = np.maximum(m_p, 0.0)
    m_q = np.maximum(m_q, 0.0)
    w = np.zeros(grid.size)
    w[0] += m_p[0]                      # (-inf, g_0]: rounded up to g_0
    inner_p = m_p[1:-1]
    inner_q = m_q[1:-1]
    lower_end = grid[:-1]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # Cell (g_j, g_j + h]: the share of its P-mass sent to g_j + h keeps its Q-mass.
        frac = (1.0 - inner_q * np.exp(lower_end) / inner_p) / (-math.expm1(-h))
    frac = np.where(inner_p > 0, np.nan_to_num(frac, nan=1.0, posinf=1.0, neginf=0.0), 0.0)
    frac = np.clip(frac, 0.0, 1.0)
    w[1:] += inner_p * frac
    w[:-1] += inner_p * (1.0 - frac)
    p_inf = float(loss.p_inf) + float(m_p[-1])  # (g_last, inf): to +inf
    keep = w > 0
    idx = np.flatnonzero(keep)
    if idx.size == 0:
        law = _Atoms(x=np.zeros(0), logw_p=np.zeros(0), logw_q=np.zeros(0))
        law.p_inf = min(p_inf, 1.0)
        return law
    first, last = int(idx[0]), int(idx[-1])
    w = w[first:last + 1]
    x = grid[first:last + 1]
    with np.errstate(divide="ignore"):
        lw = np.log(w)
    law = _Atoms(x=x, logw_p=lw, logw_q=lw - x, h=h, start=j_lo + first)
    law.p_inf = min(p_inf, 1.0)
    return law


class _TooFine(Exception):
    pass


def _closed_form(loss: PrivacyLoss) -> _Law | None:
    """The exact law of a loss with a closed-form characteristic function, or None.

    Gaussian laws (``gdp_mu``), Laplace laws, and laws given as finitely many
    atoms (at most 256 of them, or any number on a lattice); anything else is
    discretised from its cell masses.
    """
    if loss.gdp_mu is not None:
        return _Gauss(mu2=float(loss.gdp_mu) ** 2)
    if isinstance(loss, LaplaceLoss):
        mean, var = loss.moments
        return _Laplace(b=float(loss.b), mean=mean, var=var)
    arrays = _atom_arrays(loss)
    if arrays is not None:
        law = _discrete_law(loss, arrays)
        if law.h is not None or law.x.size <= _EXACT_ATOMS:
            return law
    return None


def log_phi(loss: PrivacyLoss, t: np.ndarray, under: str = "P", h: float | None = None) -> np.ndarray:
    """log of the characteristic function of the privacy loss of ``loss`` under P or Q.

    phi_P(t) = E_P[e^{itL}; L finite] and phi_Q(t) = E_Q[e^{itL}; L finite].
    Closed forms for Gaussian, Laplace and discrete laws; any other law is read
    through its cell masses on the lattice hZ (a dominating discretisation; ``h``
    defaults to a thousandth of the loss's standard deviation). The imaginary
    part is defined modulo 2 pi.
    """
    if under not in ("P", "Q"):
        raise ValueError(f"under must be 'P' or 'Q', got {under!r}")
    t = np.asarray(t, dtype=float)
    law = _closed_form(loss)
    if law is None:
        if h is None:
            h = max(math.sqrt(max(loss.moments[1], 1e-24)) * 1e-3, 1e-9)
        law = _lattice_law(loss, h, 1e-18)
    return law.log_phi(t, under)


def composed_log_phi(parts: Sequence[tuple[PrivacyLoss, PrivacyLoss, int]], t: np.ndarray,
                     under: str = "P", direction: int = 0) -> np.ndarray:
    """sum_i k_i log phi_i(t) over the forward (direction 0) or backward (1) laws of ``parts``."""
    t = np.asarray(t, dtype=float)
    total = np.zeros(t.shape, dtype=complex)
    for fwd, bwd, k in parts:
        total = total + k * log_phi(fwd if direction == 0 else bwd, t, under)
    return total


# ---------------------------------------------------------------------------------------------
# One direction: the composed law and its inversion.
# ---------------------------------------------------------------------------------------------
@dataclass
class _Damped:
    """The damped profile's transform on the trapezoid nodes t_k = k dt, for one direction and alpha.

    ``c[k] = M(alpha + i t_k) e^{-L0} / (s_k (s_k + 1))`` with s_k = alpha + i t_k and
    L0 = log M(alpha), so that delta(eps) is about
    p_inf + (dt / 2 pi) e^{L0 - alpha eps} (Re c_0 + 2 sum_{k>=1} Re(c_k e^{-i t_k eps})).
    """

    alpha: float
    dt: float
    c: np.ndarray
    rel: np.ndarray            # rounding bound on |c_k| errors, relative to |c_k|
    phase: np.ndarray          # |arg| of M(alpha + i t_k) (phase rounding)
    tail: float                # bound on sum_{k >= n} |c_k|
    l0: float
    p_inf: float
    lambdas: np.ndarray
    k_pos: np.ndarray          # composed cumulant at the Chernoff exponents


_LAMBDAS = np.logspace(-4.0, 4.0, 81)


class _Direction:
    """The composition of one direction's laws, with its inversion to delta(eps)."""

    def __init__(self, parts: Sequence[tuple[PrivacyLoss, int]]) -> None:
        gauss_mu2 = 0.0
        merged: dict[tuple, list] = {}
        for loss, k in parts:
            if loss.gdp_mu is not None:
                gauss_mu2 += k * float(loss.gdp_mu) ** 2
                continue
            key = loss.key
            if key in merged:
                merged[key][1] += k
            else:
                merged[key] = [loss, k]
        self.gauss_mu2 = gauss_mu2
        self.exact: list[tuple[_Law, int]] = []
        self.generic: list[tuple[PrivacyLoss, int]] = []
        for loss, k in merged.values():
            law = _closed_form(loss)
            if law is None:
                self.generic.append((loss, k))
            else:
                self.exact.append((law, k))
        mean, var = 0.5 * gauss_mu2, gauss_mu2
        for law, k in self.exact:
            m, v = law.moments()
            mean += k * m
            var += k * v
        for loss, k in self.generic:
            m, v = loss.moments
            mean += k * m
            var += k * v
        self.mean = mean
        self.var = var
        self.k_generic = sum(k for _, k in self.generic)
        self.needs_smoothing = bool(self.exact or self.generic)
        self.atoms = any(not isinstance(law, _Gauss) for law, _ in self.exact) or \
            any(getattr(loss, "has_atoms", False) for loss, _ in self.generic)
        self._cache: dict[tuple, _Damped] = {}
        self._lattices: dict[float, list[tuple[_Law, int]]] = {}
        self._enum: list[_Enumerated | None] = []

    @property
    def enumerated(self) -> _Enumerated | None:
        """This direction's composed law atom by atom, when it is small and purely atomic.

        Its profile is then exact (up to rounding, bounded from above): no spectrum,
        no smoothing. Spectral sizing follows the loss's spread, which fails for atoms
        of very unequal scales (a rare atom far from a heavy one).
        """
        if not self._enum:
            self._enum.append(None if (self.generic or self.gauss_mu2 > 0)
                              else _enumerate(self.exact))
        return self._enum[0]

    # ----- sizing ----------------------------------------------------------------------------
    def budget(self, eps_ref: float, tol: float) -> tuple[float, float]:
        """(discretisation budget, smoothing mu^2) for answers near ``eps_ref`` at accuracy ``tol``.

        Smooth laws: adding a small variance B (and mean B/2) to a
        Gaussian-like composed loss of variance V moves eps(delta) by about
        B (1 + (eps - mean)/V) / 2, second order in the added noise; B is kept
        so that this stays below tol * eps_ref / 20 (half of B for the lattice
        of discretised laws, half for smoothing). Laws with atoms (Laplace,
        discrete): smoothing an atom that sits near eps moves eps by a few
        mu_s, first order, so mu_s <= tol * eps_ref / 6 as well. Both are
        rounded down to powers of two so that nearby queries share a spectrum.
        """
        sd = math.sqrt(max(self.var, 1e-300))
        ref = max(eps_ref, 0.5 * sd, 1e-4)
        slope = max(ref - self.mean, 0.0) / max(self.var, 1e-300)
        b2 = 0.1 * tol * ref / (1.0 + slope)
        smooth = b2 / 2.0 if self.generic else b2
        if self.atoms:
            smooth = min(smooth, (tol * ref / 6.0) ** 2)
        return 2.0 ** math.floor(math.log2(b2)), 2.0 ** math.floor(math.log2(smooth))

    def _laws(self, budget: tuple[float, float]) -> tuple[list[tuple[_Law, int]], float]:
        """Component laws (generic ones discretised) and the smoothing mu^2 to add."""
        b2, smooth = budget
        laws = list(self.exact)
        if self.generic:
            h = math.sqrt(2.0 * b2 / self.k_generic)
            h = 2.0 ** math.floor(math.log2(h))
            laws += self._discretised(h)
        smoothing = 0.0
        if self.needs_smoothing and self.gauss_mu2 < smooth:
            smoothing = smooth - self.gauss_mu2
        return laws, smoothing

    def _discretised(self, h: float) -> list[tuple[_Law, int]]:
        eta = 1e-18 / max(self.k_generic, 1)
        while True:
            if h in self._lattices:
                return self._lattices[h]
            try:
                out = [(_lattice_law(loss, h, eta), k) for loss, k in self.generic]
            except _TooFine:
                _warn("the discretised law needs too many points; using a coarser lattice")
                h *= 2.0
                continue
            self._lattices[h] = out
            return out

    def composed(self, budget: tuple[float, float]) -> tuple[list[tuple[_Law, int]], float, float]:
        """(all component laws with the Gaussian part last, its mu^2, the atom at +inf)."""
        key = ("composed", budget)
        if key not in self._cache:
            laws, smoothing = self._laws(budget)
            mu2 = self.gauss_mu2 + smoothing
            all_laws = laws + ([(_Gauss(mu2=mu2), 1)] if mu2 > 0 else [])
            _, _, p_inf = _composed_masses(laws)
            self._cache[key] = (all_laws, mu2, p_inf)
        return self._cache[key]

    def _lambdas(self) -> np.ndarray:
        sd = math.sqrt(max(self.var, 1e-300))
        return _LAMBDAS / max(sd, 1e-8)

    @staticmethod
    def _cumulant(all_laws: Sequence[tuple[_Law, int]], s: np.ndarray) -> np.ndarray:
        out = np.zeros(np.shape(s))
        with np.errstate(over="ignore", invalid="ignore"):
            for law, k in all_laws:
                out = out + k * law.log_mgf(s)
        return np.where(np.isnan(out), np.inf, out)

    def alphas(self, budget: tuple[float, float], eps: np.ndarray) -> np.ndarray:
        """Damping exponents: the Chernoff (saddle-point) exponent of each eps, rounded to a
        power of 2^(1/4) so that nearby eps share a spectrum. Any alpha > 0 gives a valid
        bound; the saddle point makes it tight."""
        all_laws, _, _ = self.composed(budget)
        lam = self._lambdas()
        kk = self._cumulant(all_laws, lam)
        best = lam[np.argmin(kk[None, :] - lam[None, :] * np.asarray(eps, dtype=float).ravel()[:, None],
                             axis=1)]
        # Below the mean the saddle point tends to 0, where the damping vanishes and the
        # window would grow without bound: damp at least at the scale of the loss's spread,
        # but not so hard that e^{alpha (mean - eps)} inflates the rounding.
        # Applies up to two standard deviations above the mean only: beyond, the saddle point
        # is right even when it is small (heavy upper tails).
        sd = math.sqrt(max(self.var, 1e-300))
        gap = self.mean + 2.0 * sd - np.asarray(eps, dtype=float).ravel()
        floor = np.where(gap > 0, np.minimum(1.5 / max(sd, 1e-8), 4.0 / np.maximum(gap, 1e-300)),
                         0.0)
        best = np.clip(np.maximum(best, floor), lam[0], lam[-1])
        return (2.0 ** (np.round(4.0 * np.log2(best)) / 4.0)).reshape(np.shape(eps))

    def spectrum(self, alpha: float, eps_lo: float, eps_hi: float, budget: tuple[float, float],
                 tol: float) -> _Damped:
        key = (budget, alpha, round(eps_lo, 6), round(eps_hi, 6), tol)
        if key not in self._cache:
            if len(self._cache) > 64:
                self._cache = {k: v for k, v in self._cache.items() if k[0] == "composed"}
            self._cache[key] = self._build(alpha, eps_lo, eps_hi, budget, tol)
        return self._cache[key]

    def _window(self, all_laws: Sequence[tuple[_Law, int]], alpha: float, eps_lo: float,
                eps_hi: float, tol: float) -> float:
        """A window W = 2 pi / dt whose aliases are below tol/1000 of the answer.

        Aliasing is one-sided here (it only adds to the bound), so W affects
        tightness, not soundness. The alias at eps - W is at most
        e^{-alpha W} * mass; the one at eps + W at most e^{alpha W} P(L > eps + W).
        """
        lam = self._lambdas()
        kk = self._cumulant(all_laws, lam)

        def log_guess(e: float) -> float:
            # A low guess of log delta(e): the Chernoff bound, less a polynomial factor.
            return float(np.min(kk - lam * e)) - math.log(1e3)

        target_hi = math.log(1e-3 * tol) + log_guess(eps_hi)
        mass_log = max(float(self._cumulant(all_laws, np.array([1e-12]))[0]), 0.0)
        w_left = (mass_log - target_hi) / alpha
        target_lo = math.log(1e-3 * tol) + log_guess(eps_lo)
        sel = lam > 1.05 * alpha
        w_right = 0.0
        if np.any(sel):
            with np.errstate(invalid="ignore"):
                cand = (kk[sel] - lam[sel] * eps_lo - target_lo) / (lam[sel] - alpha)
            cand = cand[np.isfinite(cand)]
            w_right = float(cand.min()) if cand.size else w_left
        sd = math.sqrt(max(self.var, 1e-300))
        return max(w_left, w_right, 8.0 * sd, 1e-6)

    def _build(self, alpha: float, eps_lo: float, eps_hi: float, budget: tuple[float, float],
               tol: float) -> _Damped:
        all_laws, mu2, p_inf = self.composed(budget)
        width = self._window(all_laws, alpha, eps_lo, eps_hi, tol)
        dt = 2.0 * math.pi / width
        lattice = [law.h for law, _ in all_laws if isinstance(law, _Atoms) and law.h is not None]
        if lattice:
            h = lattice[0]
            dt = 2.0 * math.pi / (math.ceil(2.0 * math.pi / (dt * h)) * h)
        n = self._n_terms(dt, mu2)
        lm = np.zeros(n, dtype=complex)
        rel = np.zeros(n)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            for law, cnt in all_laws:
                part, err = law.log_m_grid(alpha, dt, n)
                lm = lm + cnt * part
                if err > 0:
                    # |M(alpha + it)| relative to M(alpha): the error of one evaluation relative to it.
                    ratio = np.exp(float(law.log_mgf(np.array([alpha]))[0]) - part.real)
                    rel += cnt * err * ratio
                rel += cnt * 2.0 * _U * np.abs(part)
            lm = np.where(np.isnan(lm), -np.inf + 0j, lm)
            l0 = float(lm[0].real)
            z = alpha + 1j * dt * np.arange(n)
            c = np.exp(lm - l0) / (z * (z + 1.0))
        c = np.where(np.isfinite(c), c, 0.0)
        rel = np.where(np.isfinite(rel), np.minimum(rel, 2.0), 2.0)
        return _Damped(alpha=alpha, dt=dt, c=c, rel=rel, phase=np.abs(lm.imag), l0=l0,
                       tail=self._tail(dt, n, mu2), p_inf=p_inf, lambdas=self._lambdas(),
                       k_pos=self._cumulant(all_laws, self._lambdas()))

    @staticmethod
    def _tail(dt: float, n: int, mu2: float) -> float:
        """Bound on sum_{k >= n} |c_k| <= sum_{k >= n} e^{-mu2 t_k^2 / 2} / t_k^2 (t_k = k dt)."""
        if n <= 0:
            return np.inf
        tn = n * dt
        if mu2 <= 0:
            return 1.0 / (tn * tn) + 1.0 / (dt * tn)
        integral = math.sqrt(2.0 * math.pi / mu2) * float(special.ndtr(-tn * math.sqrt(mu2))) / dt
        return (math.exp(-mu2 * tn * tn / 2.0) + integral) / (tn * tn)

    def _n_terms(self, dt: float, mu2: float) -> int:
        if mu2 <= 0:
            return K_MAX
        n = min(max(8, int(math.ceil(math.sqrt(2.0 * 30.0 / mu2) / dt))), K_MAX)
        while self._tail(dt, n, mu2) > _ETA_TAIL:
            if n >= K_MAX:
                _warn(f"the phi accountant needs more than {K_MAX} frequencies; truncating")
                return K_MAX
            n = min(2 * n, K_MAX)
        lo, hi = n // 2, n
        while hi - lo > max(1, hi // 64):
            mid = (lo + hi) // 2
            if self._tail(dt, mid, mu2) > _ETA_TAIL:
                lo = mid
            else:
                hi = mid
        return hi

    # ----- inversion -------------------------------------------------------------------------
    @staticmethod
    def delta_upper(sp: _Damped, eps: np.ndarray) -> np.ndarray:
        """Certified upper bound on this direction's delta at each eps (see the module docstring)."""
        eps = np.asarray(eps, dtype=float)
        flat = eps.ravel()
        n = sp.c.size
        weight = np.full(n, 2.0)
        weight[0] = 1.0
        wc = weight * sp.c
        t = sp.dt * np.arange(n)
        total = np.zeros(flat.size)
        for start in range(0, n, _CHUNK):
            sl = slice(start, start + _CHUNK)
            ang = np.outer(flat, t[sl])
            # Re(c e^{-i ang}) = Re c cos(ang) + Im c sin(ang), summed pairwise along rows.
            total += (np.cos(ang) * wc[sl].real + np.sin(ang) * wc[sl].imag).sum(axis=1)
        mag = np.abs(wc)
        absum = float(mag.sum())
        # Rounding: each term's own error and its phase (u |arg M|, u t |eps|), then the sums.
        e0 = float(np.sum(mag * (sp.rel + _U * (4.0 + 2.0 * sp.phase))))
        e1 = float(np.sum(mag * 2.0 * _U * t))
        n_chunks = max(1, -(-n // _CHUNK))
        err = e0 + np.abs(flat) * e1 + _U * (8.0 + math.log2(max(n, 2)) + n_chunks) * absum
        with np.errstate(over="ignore"):
            scale = sp.dt / (2.0 * math.pi) * np.exp(np.minimum(sp.l0 - sp.alpha * flat, 700.0))
        upper = sp.p_inf * (1.0 + 4.0 * _U) + scale * (total + err + 2.0 * sp.tail)
        upper = np.where(np.isfinite(upper), upper, 1.0)
        return np.clip(upper, 0.0, 1.0).reshape(eps.shape)

    def chernoff(self, budget: tuple[float, float], eps: np.ndarray) -> np.ndarray:
        """delta(eps) <= p_inf + P(L > eps) <= p_inf + min_lambda e^{K(lambda) - lambda eps}."""
        all_laws, _, p_inf = self.composed(budget)
        lam = self._lambdas()
        kk = self._cumulant(all_laws, lam)
        with np.errstate(over="ignore", invalid="ignore"):
            ch = kk[None, :] - lam[None, :] * np.asarray(eps, dtype=float).ravel()[:, None]
        ch = np.where(np.isnan(ch), np.inf, ch)
        return (p_inf + np.exp(np.minimum(ch.min(axis=1), 0.0))).reshape(np.shape(eps))

    def delta(self, eps: np.ndarray, budget: tuple[float, float], tol: float) -> np.ndarray:
        """Upper bound on this direction's delta at each eps (one spectrum per damping exponent)."""
        eps = np.asarray(eps, dtype=float)
        flat = eps.ravel()
        if self.enumerated is not None:
            return self.enumerated.delta(eps)
        chern = self.chernoff(budget, flat)
        # Where the Chernoff bound is already within tol/1000 of the atom at +inf (a lower
        # bound on delta), or its excess underflows, it is the answer: no spectrum is built.
        # This also spares the spectrum an alias window growing with eps past the support.
        _, _, p_inf = self.composed(budget)
        open_ = chern - p_inf > max(1e-3 * tol * p_inf, _TINY)
        out = chern.copy()
        if np.any(open_):
            sub = flat[open_]
            alphas = self.alphas(budget, sub)
            found = np.ones(sub.size)
            for a in np.unique(alphas):
                sel = alphas == a
                sp = self.spectrum(float(a), float(sub[sel].min()), float(sub[sel].max()), budget,
                                   tol)
                found[sel] = self.delta_upper(sp, sub[sel])
            out[open_] = np.minimum(found, chern[open_])
        return out.reshape(eps.shape)

    def chernoff_epsilon(self, delta: float, budget: tuple[float, float]) -> float:
        """An eps with delta(eps) <= p_inf + P(L > eps) <= delta, by a Chernoff bound.

        Uses the exact (or dominating discretised) laws without smoothing, so
        the returned eps is itself a certified answer.
        """
        laws, _ = self._laws(budget)
        all_laws = laws + ([(_Gauss(mu2=self.gauss_mu2), 1)] if self.gauss_mu2 > 0 else [])
        _, _, p_inf = _composed_masses(laws)
        if p_inf >= delta:
            return np.inf
        lam = self._lambdas()
        kk = np.zeros(lam.shape)
        for law, k in all_laws:
            kk = kk + k * law.log_mgf(lam)
        with np.errstate(invalid="ignore"):
            vals = (kk - math.log(delta - p_inf)) / lam
        vals = vals[np.isfinite(vals)]
        return float(max(vals.min(), 0.0)) if vals.size else np.inf


@dataclass
class _Enumerated:
    """A composition of atom laws held atom by atom: sorted values and their log P-masses.

    ``values`` and ``logp`` are already raised by bounds on their rounding
    errors, so the profile read off them is an upper bound.
    """

    values: np.ndarray
    logp: np.ndarray
    p_inf: float
    #: Relative rounding bound of p_inf (0 when it is one law's own atom).
    p_inf_rel: float = 4.0 * _U

    def delta(self, eps: np.ndarray) -> np.ndarray:
        """p_inf + sum_j p_j (1 - e^{eps - x_j})_+, term by term in log space (no cancellation)."""
        eps = np.asarray(eps, dtype=float)
        flat = eps.ravel()
        out = np.empty(flat.size)
        n = self.values.size
        step = max(1, (1 << 22) // max(n, 1))
        for i in range(0, flat.size, step):
            e = flat[i:i + step, None]
            with np.errstate(divide="ignore", over="ignore"):
                terms = self.logp[None, :] + np.log(-np.expm1(np.minimum(e - self.values[None, :], 0.0)))
            terms = np.where(self.values[None, :] > e, terms, -np.inf)
            top = terms.max(axis=1, initial=-np.inf)
            safe = np.where(np.isfinite(top), top, 0.0)
            with np.errstate(under="ignore"):
                total = np.exp(terms - safe[:, None]).sum(axis=1) * np.exp(safe)
            out[i:i + step] = np.where(np.isfinite(top), total, 0.0)
        upper = self.p_inf * (1.0 + self.p_inf_rel) + out * (1.0 + (2.0 * n + 16.0) * _U)
        return np.clip(upper, 0.0, 1.0).reshape(eps.shape)

    @property
    def top(self) -> float:
        """The largest finite value (0 without atoms): delta is p_inf from there on."""
        return float(self.values[-1]) if self.values.size else 0.0


_Table = tuple[np.ndarray, np.ndarray, np.ndarray]


def _merge(values: np.ndarray, logp: np.ndarray, absum: np.ndarray, rel: float) -> _Table:
    """Sort atoms and merge runs whose values agree to within their rounding bounds into one
    atom at the run's largest value (moving P-mass up can only raise the profile).

    ``absum`` is the sum of |x| of the atoms each value was summed from; its error is at
    most ``rel`` times that, and the merged atom keeps the run's largest ``absum``.
    """
    order = np.argsort(values, kind="stable")
    values, logp, absum = values[order], logp[order], absum[order]
    if values.size == 0:
        return values, logp, absum
    gap = 2.0 * rel * np.maximum(absum[1:], absum[:-1])
    starts = np.flatnonzero(np.concatenate(([True], np.diff(values) > gap)))
    ends = np.concatenate((starts[1:], [values.size])) - 1
    return values[ends], np.logaddexp.reduceat(logp, starts), np.maximum.reduceat(absum, starts)


def _convolve(a: _Table, b: _Table, rel: float) -> _Table | None:
    if a[0].size * b[0].size > _PAIR_MAX:
        return None
    out = _merge(*((u[:, None] + v[None, :]).ravel() for u, v in zip(a, b)), rel)
    return out if out[0].size <= N_ENUMERATE else None


def _power(x: np.ndarray, lw: np.ndarray, k: int, rel: float) -> _Table | None:
    """The k-fold composition of the atoms (x, lw); binomial closed form for two atoms."""
    if x.size == 1 or k == 1:
        return x * k, lw * k, np.abs(x) * k
    if x.size == 2:
        if k + 1 > N_ENUMERATE:
            return None
        j = np.arange(k + 1, dtype=float)
        log_binom = special.gammaln(k + 1.0) - special.gammaln(j + 1.0) - special.gammaln(k - j + 1.0)
        return _merge(j * x[1] + (k - j) * x[0], log_binom + j * lw[1] + (k - j) * lw[0],
                      j * abs(x[1]) + (k - j) * abs(x[0]), rel)
    acc: _Table | None = None
    base: _Table | None = (x, lw, np.abs(x))
    while k:
        if base is None:
            return None
        if k & 1:
            acc = base if acc is None else _convolve(acc, base, rel)
            if acc is None:
                return None
        k >>= 1
        if k:
            base = _convolve(base, base, rel)
    return acc


def _enumerate(laws: Sequence[tuple[_Law, int]]) -> _Enumerated | None:
    """The composition of atom laws, enumerated, or None (another kind of law, or too many atoms).

    Rounding: a composed value is a sum of sum_i k_i atoms formed along a tree of depth
    at most ``depth``, so it is off by at most depth u times the sum of the |x| it was
    formed from; log masses likewise. Both are raised by (four times) that bound, which
    also covers the merging of values equal up to rounding. One law taken once is exact.
    """
    if not laws or not all(isinstance(law, _Atoms) for law, _ in laws):
        return None
    parts = []
    for law, k in laws:
        keep = np.isfinite(law.logw_p)
        parts.append((law.x[keep], law.logw_p[keep], k))
    single = len(laws) == 1 and laws[0][1] == 1
    p_inf = min(max(laws[0][0].p_inf if single else _composed_masses(laws)[2], 0.0), 1.0)
    p_inf_rel = 0.0 if single else 4.0 * _U
    if any(x.size == 0 for x, _, _ in parts):
        return _Enumerated(values=np.zeros(0), logp=np.zeros(0), p_inf=p_inf, p_inf_rel=p_inf_rel)
    depth = 0 if single else sum(2 * k.bit_length() + 2 for _, _, k in parts) + 2 * len(parts)
    rel = 4.0 * depth * _U
    l_scale = sum(k * float(np.max(np.abs(lw))) for _, lw, k in parts)
    l_err = 0.0 if single else 4.0 * (depth + 64) * _U * (l_scale + 1.0)
    acc: _Table | None = None
    for x, lw, k in parts:
        one = _power(x, lw, k, rel)
        if one is None:
            return None
        acc = one if acc is None else _convolve(acc, one, rel)
        if acc is None:
            return None
    values, logp, absum = acc
    keep = np.isfinite(logp)
    return _Enumerated(values=values[keep] + rel * absum[keep], logp=logp[keep] + l_err,
                       p_inf=p_inf, p_inf_rel=p_inf_rel)


def _composed_masses(laws: Sequence[tuple[_Law, int]]) -> tuple[float, float, float]:
    """Finite P-mass, finite Q-mass and the P-mass at +inf of the composed law.

    The composed measure is the product of the components' measures, whose
    total P-masses (finite part plus the atom at +inf) are usually 1 but may
    exceed it slightly for laws that round tails pessimistically; the atom at
    +inf is the product of the totals minus the product of the finite parts.
    """
    log_fin_p = 0.0
    log_fin_q = 0.0
    log_ratio = 0.0   # sum k log(finite / total)
    log_total = 0.0
    for law, k in laws:
        total = law.mass_p + law.p_inf
        if law.mass_p <= 0.0:
            return 0.0, 0.0, min(math.exp(sum(kk * math.log(max(lw.mass_p + lw.p_inf, 1e-300))
                                              for lw, kk in laws)), 1.0)
        log_fin_p += k * math.log(law.mass_p)
        log_fin_q += k * math.log(law.mass_q) if law.mass_q > 0 else -np.inf
        log_ratio += k * math.log1p(-law.p_inf / total)
        log_total += k * math.log(total)
    p_inf = -math.exp(log_total) * math.expm1(log_ratio)
    return math.exp(log_fin_p), (math.exp(log_fin_q) if np.isfinite(log_fin_q) else 0.0), p_inf


def _warn(msg: str) -> None:
    warnings.warn(msg + "; the bound stays valid but may be looser than requested",
                  PhiAccuracyWarning, stacklevel=4)


# ---------------------------------------------------------------------------------------------
# The accountant.
# ---------------------------------------------------------------------------------------------
class PhiAccountant:
    """Characteristic-function accountant for a list of (forward law, backward law, count) parts.

    ``delta`` and ``epsilon`` return certified upper bounds (up to the
    floating-point estimate described in the module docstring); delta of the
    mechanism is the larger of the two directions.
    """

    def __init__(self, parts: Sequence[tuple[PrivacyLoss, PrivacyLoss, int]]) -> None:
        parts = [(f, b, int(k)) for f, b, k in parts]
        if not parts:
            raise ValueError("parts must not be empty")
        for i, (_, _, k) in enumerate(parts):
            if k < 1:
                raise ValueError(f"parts[{i}] count must be a positive integer, got {k}")
        symmetric = all(f.key == b.key for f, b, _ in parts)
        self._directions = [_Direction([(f, k) for f, _, k in parts])]
        if not symmetric:
            self._directions.append(_Direction([(b, k) for _, b, k in parts]))

    def _rough_epsilon(self, delta: float) -> float:
        best = 0.0
        for d in self._directions:
            sd = math.sqrt(max(d.var, 0.0))
            best = max(best, d.mean + sd * math.sqrt(2.0 * math.log(1.0 / delta)))
        return best

    def _eps_cap(self, delta: float, tol: float) -> float:
        """An eps whose delta is certified <= ``delta`` by Chernoff bounds (inf if none)."""
        ref = self._rough_epsilon(delta)
        return max(d.chernoff_epsilon(delta, d.budget(ref, tol)) for d in self._directions)

    def delta(self, eps: np.ndarray, tol: float = DEFAULT_TOL) -> np.ndarray:
        """Upper bound on delta(eps) for an array of eps >= 0 (the larger of the directions)."""
        eps = np.asarray(eps, dtype=float)
        if eps.size == 0:
            return np.zeros(eps.shape)
        ref = max(float(np.median(eps)), 0.0)
        out = np.zeros(eps.size)
        for d in self._directions:
            out = np.maximum(out, d.delta(eps.ravel(), d.budget(ref, tol), tol))
        # delta is non-increasing in eps: the bound at a smaller eps holds at a larger one.
        order = np.argsort(eps.ravel(), kind="stable")
        out[order] = np.minimum.accumulate(out[order])
        return out.reshape(eps.shape)

    def epsilon(self, delta: float, tol: float = DEFAULT_TOL) -> float:
        """Upper bound on eps(delta): an eps >= 0 whose certified delta(eps) is <= delta.

        The search runs on [0, cap] with cap from Chernoff bounds (itself a valid
        answer), damping every direction at the saddle point of a first guess
        and then of the first answer; the returned eps is the smallest point
        found, to relative precision 1e-10, at which the certified profile is
        <= delta.
        """
        exact = [d.enumerated for d in self._directions]
        if all(e is not None for e in exact):
            if max(float(e.delta(np.array(e.top))) for e in exact) > delta:
                return np.inf
            return self._solve(lambda x: max(float(e.delta(np.array(x))) for e in exact), delta,
                               max(max(e.top, 0.0) for e in exact))
        cap = self._eps_cap(delta, tol)
        if not np.isfinite(cap):
            return np.inf
        guess = min(self._rough_epsilon(delta), cap)
        best = cap
        for _ in range(2):
            spectra = []
            for d in self._directions:
                budget = d.budget(guess, tol)
                alpha = float(d.alphas(budget, np.array([guess]))[0])
                spectra.append((d, d.spectrum(alpha, 0.0, cap, budget, tol)))

            def dfun(e: float) -> float:
                return max(float(d.delta_upper(sp, np.array([e]))[0]) for d, sp in spectra)

            found = self._solve(dfun, delta, cap)
            best = min(best, found)
            if found == 0.0 or found >= cap:
                break
            guess = found
        return best

    @staticmethod
    def _solve(dfun, delta: float, cap: float) -> float:
        """Smallest verified eps in [0, cap] with dfun(eps) <= delta (cap if none is found)."""
        if dfun(0.0) <= delta:
            return 0.0
        if dfun(cap) > delta:
            return cap
        root = optimize.brentq(lambda e: dfun(e) - delta, 0.0, cap, xtol=1e-13, rtol=1e-11)
        step = 1e-11 * max(root, 1e-6)
        e = root
        for _ in range(60):
            if e >= cap:
                return cap
            if dfun(e) <= delta:
                return float(e)
            e += step
            step *= 2.0
        return cap

    def tradeoff(self, alpha: np.ndarray, tol: float = DEFAULT_TOL) -> np.ndarray:
        """Lower bound on the tradeoff function, by duality from the upper profile."""
        alpha = np.asarray(alpha, dtype=float)
        cap = self._eps_cap(1e-12, tol)
        if not np.isfinite(cap):
            cap = self._rough_epsilon(1e-12) + 1.0
        grid = np.concatenate(([0.0], np.geomspace(1e-3, max(cap, 1e-2), 240)))
        d = self.delta(grid, tol)
        return tradeoff_from_profile(lambda _: d, alpha, grid)


def phi_delta(parts: Sequence[tuple[PrivacyLoss, PrivacyLoss, int]], eps, tol: float = DEFAULT_TOL
              ) -> np.ndarray:
    """Upper bound on delta(eps) of the composition ``parts`` (max over both directions)."""
    return PhiAccountant(parts).delta(np.asarray(eps, dtype=float), tol)


def phi_epsilon(parts: Sequence[tuple[PrivacyLoss, PrivacyLoss, int]], delta: float,
                tol: float = DEFAULT_TOL) -> float:
    """Upper bound on eps(delta) of the composition ``parts``."""
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    return PhiAccountant(parts).epsilon(float(delta), tol)


def phi_tradeoff(parts: Sequence[tuple[PrivacyLoss, PrivacyLoss, int]], alpha,
                 tol: float = DEFAULT_TOL) -> np.ndarray:
    """Lower bound on the tradeoff function of the composition ``parts`` at type I errors ``alpha``."""
    return PhiAccountant(parts).tradeoff(np.asarray(alpha, dtype=float), tol)
