"""A mechanism given by its two output distributions on finitely many outcomes.

:class:`DiscretePair` is the dominating pair of an arbitrary mechanism with a
finite output space, given by P = M(D) and Q = M(D') for the worst-case
neighbouring datasets D ~ D'. The helpers below (loss laws, exact Renyi
divergences, the (eps0, delta0) guarantee of a finite pair) serve every
mechanism whose pair is finite, such as the k-ary randomized response.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from autoacct import _validation as check
from autoacct.exactness import MACHINE_EPSILON
from autoacct.losses import DiscreteLoss
from autoacct.mechanism import LossPart, Mechanism, PairRdp
from autoacct.zoo.mechanisms import log_g

__all__ = ["DiscretePair", "finite_pair_dp", "finite_pair_losses", "finite_pair_rdp"]

#: Largest finite loss kept finite; beyond it, the outcome counts as revealing (see _direction).
LOSS_CAP = 700.0
#: How far from 1 the sums of the given probability vectors may be.
SUM_TOL = 1e-9
_EPS = MACHINE_EPSILON


def _log_ratio(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """log(p/q) for positive p, q to a few ulps of itself (not of log p): log1p of the exact
    difference p - q (Sterbenz) over q where p/q is near 1, the log of the ratio elsewhere,
    and log p - log q where the ratio is not a normal float."""
    with np.errstate(over="ignore", under="ignore"):
        ratio = p / q
    near = np.abs(ratio - 1.0) < 0.5
    normal = np.isfinite(ratio) & (ratio >= np.finfo(float).tiny)
    # np.where evaluates both branches everywhere: (p - q)/q overflows where q is subnormal and
    # p is not, an entry the near branch never selects (there |p - q| < q/2).
    with np.errstate(divide="ignore", over="ignore"):
        return np.where(near, np.log1p((p - q) / q),
                        np.where(normal, np.log(np.where(normal, ratio, 1.0)), np.log(p) - np.log(q)))


def _direction(p: np.ndarray, q: np.ndarray, tight: bool) -> DiscreteLoss:
    """Law of L = log(p/q) under p (and q), for probability vectors p, q with a common outcome.

    Outcomes where q = 0 < p carry L = +inf (``p_inf``), those where p = 0 < q carry
    L = -inf (``q_ninf``); outcomes where both vanish are left out.
    """
    shared = (p > 0) & (q > 0)
    values = _log_ratio(p[shared], q[shared])
    # A finite loss above LOSS_CAP is accounted as infinite: its P-mass goes to +inf and its
    # Q-mass (below e^-LOSS_CAP of it) to -inf, which can only raise every hockey-stick
    # divergence (max(p - e^eps q, 0) <= p), so upper bounds stay sound; lower bounds do not
    # count that mass (``p_inf_truncated``). Past log of the largest float (709.78) the
    # profiles' e^eps overflows, and the PLD route's upper delta collapsed to about 0 where the
    # truth was P's whole mass there (0.731 at eps 720 for p = (0.731, 0.269), q = (1e-322, 1)).
    capped = values > LOSS_CAP
    moved = math.fsum(p[shared][capped])
    ps, qs, values = p[shared][~capped], q[shared][~capped], values[~capped]
    # A lattice when every loss is an exact integer multiple of the smallest nonzero one
    # (randomized responses: -eps0, 0, eps0): the accountant then keeps the atoms on grid points.
    nonzero = np.abs(values[values != 0.0])
    lattice = None
    if nonzero.size:
        r = values / float(nonzero.min())
        if np.all(r == np.round(r)):
            lattice = float(nonzero.min())
    loss = DiscreteLoss(values, ps, qs, p_inf=math.fsum([*p[(p > 0) & (q == 0)], moved]),
                        q_ninf=math.fsum([*q[(q > 0) & (p == 0)], *q[shared][capped]]), lattice=lattice,
                        tight=tight)
    loss.p_inf_truncated = moved
    return loss


def finite_pair_losses(p: np.ndarray, q: np.ndarray, tight: bool = True) -> tuple[DiscreteLoss, DiscreteLoss]:
    """The (forward, backward) loss laws of the pair (P, Q) of probability vectors ``p``, ``q``:
    log(p/q) under p (removal) and log(q/p) under q (addition)."""
    return _direction(p, q, tight), _direction(q, p, tight)


def _renyi(p: np.ndarray, q: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """D_alpha(P || Q) = log(sum p^alpha q^(1 - alpha)) / (alpha - 1) at orders alpha >= 1.

    With beta = alpha - 1 and L = log(p/q) on the common support, and P having no
    mass off it, the bracket minus 1 is sum p (e^{beta L} - 1) = sum p g(beta L) + beta KL,
    g(y) = e^y - 1 - y >= 0, and KL = sum p g(-L) + Q(p = 0) (as sum q = 1): sums of
    non-negative terms, so the value keeps its relative precision near alpha = 1 and
    for nearly equal P and Q. +inf at every order > 1 when P has mass where Q has none.
    """
    alpha = np.asarray(alpha, dtype=float)
    beta = alpha - 1.0
    if np.any((p > 0) & (q == 0)):
        return np.full(alpha.shape, np.inf)
    shared = (p > 0) & (q > 0)
    lp = np.log(p[shared])
    loss = _log_ratio(p[shared], q[shared])
    q_off = math.fsum(q[(q > 0) & (p == 0)])
    kl = float(np.sum(np.exp(lp + log_g(-loss)))) + q_off
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        terms = lp + log_g(beta[..., None] * loss)
        log_kl = math.log(kl) if kl > 0 else -math.inf
        log_excess = np.logaddexp(special.logsumexp(terms, axis=-1), np.log(beta) + log_kl)
        v = np.logaddexp(0.0, log_excess) / beta
    v = np.where(beta == 0.0, kl, v)
    # The identity above holds for sums exactly 1. The given vectors sum to 1 only up to
    # rounding: the bracket minus 1 is then off by s_p - 1 and KL by s_p - s_q (s_p, s_q the
    # exact sums of the floats; fsum rounds these differences correctly, and twice them
    # bounds them), so both are added as a margin, with a few roundoffs per outcome of the
    # value's own arithmetic (each term e^{log p + log g} carries the absolute rounding of
    # log p, a relative ulp(|log p|)).
    dev_one = 2.0 * abs(math.fsum([*p, -1.0]))
    dev_pq = 2.0 * abs(math.fsum([*p, *(-q)]))
    safe_beta = np.where(beta == 0.0, 1.0, beta)
    rel = (16.0 + 4.0 * p.size + 2.0 * float(np.max(np.abs(lp)))) * _EPS
    margin = rel * np.abs(v) + np.where(beta == 0.0, dev_pq, dev_one / safe_beta + dev_pq)
    return np.maximum(v + margin, 0.0)


def finite_pair_rdp(p: np.ndarray, q: np.ndarray) -> PairRdp:
    """Exact Renyi divergences of both orders of the finite pair (P, Q), shape (2,) + alpha.shape."""
    def curve(alpha: np.ndarray) -> np.ndarray:
        a = np.asarray(alpha, dtype=float)
        return np.stack([_renyi(p, q, a), _renyi(q, p, a)])
    return curve


def finite_pair_dp(p: np.ndarray, q: np.ndarray) -> tuple[float, float] | None:
    """(eps0, delta0) with the finite pair (eps0, delta0)-DP in both directions, rounded up.

    eps0 = max |log(p/q)| over the common support: at eps0 the profile of either
    direction is the mass it has off the other's support, so delta0 is the larger of
    P(q = 0) and Q(p = 0). None when delta0 rounds to 1 (nothing to certify).
    """
    shared = (p > 0) & (q > 0)
    eps0 = float(np.max(np.abs(_log_ratio(p[shared], q[shared]))))
    # The log-ratios are off by a few ulps of themselves (of log p, where the ratio is not a
    # normal float); the masses off the common support are sums of up to n terms.
    scale = float(np.max(np.abs(np.log(np.concatenate((p[shared], q[shared]))))))
    eps0 = eps0 + 4.0 * _EPS * (scale + eps0) if eps0 > 0 else 0.0
    off = max(math.fsum(p[(p > 0) & (q == 0)]), math.fsum(q[(q > 0) & (p == 0)]))
    delta0 = off * (1.0 + 2.0 * p.size * _EPS) if off > 0 else 0.0
    if delta0 >= 1.0:
        return None
    return math.nextafter(eps0, math.inf) if eps0 > 0 else 0.0, delta0


def probability_vector(name: str, value: Any) -> np.ndarray:
    """``value`` as a 1-D float array of non-negative finite entries summing to 1 within
    :data:`SUM_TOL`, divided by its sum; ValueError or TypeError naming ``name`` otherwise."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a sequence of probabilities, got {value!r}")
    arr = check.real_array(name, value, low=0.0)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty one-dimensional sequence, got {value!r}")
    total = math.fsum(arr)
    if not abs(total - 1.0) <= SUM_TOL:
        raise ValueError(f"{name} must sum to 1 (within {SUM_TOL}), got sum {total!r}")
    return arr / total


