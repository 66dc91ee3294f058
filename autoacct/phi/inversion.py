"""One direction of a composition: its composed laws, damped spectrum and inversion.

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
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from autoacct.converters.rdp import DELTA_FLOOR
from autoacct.errors import BudgetExceeded, BudgetWarning, PhiAccuracyWarning
from autoacct.limits import check_deadline
from autoacct.losses import PrivacyLoss
from autoacct.phi.enumeration import Enumerated, composed_masses, enumerate_atoms
from autoacct.phi.laws import UNIT_ROUNDOFF, AtomsLaw, GaussLaw, Law, TooFine, closed_form_law, lattice_law
from autoacct.shortcuts import composed_max_loss

#: Bound on the truncated part of the transform, in units of the answer's scale
#: e^{K(alpha) - alpha eps} (which exceeds delta by a polynomial factor only).
_ETA_TAIL = 1e-13
#: Largest number of frequencies the accountant evaluates.
K_MAX = 1 << 21
#: Smallest normal double: a Chernoff excess below it settles delta without a spectrum.
_TINY = np.finfo(float).tiny
_CHUNK = 1 << 14


@dataclass
class DampedSpectrum:
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


_LAMBDAS = np.logspace(-4.0, 4.0, 81)


class Direction:
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
        #: The largest finite composed loss (+inf if a part's is unknown, a Gaussian's is):
        #: at eps >= top, delta(eps) = P(L > eps) - e^eps Q(L > eps) + p_inf is p_inf alone.
        #: Each part's largest loss is raised by its value error (a computed log-odds may be
        #: below the true one), which composed_max_loss's margin (two roundoffs of each
        #: product) does not cover.
        self.top = composed_max_loss([(_raised(loss.max_loss, loss.value_error), k) for loss, k in parts])
        #: Whether no part has mass at +inf (the composition then has none either).
        self.no_inf_mass = all(loss.p_inf == 0.0 for loss, _ in parts)
        self.exact: list[tuple[Law, int]] = []
        self.generic: list[tuple[PrivacyLoss, int]] = []
        for loss, k in merged.values():
            law = closed_form_law(loss)
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
        self.atoms = any(not isinstance(law, GaussLaw) for law, _ in self.exact) or \
            any(getattr(loss, "has_atoms", False) for loss, _ in self.generic)
        #: Spectra by (alpha, window, budget, tol); at most 64 kept.
        self._cache: dict[tuple, DampedSpectrum] = {}
        #: The composed laws by budget.
        self._composed: dict[tuple, tuple[list[tuple[Law, int]], float, float]] = {}
        self._lattices: dict[float, list[tuple[Law, int]]] = {}
        self._enum: list[Enumerated | None] = []

    @property
    def enumerated(self) -> Enumerated | None:
        """This direction's composed law atom by atom, when it is small and purely atomic.

        Its profile is then exact (up to rounding, bounded from above): no spectrum,
        no smoothing. Spectral sizing follows the loss's spread, which fails for atoms
        of very unequal scales (a rare atom far from a heavy one).
        """
        if not self._enum:
            self._enum.append(None if (self.generic or self.gauss_mu2 > 0)
                              else enumerate_atoms(self.exact))
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
        var = max(self.var, 1e-300)
        # 0.1 tol ref / (1 + slope), slope = (ref - mean)_+ / var, written so that neither
        # factor overflows at an eps near the largest float (ref / (var + gap) <= ~1 there).
        b2 = max(0.1 * tol * var * (ref / (var + max(ref - self.mean, 0.0))), _TINY)
        smooth = b2 / 2.0 if self.generic else b2
        if self.atoms:
            # (tol ref / 6)^2 overflows past ref ~ 1e150; there it is far above b2 anyway.
            atom_scale = tol * ref / 6.0
            if atom_scale < 1e150:
                smooth = min(smooth, atom_scale * atom_scale)
        return 2.0 ** math.floor(math.log2(b2)), 2.0 ** math.floor(math.log2(smooth))

    def _laws(self, budget: tuple[float, float]) -> tuple[list[tuple[Law, int]], float]:
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

    def _discretised(self, h: float) -> list[tuple[Law, int]]:
        eta = 1e-18 / max(self.k_generic, 1)
        while True:
            if h in self._lattices:
                return self._lattices[h]
            try:
                out: list[tuple[Law, int]] = []
                for i, (loss, k) in enumerate(self.generic):
                    if i:  # between parts only: a query on one part is never cut
                        check_deadline("discretising the laws of the characteristic-function route")
                    out.append((lattice_law(loss, h, eta), k))
            except TooFine:
                warn_accuracy("the discretised law needs too many points; using a coarser lattice")
                h *= 2.0
                continue
            self._lattices[h] = out
            return out

    def composed(self, budget: tuple[float, float]) -> tuple[list[tuple[Law, int]], float, float]:
        """(all component laws with the Gaussian part last, its mu^2, the atom at +inf)."""
        key = ("composed", budget)
        if key not in self._composed:
            laws, smoothing = self._laws(budget)
            mu2 = self.gauss_mu2 + smoothing
            all_laws = laws + ([(GaussLaw(mu2=mu2), 1)] if mu2 > 0 else [])
            _, _, p_inf = composed_masses(laws)
            self._composed[key] = (all_laws, mu2, p_inf)
        return self._composed[key]

    def _lambdas(self) -> np.ndarray:
        sd = math.sqrt(max(self.var, 1e-300))
        return _LAMBDAS / max(sd, 1e-8)

    @staticmethod
    def _cumulant(all_laws: Sequence[tuple[Law, int]], s: np.ndarray) -> np.ndarray:
        out = np.zeros(np.shape(s))
        with np.errstate(over="ignore", invalid="ignore"):
            for i, (law, k) in enumerate(all_laws):
                if i:
                    check_deadline("the cumulant function of the characteristic-function route")
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
                 tol: float) -> DampedSpectrum:
        key = (budget, alpha, round(eps_lo, 6), round(eps_hi, 6), tol)
        if key not in self._cache:
            if len(self._cache) > 64:
                self._cache = {}
            self._cache[key] = self._build(alpha, eps_lo, eps_hi, budget, tol)
        return self._cache[key]

    def _window(self, all_laws: Sequence[tuple[Law, int]], alpha: float, eps_lo: float,
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
               tol: float) -> DampedSpectrum:
        all_laws, mu2, p_inf = self.composed(budget)
        width = self._window(all_laws, alpha, eps_lo, eps_hi, tol)
        dt = 2.0 * math.pi / width
        lattice = [law.h for law, _ in all_laws if isinstance(law, AtomsLaw) and law.h is not None]
        if lattice:
            h = lattice[0]
            dt = 2.0 * math.pi / (math.ceil(2.0 * math.pi / (dt * h)) * h)
        n = self._n_terms(dt, mu2)
        lm = np.zeros(n, dtype=complex)
        rel = np.zeros(n)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            for i, (law, cnt) in enumerate(all_laws):
                if i:
                    check_deadline("the spectrum of the characteristic-function route")
                part, err = law.log_m_grid(alpha, dt, n)
                lm = lm + cnt * part
                if err > 0:
                    # |M(alpha + it)| relative to M(alpha): the error of one evaluation relative to it.
                    ratio = np.exp(float(law.log_mgf(np.array([alpha]))[0]) - part.real)
                    rel += cnt * err * ratio
                rel += cnt * 2.0 * UNIT_ROUNDOFF * np.abs(part)
            lm = np.where(np.isnan(lm), -np.inf + 0j, lm)
            l0 = float(lm[0].real)
            z = alpha + 1j * dt * np.arange(n)
            c = np.exp(lm - l0) / (z * (z + 1.0))
        c = np.where(np.isfinite(c), c, 0.0)
        rel = np.where(np.isfinite(rel), np.minimum(rel, 2.0), 2.0)
        return DampedSpectrum(alpha=alpha, dt=dt, c=c, rel=rel, phase=np.abs(lm.imag), l0=l0,
                              tail=self._tail(dt, n, mu2), p_inf=p_inf)

    @staticmethod
    def _tail(dt: float, n: int, mu2: float) -> float:
        """Bound on sum_{k >= n} |c_k| <= sum_{k >= n} e^{-mu2 t_k^2 / 2} / t_k^2 (t_k = k dt)."""
        if n <= 0:
            return np.inf
        tn = n * dt
        if tn * tn == 0.0 or dt * tn == 0.0:
            # A step so fine (an alias window near the largest float) that the bound underflows:
            # it bounds nothing, and the caller's answer falls back to its Chernoff bound.
            return np.inf
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
                warn_accuracy(f"the phi accountant needs more than {K_MAX} frequencies; truncating")
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
    def delta_upper(sp: DampedSpectrum, eps: np.ndarray) -> np.ndarray:
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
        e0 = float(np.sum(mag * (sp.rel + UNIT_ROUNDOFF * (4.0 + 2.0 * sp.phase))))
        e1 = float(np.sum(mag * 2.0 * UNIT_ROUNDOFF * t))
        n_chunks = max(1, -(-n // _CHUNK))
        err = e0 + np.abs(flat) * e1 + UNIT_ROUNDOFF * (8.0 + math.log2(max(n, 2)) + n_chunks) * absum
        # A scale beyond floats (e^700 times a large sum) bounds nothing: the answer is then 1.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            exponent = np.minimum(sp.l0 - sp.alpha * flat, 700.0)
            part = sp.dt / (2.0 * math.pi) * np.exp(exponent) * (total + err + 2.0 * sp.tail)
            log_scale = math.log(sp.dt / (2.0 * math.pi)) + exponent
            # Where the part's logarithm is below that of 1e-300 its product may underflow:
            # DELTA_FLOOR bounds it there.
            small = log_scale + np.log(np.maximum(total + err + 2.0 * sp.tail, _TINY)) < math.log(DELTA_FLOOR)
            upper = sp.p_inf * (1.0 + 4.0 * UNIT_ROUNDOFF) + np.where(small, DELTA_FLOOR, part)
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
        best = np.minimum(ch.min(axis=1), 0.0)
        # Below 1e-300 the exponential may underflow: DELTA_FLOOR bounds it there.
        tail = np.where(best < math.log(DELTA_FLOOR), DELTA_FLOOR, np.exp(best))
        return (p_inf + tail).reshape(np.shape(eps))

    def delta(self, eps: np.ndarray, budget: tuple[float, float], tol: float) -> np.ndarray:
        """Upper bound on this direction's delta at each eps (one spectrum per damping exponent)."""
        eps = np.asarray(eps, dtype=float)
        flat = eps.ravel()
        if self.enumerated is not None:
            # An atom whose P-mass underflowed to 0 is not enumerated, yet its loss may exceed
            # eps (BinaryCountingExponential(74.6, 20, 5): mass e^-746 at 74.6, delta(1) read 0
            # for the truth 1.04e-324): below the largest finite loss the bound keeps
            # DELTA_FLOOR, as the PLD route's does.
            out = self.enumerated.delta(eps)
            return np.where((out < DELTA_FLOOR) & (eps < self.top), DELTA_FLOOR, out)
        chern = self.chernoff(budget, flat)
        # Where the Chernoff bound is already within tol/1000 of the atom at +inf (a lower
        # bound on delta), or its excess is the floor DELTA_FLOOR (its exponent below that of
        # 1e-300), it is the answer: no spectrum is built. This also spares the spectrum an
        # alias window growing with eps past the support, which near eps = 1e200 underflows
        # its step (the truncation bound then divides by 0).
        _, _, p_inf = self.composed(budget)
        open_ = chern - p_inf > max(1e-3 * tol * p_inf, DELTA_FLOOR)
        # Past the largest finite loss delta is the mass at +inf exactly: 0 when no part has
        # any, else at most the composed laws' (which the discretisation only raises).
        beyond = flat >= self.top
        chern = np.where(beyond, np.minimum(chern, 0.0 if self.no_inf_mass else p_inf), chern)
        open_ &= ~beyond
        out = chern.copy()
        if np.any(open_):
            sub = flat[open_]
            alphas = self.alphas(budget, sub)
            found = np.ones(sub.size)
            for a in np.unique(alphas):
                sel = alphas == a
                try:
                    sp = self.spectrum(float(a), float(sub[sel].min()), float(sub[sel].max()), budget,
                                       tol)
                except BudgetExceeded as exc:
                    # The Chernoff bound (already in ``chern``) stays the answer there.
                    warn_budget(exc)
                    continue
                found[sel] = self.delta_upper(sp, sub[sel])
            out[open_] = np.minimum(found, chern[open_])
        return out.reshape(eps.shape)

    def chernoff_epsilon(self, delta: float, budget: tuple[float, float]) -> float:
        """An eps with delta(eps) <= p_inf + P(L > eps) <= delta, by a Chernoff bound.

        Uses the exact (or dominating discretised) laws without smoothing, so
        the returned eps is itself a certified answer.
        """
        laws, _ = self._laws(budget)
        all_laws = laws + ([(GaussLaw(mu2=self.gauss_mu2), 1)] if self.gauss_mu2 > 0 else [])
        _, _, p_inf = composed_masses(laws)
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



def _raised(value: float, error: float | np.ndarray) -> float:
    """``value`` raised by the largest of ``error``, rounded up (one addition)."""
    err = float(np.max(error, initial=0.0))
    return value if err == 0.0 else math.nextafter(value + err, math.inf)


def warn_budget(exc: BudgetExceeded) -> None:
    """Say that a spectrum was over the resource budget, and that the Chernoff bound stands."""
    warnings.warn(f"the phi accountant skipped a spectrum: {exc}; the Chernoff bound stands in for "
                  "it (valid, but looser; a larger budget, autoacct.limits(memory=...), a larger tol "
                  "or a larger delta would help)", BudgetWarning, stacklevel=4)


def warn_accuracy(msg: str) -> None:
    warnings.warn(msg + "; the bound stays valid but may be looser than requested",
                  PhiAccuracyWarning, stacklevel=4)

