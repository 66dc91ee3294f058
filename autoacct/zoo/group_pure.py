"""The pair that dominates every eps-DP mechanism's pair of datasets g records apart.

An eps-DP mechanism is f_eps-DP, f_eps(a) = max(0, 1 - e^eps a, e^-eps (1 - a)), and for groups of
g records it is (1 - h^(o g))-DP with h(a) = 1 - f_eps(a) = min(e^eps a, 1 - e^-eps (1 - a)) composed
g times (Dong, Roth and Su 2022, Theorem 2.14). h has one kink, at c = 1 / (1 + e^eps), and a point
right of it stays right of it (h(c) = e^eps c >= c), so the orbit of a point a takes the steep branch
m times and then the flat one g - m times: h^(o g) is piecewise linear with slope e^((2m - g) eps)
on the points whose first m steps are steep, a in [c e^-(m eps), c e^-((m-1) eps)] (m = g: from 0;
m = 0: [c, 1]). A concave piecewise linear power curve is the pair of its segments: outcome m has
loss (2m - g) eps, Q-mass its run and P-mass its rise,

    m = g:          P = c e^eps,                   Q = c e^-((g-1) eps),
    0 < m < g:      P = c (e^eps - 1) e^((m-g) eps), Q = c (e^eps - 1) e^-(m eps),
    m = 0:          P = (1 - c) e^-(g eps),          Q = 1 - c,

which sum to 1 each (the middle terms telescope). It is symmetric (outcome m under P is outcome
g - m under Q), g eps-DP, and for g = 1 randomized response with log-odds eps; randomized response
with log-odds g eps, the group's pure-DP guarantee alone, is looser (at g = 2 its total variation is
tanh(eps), this pair's 1 - e^-eps). More than :data:`~autoacct.losses.atoms.MAX_ATOMS` outcomes are
merged into runs at the run's largest loss (:func:`~autoacct.losses.atoms.atoms`), which dominates.
"""

from __future__ import annotations

import math

import numpy as np

from autoacct.exactness import MACHINE_EPSILON
from autoacct.losses import ATOM_MASS_ULPS
from autoacct.losses.atoms import AtomLoss, atoms


def group_pure_dp_loss(eps: float, g: int) -> AtomLoss:
    """The law of the loss of the pair above, for eps > 0 and g >= 1 records: not ``tight`` (no
    eps-DP mechanism is known to attain it; it only dominates)."""
    log_c = -float(np.logaddexp(0.0, eps))  # log(1 / (1 + e^eps))
    log_1mc = -float(np.logaddexp(0.0, -eps))  # log(e^eps / (1 + e^eps))
    log_rise = eps + math.log(-math.expm1(-eps))  # log(e^eps - 1)

    def fn(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        loss = (2.0 * m - g) * eps
        logp = log_c + log_rise + (m - g) * eps
        logp = np.where(m == g, log_c + eps, logp)
        logp = np.where(m == 0, log_1mc - g * eps, logp)
        return loss, logp

    values, p, q = atoms(0, g, fn)
    # Each mass is an exponential of a logarithm of size up to ~700, within ATOM_MASS_ULPS
    # roundoffs: P raised and Q lowered by that much, which only raises the profile (a
    # dominating law; the total P-mass is then 1 + 2e-13 at most).
    rel = ATOM_MASS_ULPS * MACHINE_EPSILON
    # (every loss is a multiple of eps, computed as the grid computes its multiples: j * eps)
    return AtomLoss(("group of pure DP", eps, g), values, p * (1.0 + rel), q * (1.0 - rel), tight=False,
                    lattice=eps)
