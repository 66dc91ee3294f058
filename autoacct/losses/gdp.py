"""Closed-form bounds on the inverse eps(delta) of the mu-GDP privacy profile.

delta(eps) = Phi(a) - e^eps Phi(b), a = mu/2 - eps/mu, b = a - mu (Balle and Wang 2018,
Theorem 8). Where mu is large (above about 4e7) the bisection of the computed profile
(:func:`~autoacct.losses.base.gaussian_delta_bounds`) certifies nothing: eps + log Phi(b) - log Phi(a)
is a difference of terms of size mu^2/2 ~ 1e15 whose rounding (a few tenths) exceeds the
difference itself, so its lower profile is 0 everywhere and the lower end of eps was 0 (for
Gaussian(1e-8), whose eps(1e-5) is 5.0000004e15). The bounds here are read off Phi's inverse
at a, where no such cancellation occurs, and are the tight ones exactly there.
"""

from __future__ import annotations

import math
import sys

from scipy import special

from autoacct.exactness import MACHINE_EPSILON

#: Relative error allowed to scipy's ndtr, ndtri and log_ndtr and to the normal density formed
#: from exp, here, on the exact route and in :mod:`autoacct.zoo.rr_composition` (Cephes
#: documents 1e-15 at most for ndtr; exp(-a^2/2) with |a| <= 40 carries a relative a^2 ulps,
#: below 2e-13).
NORMAL_REL = 1e-12
#: Ulps by which a mechanism's mu may miss the pair's own (``Mechanism.rdp_curve``'s 4, doubled).
_MU_ULPS = 8.0
#: Tries at the point a, the k-th aimed 2^k phi(a) / (mu - a) above delta.
_TRIES = 6
_SQRT_2PI = math.sqrt(2.0 * math.pi)
#: The lower end where mu (mu/2 - a) overflows: the exact product of the rounded factors is then
#: at least the largest float less a relative 2 ulps (one for each factor's rounding).
_BEYOND = sys.float_info.max * (1.0 - 4.0 * MACHINE_EPSILON)


def gaussian_epsilon_closed_upper(mu: float, delta: float) -> float:
    """An upper bound on eps(delta) of mu-GDP, for 0 < delta < 1.

    delta(eps) <= Phi(a), so eps_u = mu^2/2 - mu Phi^-1(delta) (where a = Phi^-1(delta)) has
    delta(eps_u) <= delta: an upper bound, moved up by 8 ulps for ndtri's and the arithmetic's
    roundings, formed as (mu/2 - a) mu so that it overflows only past the floats (mu above 1.9e154,
    not 1.3e154). It is the answer where mu is so large that the profile's own rounding leaves
    the bisection nothing to certify.
    """
    return (mu / 2 - float(special.ndtri(delta))) * mu * (1 + 8 * MACHINE_EPSILON)


def _profile_floor(mu: float, a: float) -> float:
    """A lower bound on delta at a = mu/2 - eps/mu, for a < mu: Phi(a) - phi(a) / (mu - a).

    With b = a - mu < 0, Mills' ratio bounds Phi(b) <= phi(b) / |b| (Gordon 1941), and
    e^eps phi(b) = phi(a) exactly (log phi(b) - log phi(a) = (a^2 - b^2)/2 = mu a - mu^2/2 = -eps),
    so e^eps Phi(b) <= phi(a) / (mu - a). Phi(a) is moved down and phi(a) / (mu - a) up by
    NORMAL_REL (and 4 ulps for the division and the subtraction of a).
    """
    lower_cdf = float(special.ndtr(a)) * (1.0 - NORMAL_REL)
    return lower_cdf - _density(a) * (1.0 + NORMAL_REL) / (mu - a) * (1.0 + 4.0 * MACHINE_EPSILON)


def _density(a: float) -> float:
    """The standard normal density phi(a), to within NORMAL_REL."""
    return math.exp(-0.5 * a * a) / _SQRT_2PI


def gaussian_epsilon_closed_lower(mu: float, delta: float) -> float:
    """A lower bound on eps(delta) of mu-GDP, for 0 < delta < 1 (0 where none is found).

    Any a < mu with delta(mu^2/2 - mu a) >= delta gives eps(delta) >= mu (mu/2 - a), delta being
    non-increasing. Such an a is one with :func:`_profile_floor` >= delta: tried at
    Phi^-1(delta (1 + 4 NORMAL_REL) + 2 phi(a0)/(mu - a0)) with a0 = Phi^-1(delta), a relative
    about (|a0| + 1) / mu above delta (1e-6 at mu = 4e7), then with the density's term doubled
    while the floor falls short. mu is first moved down by
    _MU_ULPS ulps to a value at most the pair's own (eps(delta) grows with mu: a smaller mu's
    pair is a post-processing of the larger's), and the product is rounded down by 4 ulps; a
    product beyond the floats (mu above 1.9e154) gives _BEYOND.
    """
    mu_low = mu * (1.0 - _MU_ULPS * MACHINE_EPSILON)
    a = float(special.ndtri(delta))
    for n in range(_TRIES):
        if not -40.0 < a < mu_low - 1.0:
            return 0.0
        aim = delta * (1.0 + 4.0 * NORMAL_REL) + 2.0 ** (n + 1) * _density(a) / (mu_low - a)
        if aim >= 1.0:
            return 0.0
        a = float(special.ndtri(aim))
        if a < mu_low - 1.0 and _profile_floor(mu_low, a) >= delta:
            eps = (mu_low / 2.0 - a) * mu_low * (1.0 - 4.0 * MACHINE_EPSILON)
            return max(min(eps, _BEYOND), 0.0)
    return 0.0