@dataclass(frozen=True, eq=False, repr=False)
class DiscretePair(Mechanism):
    """A mechanism with finitely many outputs, given by its pair (P, Q) = (M(D), M(D')).

    ``p[i]`` and ``q[i]`` are the probabilities of outcome i under the neighbouring
    datasets D and D' that are the worst case for the mechanism (every other
    neighbouring pair is dominated by this one, or the guarantee refers to this pair
    only). The pair is accounted in both directions: removal, the law of
    L = log(p/q) under P, and addition, log(q/p) under Q; delta(eps) is the larger
    of H_{e^eps}(P || Q) and H_{e^eps}(Q || P). Outcomes that one distribution
    never produces carry an infinite loss: the P-mass where q = 0 is the atom
    L = +inf, so delta(eps) >= P(q = 0) at every eps. Since the pair is the
    mechanism's own, lower bounds read off it are certified (``tight``).

    Representations, all exact: the PLD (a finite law), Renyi DP
    log(sum p^alpha q^(1 - alpha)) / (alpha - 1) and its mirror image (+inf where P
    has mass off Q's support), and the (eps0, delta0)-DP guarantee with eps0 the
    largest |log(p/q)| and delta0 the mass off the common support.

    Parameters
    ----------
    p, q:
        Probability vectors over the same outcomes, of the same length: entries
        finite and >= 0, each summing to 1 within 1e-9. They are divided by their
        sums (stored so), to make them exact probability distributions up to
        rounding; their supports must meet (else the mechanism has no privacy:
        delta(eps) = 1 at every eps).
    neighboring:
        The relation D ~ D' refers to (keyword; default None, the caller's).
    """

    p: tuple[float, ...]
    q: tuple[float, ...]

    def __post_init__(self) -> None:
        super().__post_init__()
        pp = probability_vector("p", self.p)
        qq = probability_vector("q", self.q)
        check.same_length(("p", "q"), pp, qq)
        if not np.any((pp > 0) & (qq > 0)):
            raise ValueError(f"p and q must share an outcome of positive probability (disjoint supports "
                             f"give no privacy), got p={self.p!r}, q={self.q!r}")
        self._set(p=tuple(float(x) for x in pp), q=tuple(float(x) for x in qq))

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.array(self.p), np.array(self.q)

    def loss_parts(self) -> list[LossPart]:
        return self.cached(("parts",), lambda: [LossPart(*finite_pair_losses(*self._arrays()), 1)])

    def rdp_curve(self) -> PairRdp:
        return finite_pair_rdp(*self._arrays())

    def dp_guarantee(self) -> tuple[float, float] | None:
        return finite_pair_dp(*self._arrays())
