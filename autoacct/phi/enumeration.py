"""Exact enumeration of small compositions of atom laws, with rounding bounds."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from autoacct.converters.rdp import DELTA_FLOOR
from autoacct.phi.laws import UNIT_ROUNDOFF, AtomsLaw, Law
from autoacct.pld.cumulants import composed_inf_mass

#: Compositions of atom laws with at most this many distinct composed atoms are enumerated.
N_ENUMERATE = 1 << 18
#: Largest pairwise sum table formed while enumerating.
_PAIR_MAX = 1 << 22


@dataclass
class Enumerated:
    """A composition of atom laws held atom by atom: sorted values and their log P-masses.

    ``values`` and ``logp`` are already raised by bounds on their rounding
    errors, so the profile read off them is an upper bound.
    """

    values: np.ndarray
    logp: np.ndarray
    p_inf: float
    #: Relative rounding bound of p_inf (0 when it is one law's own atom).
    p_inf_rel: float = 4.0 * UNIT_ROUNDOFF

    def delta(self, eps: np.ndarray) -> np.ndarray:
        """p_inf + sum_j p_j (1 - e^{eps - x_j})_+, term by term in log space (no cancellation).

        A term e^{t_j}, t_j = log p_j + log(1 - e^{eps - x_j}), is off by a relative u/2 of the
        size of each logarithm it went through (log p_j, the log of the gap, their sum t_j,
        t_j less the largest term's, and that largest one), not by a few ulps alone: near an
        atom the gap's log is large (-33.5 for PureDP(2.894266124716752e-06) at eps = eps0
        (1 - 1e-9)), and the value came out 1.9e-15 relatively below the exact
        (1 - e^{eps - eps0}) / (1 + e^{-eps0}). Each term's sizes are counted at 2u (numpy's log
        and exp are within an ulp); the sum's relative error is at most its terms' largest."""
        eps = np.asarray(eps, dtype=float)
        flat = eps.ravel()
        out = np.empty(flat.size)
        n = self.values.size
        step = max(1, (1 << 22) // max(n, 1))
        for i in range(0, flat.size, step):
            e = flat[i:i + step, None]
            above = self.values[None, :] > e
            with np.errstate(divide="ignore", over="ignore"):
                log_gap = np.log(-np.expm1(np.minimum(e - self.values[None, :], 0.0)))
            terms = np.where(above, self.logp[None, :] + log_gap, -np.inf)
            top = terms.max(axis=1, initial=-np.inf)
            safe = np.where(np.isfinite(top), top, 0.0)
            with np.errstate(under="ignore"):
                total = np.exp(terms - safe[:, None]).sum(axis=1) * np.exp(safe)
            with np.errstate(invalid="ignore"):
                sizes = np.abs(self.logp[None, :]) + np.abs(log_gap) + np.abs(terms) + np.abs(terms - safe[:, None])
            spread = np.where(above, sizes, 0.0).max(axis=1, initial=0.0) + np.abs(safe)
            total = total * (1.0 + 2.0 * UNIT_ROUNDOFF * spread)
            # A positive sum below 1e-300 (n terms, the largest e^top) may have underflowed:
            # it is then bounded by DELTA_FLOOR, the floor every route's upper delta keeps.
            total = np.where(safe + math.log(n) < math.log(DELTA_FLOOR), DELTA_FLOOR, total)
            out[i:i + step] = np.where(np.isfinite(top), total, 0.0)
        upper = self.p_inf * (1.0 + self.p_inf_rel) + out * (1.0 + (2.0 * n + 16.0) * UNIT_ROUNDOFF)
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
    values, logp, absum = ((u[:, None] + v[None, :]).ravel() for u, v in zip(a, b))
    out = _merge(values, logp, absum, rel)
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


def enumerate_atoms(laws: Sequence[tuple[Law, int]]) -> Enumerated | None:
    """The composition of atom laws, enumerated, or None (another kind of law, or too many atoms).

    Rounding: a composed value is a sum of sum_i k_i atoms formed along a tree of depth
    at most ``depth``, so it is off by at most depth u times the sum of the |x| it was
    formed from; log masses likewise. Both are raised by (four times) that bound, which
    also covers the merging of values equal up to rounding. One law taken once adds no
    rounding of its own. The laws' own value errors (a computed log-odds) are added too, k
    times each law's: raising a loss only raises sum_j p_j (1 - e^{eps - x_j})_+.
    """
    atom_laws = [(law, k) for law, k in laws if isinstance(law, AtomsLaw)]
    if not laws or len(atom_laws) != len(laws):
        return None
    parts = []
    for law, k in atom_laws:
        keep = np.isfinite(law.logw_p)
        parts.append((law.x[keep], law.logw_p[keep], k))
    single = len(laws) == 1 and laws[0][1] == 1
    p_inf = min(max(laws[0][0].p_inf if single else composed_masses(laws)[2], 0.0), 1.0)
    p_inf_rel = 0.0 if single else 4.0 * UNIT_ROUNDOFF
    if any(x.size == 0 for x, _, _ in parts):
        return Enumerated(values=np.zeros(0), logp=np.zeros(0), p_inf=p_inf, p_inf_rel=p_inf_rel)
    depth = 0 if single else sum(2 * k.bit_length() + 2 for _, _, k in parts) + 2 * len(parts)
    rel = 4.0 * depth * UNIT_ROUNDOFF
    l_scale = sum(k * float(np.max(np.abs(lw))) for _, lw, k in parts)
    l_err = 0.0 if single else 4.0 * (depth + 64) * UNIT_ROUNDOFF * (l_scale + 1.0)
    acc: _Table | None = None
    for x, lw, k in parts:
        one = _power(x, lw, k, rel)
        if one is None:
            return None
        acc = one if acc is None else _convolve(acc, one, rel)
        if acc is None:
            return None
    if acc is None:
        return None
    values, logp, absum = acc
    keep = np.isfinite(logp)
    shift = math.fsum(k * law.value_error for law, k in atom_laws)
    shift += 2.0 * UNIT_ROUNDOFF * shift
    return Enumerated(values=values[keep] + rel * absum[keep] + shift, logp=logp[keep] + l_err,
                       p_inf=p_inf, p_inf_rel=p_inf_rel)


def composed_masses(laws: Sequence[tuple[Law, int]]) -> tuple[float, float, float]:
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
    if all(abs(law.mass_p + law.p_inf - 1.0) <= _PROBABILITY_SLACK for law, _ in laws):
        # Probability laws (their totals 1 up to the rounding of the finite mass's sum): the
        # atom is 1 - prod_i (1 - p_i)^k_i, rounded up. The product of the computed totals
        # multiplied their rounding by the count: 10 to 5000 runs of ApproxDP(1, d0) had the
        # atom up to 5.5e-13 relatively below the exact 1 - (1 - d0)^k (38 of 300 cases).
        p_inf = composed_inf_mass([(law.p_inf, k) for law, k in laws], True)
    else:
        p_inf = -math.exp(log_total) * math.expm1(log_ratio)
    return math.exp(log_fin_p), (math.exp(log_fin_q) if np.isfinite(log_fin_q) else 0.0), p_inf


#: A law whose finite P-mass and atom at +inf sum to 1 within this is taken as a probability
#: law by :func:`composed_masses` (the finite mass, a sum of atoms in logs, is within a few
#: hundred roundoffs of 1 - p_inf; laws that round their tails up exceed 1 by far more).
_PROBABILITY_SLACK = 1e-12


