"""Laws of the privacy loss as the phi accountant sees them (Zhu, Dong and Wang 2022).

Representation. A dominating pair (P, Q) is described by the characteristic
functions of its privacy loss L = log(dP/dQ),

    phi_P(t) = E_P[e^{itL}; L finite],    phi_Q(t) = E_Q[e^{itL}; L finite] = E_P[e^{(it-1)L}; L finite]

(Zhu, Dong and Wang's phi'(t) = E_Q[e^{it log(q/p)}] is phi_Q(-t)), and more generally by
M(z) = E_P[e^{zL}; L finite] on a vertical line z = alpha + it, alpha > 0.
Composition multiplies them: log M of a composition is the sum of the parts'
log M times their counts (branches of the logarithm do not matter, counts
being integers). Closed forms: Gaussian, Laplace and finitely many atoms
(randomized response, pure DP, leaky randomized response with its atoms at
+-inf); any other law (e.g. Poisson-subsampled) is read through its cell masses.

Generic laws are replaced by a dominating lattice law: the P-mass of each cell
is split between the cell's two end points so that its P- and Q-masses are
kept (connect the dots), mass below the grid is rounded up to its first point
and mass above it goes to +inf. The split is a mean-preserving spread of the
likelihood ratio under Q, so the profile can only grow, pointwise in eps, and
profiles ordered pointwise stay ordered under composition. Lattice laws (these,
and atom laws on a lattice) get M on all nodes from one FFT.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from autoacct.exactness import MACHINE_EPSILON
from autoacct.limits import afford, check_deadline
from autoacct.losses import LaplaceLoss, PrivacyLoss
from autoacct.pld.discretize import discretize_upper

#: Largest number of lattice points of one discretised law.
M_MAX = 1 << 18
#: Bytes per point of a lattice spectrum in :meth:`AtomsLaw.log_m_grid` (the padded
#: weights, their inverse FFT and its work array: 8 + 16 + 16, rounded up).
_SPECTRUM_BYTES = 48.0
#: Discrete laws with at most this many atoms keep their exact closed form.
_EXACT_ATOMS = 256
UNIT_ROUNDOFF = MACHINE_EPSILON
#: Longest lattice period summed by one FFT (a few tens of MB of complex values).
_MAX_PERIOD = 1 << 22


class Law:
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


#: What stops at the deadline in the direct sums of a law's characteristic function.
_DIRECT_SUMS = "the direct sums of the characteristic-function route"

@dataclass
class GaussLaw(Law):
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
class LaplaceLaw(Law):
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
            return z / b + np.log(1.0 - z * (-np.expm1(-u / b)) / u), 32.0 * UNIT_ROUNDOFF

    def moments(self) -> tuple[float, float]:
        return self.mean, self.var


@dataclass
class AtomsLaw(Law):
    """Finitely many atoms x_j with P-masses w_j and Q-masses v_j (finite part of L).

    On a lattice (x_j = (start + j) h), M(alpha + i t_k) at all nodes t_k = k D with
    D = 2 pi / (N h) comes from one FFT of length N of the tilted weights w_j e^{alpha x_j}.
    ``value_error`` bounds the rounding of every x_j (the loss's ``value_error``, its largest).

    The bounds read this law with every atom raised by ``value_error``: a loss raised only
    raises E_P[(1 - e^{eps - L})_+], so that law's profile bounds the true one from above
    (as :func:`~autoacct.phi.enumeration.enumerate_atoms` adds it), and the raised law's M(z)
    is e^{z value_error} M(z): :meth:`log_m_grid` and :meth:`log_mgf` add z value_error (its
    product and sum rounded like log M's other terms, which the spectrum's rounding bound
    counts). :meth:`log_phi` describes the atoms as they are.
    """

    x: np.ndarray = field(default_factory=lambda: np.zeros(1))
    logw_p: np.ndarray = field(default_factory=lambda: np.zeros(1))
    logw_q: np.ndarray = field(default_factory=lambda: np.zeros(1))
    h: float | None = None
    start: int = 0
    value_error: float = 0.0

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
            if i:
                check_deadline(_DIRECT_SUMS)
            tt = flat_t[i:i + step]
            flat_o[i:i + step] = np.exp(1j * np.outer(tt, self.x)) @ w
        with np.errstate(divide="ignore"):
            return (np.log(flat_o) + top).reshape(t.shape)

    def log_m_grid(self, alpha: float, dt: float, n: int) -> tuple[np.ndarray, float]:
        out, err = self._log_m_grid(alpha, dt, n)
        if self.value_error > 0.0:
            out = out + (alpha + 1j * dt * np.arange(n)) * self.value_error
        return out, err

    def _log_m_grid(self, alpha: float, dt: float, n: int) -> tuple[np.ndarray, float]:
        """:meth:`log_m_grid` of the atoms as they are (without the value error's shift)."""
        if self.x.size == 0:
            return np.full(n, -np.inf + 0j), 0.0
        lw = self.logw_p + alpha * self.x            # tilted weights
        top = float(lw.max())
        v = np.exp(lw - top)
        t = dt * np.arange(n)
        if self.h is not None:
            period = 2.0 * math.pi / (dt * self.h)
            big_n = int(round(period))
            # A period longer than the direct sum's work is summed directly below instead (a
            # lattice of 1e-24 gives a period no array can hold).
            if 1 <= big_n <= max(_MAX_PERIOD, n) and abs(period - big_n) <= 1e-9 * period:
                afford(_SPECTRUM_BYTES * big_n, 0.0, f"a lattice spectrum of {big_n} points")
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
                return out, (5.0 * math.log2(max(big_n, 2)) + 4.0) * UNIT_ROUNDOFF
        # Only atoms with mass enter the direct sum (a lattice law lists every lattice point
        # of its range, most of them empty when the lattice is fine).
        held = v > 0.0
        x, v = self.x[held], v[held]
        out = np.empty(n, dtype=complex)
        step = max(1, (1 << 22) // max(v.size, 1))
        for i in range(0, n, step):
            # One law's direct sums can be the whole query's work (1e9 DP-SGD steps: minutes), so
            # they stop at the deadline between blocks, not only between laws.
            if i:
                check_deadline(_DIRECT_SUMS)
            out[i:i + step] = np.exp(1j * np.outer(t[i:i + step], x)) @ v
        with np.errstate(divide="ignore"):
            return np.log(out) + top, (v.size + 4.0) * UNIT_ROUNDOFF

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
            # (raised by the value error: see the class docstring)
            memo[key] = out.reshape(s.shape) + s * self.value_error
        return memo[key]

    def moments(self) -> tuple[float, float]:
        if self.x.size == 0 or self.mass_p <= 0:
            return 0.0, 0.0
        w = np.exp(self.logw_p) / self.mass_p
        # Elementwise sums, not BLAS dots (see :mod:`autoacct.products`).
        mean = float((w * self.x).sum())
        return mean, float((w * (self.x - mean) ** 2).sum())


def atom_arrays(loss: PrivacyLoss) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
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


def discrete_law(loss: PrivacyLoss, arrays: tuple[np.ndarray, np.ndarray, np.ndarray]) -> AtomsLaw:
    """The exact law of finitely many atoms; on the FFT path when they lie on the loss's lattice."""
    values, p_mass, q_mass = arrays
    with np.errstate(divide="ignore"):
        lp = np.log(p_mass)
        lq = np.log(q_mass)
    keep = np.isfinite(lp) | np.isfinite(lq)
    values, lp, lq = values[keep], lp[keep], lq[keep]
    # (a law of atoms bounds its values' distances to the pair's log-ratios, DiscreteLoss.value_bounds:
    # read at a computed top value as exact, KaryRandomizedResponse taken once answered delta 0
    # against 1e-16)
    bounds = getattr(loss, "value_bounds", None)
    error = float(np.max(bounds() if bounds is not None else loss.value_error, initial=0.0))
    h = getattr(loss, "lattice", None)
    if h and values.size > _EXACT_ATOMS:
        idx = np.round(values / h)
        moved = np.abs(values - idx * h)
        if np.all(moved <= 1e-9 * h * np.maximum(1.0, np.abs(idx))):
            start = int(idx.min())
            n = int(idx.max()) - start + 1
            if n <= M_MAX:
                # Each atom is moved to its lattice point idx h (the float product, x below):
                # by at most the largest move, which the value error takes on too (the
                # differences are exact where they are small, Sterbenz; one roundoff else).
                error = float(np.max(moved, initial=0.0)) * (1.0 + UNIT_ROUNDOFF) + error
                j = (idx - start).astype(int)
                # Atoms on the lattice: dense arrays (log 0 = -inf where no atom).
                full_p = np.full(n, -np.inf)
                full_q = np.full(n, -np.inf)
                np.logaddexp.at(full_p, j, lp)
                np.logaddexp.at(full_q, j, lq)
                law = AtomsLaw(x=(start + np.arange(n)) * h, logw_p=full_p, logw_q=full_q,
                             h=float(h), start=start, value_error=error)
                law.p_inf = float(loss.p_inf)
                return law
    law = AtomsLaw(x=values, logw_p=lp, logw_q=lq, value_error=error)
    law.p_inf = float(loss.p_inf)
    return law


def lattice_law(loss: PrivacyLoss, h: float, eta: float) -> AtomsLaw:
    """A dominating lattice law on hZ for any loss: the upper discrete PLD of :mod:`autoacct.pld.discretize`."""
    a, b = loss.quantile_range(eta)
    j_lo = math.floor(a / h) - 1
    j_hi = max(math.ceil(b / h) + 1, j_lo + 2)
    if j_hi - j_lo + 1 > M_MAX:
        raise TooFine
    # The pld discretiser's upper (connect-the-dots) PLD: each cell's P-mass split between
    # its ends so that its Q-mass is kept, the mass below the grid rounded up to its first
    # point, the mass above it sent to +inf.
    upper = discretize_upper(loss, h, j_lo, j_hi)
    grid = upper.losses
    w = np.maximum(upper.masses, 0.0)
    p_inf = float(upper.p_inf)
    keep = w > 0
    idx = np.flatnonzero(keep)
    if idx.size == 0:
        law = AtomsLaw(x=np.zeros(0), logw_p=np.zeros(0), logw_q=np.zeros(0))
        law.p_inf = min(p_inf, 1.0)
        return law
    first, last = int(idx[0]), int(idx[-1])
    w = w[first:last + 1]
    x = grid[first:last + 1]
    with np.errstate(divide="ignore"):
        lw = np.log(w)
    law = AtomsLaw(x=x, logw_p=lw, logw_q=lw - x, h=h, start=j_lo + first)
    law.p_inf = min(p_inf, 1.0)
    return law


class TooFine(Exception):
    pass


def closed_form_law(loss: PrivacyLoss) -> Law | None:
    """The exact law of a loss with a closed-form characteristic function, or None.

    Gaussian laws (``gdp_mu``), Laplace laws, and laws given as finitely many
    atoms (at most 256 of them, or any number on a lattice); anything else is
    discretised from its cell masses.
    """
    if loss.gdp_mu is not None:
        return GaussLaw(mu2=float(loss.gdp_mu) ** 2)
    if isinstance(loss, LaplaceLoss):
        mean, var = loss.moments
        return LaplaceLaw(b=float(loss.b), mean=mean, var=var)
    arrays = atom_arrays(loss)
    if arrays is not None:
        law = discrete_law(loss, arrays)
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
    law = closed_form_law(loss)
    if law is None:
        if h is None:
            h = max(math.sqrt(max(loss.moments[1], 1e-24)) * 1e-3, 1e-9)
        law = lattice_law(loss, h, 1e-18)
    return law.log_phi(t, under)


def composed_log_phi(parts: Sequence[tuple[PrivacyLoss, PrivacyLoss, int]], t: np.ndarray,
                     under: str = "P", direction: int = 0) -> np.ndarray:
    """sum_i k_i log phi_i(t) over the forward (direction 0) or backward (1) laws of ``parts``."""
    t = np.asarray(t, dtype=float)
    total = np.zeros(t.shape, dtype=complex)
    for fwd, bwd, k in parts:
        total = total + k * log_phi(fwd if direction == 0 else bwd, t, under)
    return total


