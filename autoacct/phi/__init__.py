"""The characteristic-function (phi) accountant: certified upper bounds from the Fourier side.

Representation (Zhu, Dong and Wang 2022). A dominating pair (P, Q) is described
by the characteristic functions of its privacy loss L = log(dP/dQ),
phi_P(t) = E_P[e^{itL}; L finite] and phi_Q(t) = E_P[e^{(it-1)L}; L finite], and
more generally by M(z) = E_P[e^{zL}; L finite] on a vertical line z = alpha + it.
Composition multiplies them. Modules:

* :mod:`~autoacct.phi.laws`: closed forms of log M (Gaussian, Laplace, atoms) and
  the dominating lattice law that stands for any other law;
* :mod:`~autoacct.phi.enumeration`: small compositions of atom laws, enumerated exactly;
* :mod:`~autoacct.phi.inversion`: one direction's damped spectrum and Levy inversion;
* :mod:`~autoacct.phi.accountant`: :class:`PhiAccountant` (both directions, eps
  search, tradeoff) and the one-call functions.

References: Zhu, Dong and Wang (2022), "Optimal accounting of differential
privacy via characteristic function"; Levy's inversion formula; Carr and Madan
(1999) for the damped transform of a hockey-stick payoff.
"""

from autoacct.errors import PhiAccuracyWarning
from autoacct.phi.accountant import PhiAccountant, phi_delta, phi_epsilon, phi_tradeoff
from autoacct.phi.laws import composed_log_phi, log_phi

__all__ = ["PhiAccountant", "PhiAccuracyWarning", "composed_log_phi", "log_phi", "phi_delta",
           "phi_epsilon", "phi_tradeoff"]
