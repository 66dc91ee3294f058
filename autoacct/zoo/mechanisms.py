"""Base mechanisms, each defined by its dominating pair and its closed forms.

Sensitivity is 1 throughout: a query with sensitivity s and noise scale b is
the mechanism with parameter b / s.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import InitVar, dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from autoacct import _validation as check
from autoacct.exactness import MACHINE_EPSILON, ExactFloat, rational_up, round_up
from autoacct.grouping import snap_value
from autoacct.losses import LaplaceLoss, leaky_rr_loss, randomized_response_loss
from autoacct.mechanism import LossPart, Mechanism, PairRdp

#: Largest privacy loss a base mechanism's parameter may give (PureDP's and ApproxDP's eps,
#: Laplace's 1 / b): beyond it the width of a lattice that holds the loss, twice it,
#: overflows (PureDP(1e308).tradeoff raised from inside the accountant).
MAX_EPS = 1e100


def gaussian_rdp(alpha: np.ndarray, sigma: float) -> np.ndarray:
    """alpha / (2 sigma^2), the Renyi DP of (N(1, sigma^2), N(0, sigma^2)) (Mironov 2017,
    Proposition 7), rounded up; 0 for sigma = inf.

    Formed as ((alpha / 2) / sigma) / sigma: two roundings (the halving is exact), which
    ``round_up`` covers. The first quotient is at least the answer for sigma >= 1 and at
    least 1/2 for sigma < 1 (alpha >= 1), so nothing overflows unless the answer does and
    only the answer may be subnormal (there ``round_up`` adds a subnormal spacing, so that
    alpha / (2 sigma^2) of sigma = 1e300 is 5e-324, not 0); sigma ** 2 overflowed a Python
    float beyond sigma = 1.3e154.
    """
    a = np.asarray(alpha, dtype=float)
    if math.isinf(sigma):
        return np.zeros(a.shape)
    with np.errstate(over="ignore"):
        return round_up(np.asarray(a * 0.5 / sigma / sigma))


@dataclass(frozen=True, eq=False, repr=False)
class Gaussian(Mechanism):
    """Gaussian mechanism with noise multiplier ``sigma`` (noise std / L2 sensitivity).

    Dominating pair (N(1, sigma^2), N(0, sigma^2)); exactly mu-GDP with mu = 1/sigma;
    RDP alpha / (2 sigma^2).
    """

    sigma: float

    def __post_init__(self) -> None:
        super().__post_init__()
        # Below 1e-300 the mechanism's mu = 1/sigma is not a finite float.
        self._set(sigma=check.real("sigma", self.sigma, low=1e-300))

    def exact_gdp_mu(self) -> float:
        return 1.0 / self.sigma

    def rdp_curve(self) -> PairRdp:
        def curve(alpha: np.ndarray) -> np.ndarray:
            v = gaussian_rdp(alpha, self.sigma)
            return np.stack([v, v])
        return curve

    def snap(self, ratio: float, up: bool) -> tuple[Hashable, Callable[[], Mechanism]] | None:
        # A smaller noise multiplier dominates: N(1, s^2) vs N(0, s^2) is a post-processing
        # (added N(0, s^2 - s'^2) noise) of the pair with s' <= s.
        sigma = snap_value(self.sigma, ratio, not up)
        if not 1e-300 <= sigma < math.inf:
            return None
        return ("Gaussian", sigma), functools.partial(Gaussian, sigma)


@dataclass(frozen=True, eq=False, repr=False)
class Laplace(Mechanism):
    """Laplace mechanism with scale ``b`` (per unit L1 sensitivity): pair (Lap(1, b), Lap(0, b)).

    RDP (Mironov 2017, Proposition 6):
    (1/(alpha-1)) log(alpha/(2 alpha-1) e^{(alpha-1)/b} + (alpha-1)/(2 alpha-1) e^{-alpha/b}).
    """

    b: float

    def __post_init__(self) -> None:
        super().__post_init__()
        # Below 1 / MAX_EPS the loss 1/b leaves the range whose moments and lattices floats
        # hold (Laplace(1e-250).tradeoff overflowed).
        self._set(b=check.real("b", self.b, low=1.0 / MAX_EPS))

    def loss_parts(self) -> list[LossPart]:
        loss = LaplaceLoss(self.b)
        return [LossPart(loss, loss, 1)]

    def rdp_curve(self) -> PairRdp:
        return self._rdp

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        # With beta = alpha - 1 and x = 1/b the bracket minus 1 is
        # S = (alpha g(beta x) + beta g(-alpha x)) / (2 alpha - 1), g(y) = e^y - 1 - y >= 0:
        # a sum of non-negative terms, so no cancellation near alpha = 1 or for large b.
        #
        # Rounding. The value is log1p(S) / beta, with S carried by its log. Each log term is
        # off by a few ulps of its own size, so log S is off by about u (|log alpha| +
        # |log beta| + |log g(beta x)| + |log g(-alpha x)| + |log S| + ...): a relative error of
        # S that grows with |log S| (1e-14 at b = 16525 near alpha = 1, where log S ~ -50 and the
        # value came out 1e-14 below the truth). g itself cancels in e^y - 1 - y for |y| just
        # above 0.1 (expm1(y) and y nearly equal: 20 ulps of g at most; below 0.1 a series of
        # positive or fast-alternating terms), and moves with y's own rounding (1.5 ulps) by a
        # relative (2 + y) times it for y > 0, at most 2 times it for y < 0 (where g(y) ~ |y|).
        # So each size counts at most about 1.5 ulps and the constants about 40: log S is raised
        # by LAPLACE_LOG_ULPS (4 ulps) of the sizes plus 16, 11 times the largest error met
        # against 120-digit values in 3000 random (b, alpha), before the last two roundings
        # (round_up). The zCDP bound alpha x^2 / 2 (pure x-DP is x^2/2-zCDP; Bun and
        # Steinke 2016, Proposition 1.4) caps it, and stands in where S underflows to 0.
        alpha = np.asarray(alpha, dtype=float)
        x = 1.0 / self.b
        beta = alpha - 1.0
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            log_g_up, log_g_down = log_g(beta * x), log_g(-alpha * x)
            log_alpha, log_beta, log_ratio = np.log(alpha), np.log(beta), np.log(2.0 - 1.0 / alpha)
            log_s = np.logaddexp(log_alpha + log_g_up, log_beta + log_g_down) - (log_alpha + log_ratio)
            sizes = (16.0 + np.abs(beta * x) + np.abs(log_alpha) + np.abs(log_beta)
                     + np.abs(log_g_up) + np.abs(log_g_down) + np.abs(log_ratio) + np.abs(log_s))
            closed = np.logaddexp(0.0, log_s + LAPLACE_LOG_ULPS * sizes) / beta
            # Order 1: the KL divergence e^{-x} - 1 + x = g(-x), the limit of the formula.
            log_kl = float(log_g(np.array(-x)))
            kl = math.exp(log_kl + LAPLACE_LOG_ULPS * (16.0 + abs(log_kl)))
            closed = np.where(beta == 0.0, kl, closed)
            closed = np.where(np.isfinite(log_s) | (beta == 0.0), round_up(closed), np.inf)
            zcdp = round_up(alpha * 0.5 * x * x)
        # x is 1/b correctly rounded, so the next float above bounds the max divergence 1/b.
        v = np.minimum(np.minimum(closed, zcdp), math.nextafter(x, math.inf))
        return np.stack([v, v])

    def dp_guarantee(self) -> tuple[float, float]:
        # 1/b rounded up (exact, and kept by the API's rounding, when a float holds it).
        return rational_up(1 / Fraction(self.b)), 0.0


#: Roundings of Laplace's log S, in machine epsilons of its terms' sizes (Laplace._rdp).
LAPLACE_LOG_ULPS = 4.0 * MACHINE_EPSILON


def log_g(y: np.ndarray) -> np.ndarray:
    """log(e^y - 1 - y), elementwise, to a few ulps for every real y (-inf at 0, +inf at +-inf).

    g(y) = e^y - 1 - y is non-negative. Near 0 it is y^2/2 + y^3/6 + ..., where the
    difference would cancel, so |y| < 0.1 uses that series (truncated at y^12/12!,
    relative error below 1e-17); beyond 700 the exponential is factored out.
    """
    y = np.asarray(y, dtype=float)
    small = np.abs(y) < 0.1
    ys = np.where(small, y, 0.0)
    term = ys * ys / 2.0
    series = term
    for n in range(3, 13):
        term = term * ys / n
        series = series + term
    huge = y >= 700.0
    mid = np.where(small | huge, 1.0, y)
    top = np.where(huge & np.isfinite(y), y, 700.0)
    with np.errstate(divide="ignore", over="ignore"):
        out = np.where(small, np.log(series),
                       np.where(huge, top + np.log1p(-(1.0 + top) * np.exp(-top)),
                                np.log(np.expm1(mid) - mid)))
    return np.where(np.isposinf(y), np.inf, out)


def rr_rdp(eps: float, alpha: np.ndarray) -> np.ndarray:
    """Exact RDP of randomized response with log-odds eps (both orders are equal).

    D_alpha = log(p^alpha (1-p)^(1-alpha) + (1-p)^alpha p^(1-alpha)) / (alpha - 1),
    p = e^eps / (1 + e^eps), in log space.

    The bracket is p e^{beta eps} + q e^{-beta eps} with beta = alpha - 1, q = 1 - p;
    minus 1 it is p g(beta eps) + q g(-beta eps) + beta eps (p - q) with
    g(y) = e^y - 1 - y >= 0 and p - q = tanh(eps/2): non-negative terms, so the
    value keeps its relative precision for tiny eps and for alpha near 1.

    Rounded up as Laplace's closed form is (``Laplace._rdp`` says why): the excess is carried
    by its log, off by a few ulps of its terms' sizes, which are added (LAPLACE_LOG_ULPS of
    them plus 16); without it the value was below the truth in half of 3000 random
    (eps, alpha), by up to 1.2e-14 relative (eps = 1.5e-7, alpha = 1 + 1.9e-12). Capped by eps
    (the max divergence) and by the zCDP bound alpha eps^2 / 2 (Bun and Steinke 2016,
    Proposition 1.4), which stands in where the excess underflows.
    """
    alpha = np.asarray(alpha, dtype=float)
    beta = alpha - 1.0
    lp = -np.logaddexp(0.0, -eps)
    lq = -np.logaddexp(0.0, eps)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log_g_up, log_g_down = log_g(beta * eps), log_g(-beta * eps)
        log_linear = np.log(beta * eps) + np.log(np.tanh(eps / 2.0))
        log_excess = np.logaddexp(np.logaddexp(lp + log_g_up, lq + log_g_down), log_linear)
        sizes = (16.0 + np.abs(beta * eps) + abs(lp) + abs(lq) + np.abs(log_g_up) + np.abs(log_g_down)
                 + np.abs(log_linear) + np.abs(log_excess))
        v = np.logaddexp(0.0, log_excess + LAPLACE_LOG_ULPS * sizes) / beta
        # Order 1: the KL divergence (p - q) eps, the limit of the formula.
        v = np.where(beta == 0.0, eps * np.tanh(eps / 2.0), v)
        v = np.where(np.isfinite(log_excess) | (beta == 0.0), round_up(v), np.inf)
        zcdp = round_up(alpha * 0.5 * eps * eps)
    return np.clip(np.minimum(v, zcdp), 0.0, eps)


class RandomizedResponsePair(Mechanism, abstract=True):
    """Mechanisms dominated by randomized response with log-odds ``eps0``.

    ``attained``: whether the mechanism attains that pair (so that lower bounds read off
    its PLD are lower bounds on the mechanism); a subclass that is only dominated sets False.
    """

    attained = True

    @property
    def eps0(self) -> float:
        """Log-odds of the dominating randomized response: exact (``exact_eps0``) or computed
        to within a relative 3 MACHINE_EPSILON (three correctly rounded operations)."""
        raise NotImplementedError

    def loss_parts(self) -> list[LossPart]:
        # A computed eps0 declares its rounding (a relative 3 MACHINE_EPSILON, counted as 4) as
        # the atoms' value error: the phi route read its atoms as exact, and a single
        # RandomizedResponse(0.6).delta(eps0 (1 - 1e-9), via="phi") came out 4e-8 relatively
        # below the truth from p (logit(0.6) is 1.6e-17 below log(1.5)).
        err = 0.0 if self.exact_eps0() is not None else 4.0 * MACHINE_EPSILON * self.eps0
        loss = randomized_response_loss(self.eps0, tight=self.attained, value_error=err)
        return [LossPart(loss, loss, 1)]

    def rdp_curve(self) -> PairRdp:
        # At the guarantee's eps: eps0 itself where it is exact, else rounded up past the
        # rounding of a computed log-odds (the divergences grow with it); a log-odds of 0 is
        # exact (p = 1/2, the pair of two equal laws).
        eps = self.dp_guarantee()[0] if self.eps0 > 0.0 else 0.0

        def curve(alpha: np.ndarray) -> np.ndarray:
            v = rr_rdp(eps, alpha)
            return np.stack([v, v])
        return curve

    def dp_guarantee(self) -> tuple[float, float]:
        # A computed eps0 is within a relative 3 MACHINE_EPSILON (see eps0), which round_up
        # covers (two ulps up covered one); a user's own eps (PureDP) is exact.
        exact = self.exact_eps0()
        return (exact if exact is not None else round_up(self.eps0)), 0.0

    def exact_eps0(self) -> ExactFloat | None:
        """eps0 when it is given exactly (not computed), else None."""
        return None


@dataclass(frozen=True, eq=False, repr=False)
class RandomizedResponse(RandomizedResponsePair):
    """Binary randomized response, truthful with probability ``p`` in [1/2, 1).

    Pair ((p, 1-p), (1-p, p)); pure eps = log(p / (1-p)).
    """

    p: float

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set(p=check.real("p", self.p, low=0.5, high=1.0, high_open=True))

    @property
    def eps0(self) -> float:
        """log(p / (1 - p)) = log1p((2p - 1) / (1 - p)): 2p - 1 and 1 - p are exact for p in
        [1/2, 1) (Sterbenz), so the quotient is one rounding, which log1p passes on at most
        as it is (|y log1p'(y) / log1p(y)| <= 1), plus its own: within 2 MACHINE_EPSILON
        relatively, however small eps0 (log(p / (1 - p)) keeps only an absolute ulp of 1:
        a relative 5e-5 at p = 0.5 + 1e-12)."""
        return math.log1p((2.0 * self.p - 1.0) / (1.0 - self.p))


@dataclass(frozen=True, eq=False, repr=False)
class PureDP(RandomizedResponsePair):
    """Any ``eps``-DP mechanism; dominated by randomized response with log-odds eps."""

    eps: float

    def __post_init__(self) -> None:
        super().__post_init__()
        # (up to MAX_EPS: the range of a lattice that holds its loss must stay finite)
        self._set(eps=check.real("eps", self.eps, low=0.0, high=MAX_EPS))

    @property
    def eps0(self) -> float:
        return self.eps

    def exact_eps0(self) -> ExactFloat | None:
        return ExactFloat(self.eps)


@dataclass(frozen=True, eq=False, repr=False)
class ApproxDP(Mechanism):
    """Any (``eps``, ``delta``)-DP mechanism; dominated by the leaky randomized response.

    The leaky randomized response (Zhu, Dong and Wang 2022) has P-masses
    ((1 - delta) e^eps / (e^eps + 1), (1 - delta) / (e^eps + 1), delta, 0) and
    Q-masses their mirror image. With delta > 0 the dominating pair
    has P-mass where Q has none, so its Renyi divergence is +inf at every order
    > 1: ``rdp`` returns inf, which is the true value for that pair.

    ``delta`` is an init-only argument stored as ``delta0`` (``delta`` is the query method).
    """

    #: Init-only arguments and the fields that store them (for descriptions as plain data).
    INIT_ONLY: ClassVar[Mapping[str, str]] = MappingProxyType({"delta": "delta0"})

    eps: float
    delta: InitVar[float]
    delta0: float = field(init=False, default=0.0)

    def __post_init__(self, delta: float) -> None:
        super().__post_init__()
        self._set(eps=check.real("eps", self.eps, low=0.0, high=MAX_EPS),
                  delta0=check.real("delta", delta, low=0.0, high=1.0, high_open=True))

    @property
    def params(self) -> Mapping[str, Any]:
        return MappingProxyType({f"{self.name}.eps": self.eps, f"{self.name}.delta": self.delta0})

    def loss_parts(self) -> list[LossPart]:
        loss = leaky_rr_loss(self.eps, self.delta0)
        return [LossPart(loss, loss, 1)]

    def rdp_curve(self) -> PairRdp:
        def curve(alpha: np.ndarray) -> np.ndarray:
            if self.delta0 > 0:
                v = np.full(np.shape(alpha), np.inf)
            else:
                v = rr_rdp(self.eps, alpha)
            return np.stack([v, v])
        return curve

    def dp_guarantee(self) -> tuple[float, float]:
        return ExactFloat(self.eps), ExactFloat(self.delta0)


@dataclass(frozen=True, eq=False, repr=False)
class ZCDP(Mechanism):
    """Any (``xi``, ``rho``)-zCDP mechanism: RDP xi + rho * alpha at every order alpha > 1
    (Bun and Steinke 2016, Definition 1.1; xi = 0, the default, is rho-zCDP).

    zCDP fixes only the RDP curve, so this mechanism has no dominating pair and
    answers by RDP conversion. The Gaussian with mu = sqrt(2 rho) is rho-zCDP,
    hence (xi, rho)-zCDP for every xi >= 0, so its exact eps(delta) is a valid lower
    bound for the class.

    Parameters
    ----------
    rho:
        rho > 0, the slope of the RDP curve in the order.
    xi:
        xi >= 0, its offset (default 0). Listed in ``params`` only when nonzero, so
        that a rho-zCDP mechanism keeps its provenance.
    """

    rho: float
    xi: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set(rho=check.real("rho", self.rho, low=0.0, low_open=True),
                  xi=check.real("xi", self.xi, low=0.0))

    @property
    def params(self) -> Mapping[str, Any]:
        out = {f"{self.name}.rho": self.rho}
        if self.xi:
            out[f"{self.name}.xi"] = self.xi
        return MappingProxyType(out)

    def rdp_curve(self) -> PairRdp:
        def curve(alpha: np.ndarray) -> np.ndarray:
            # (two roundings, which round_up covers; rho alpha may overflow to inf, a bound)
            with np.errstate(over="ignore"):
                v = round_up(np.asarray(self.xi + self.rho * np.asarray(alpha, dtype=float)))
            return np.stack([v, v])
        return curve

    def epsilon_lower(self, delta: float) -> float:
        # The Gaussian with noise multiplier sigma >= 1/sqrt(2 rho) (mu <= sqrt(2 rho)) is
        # rho-zCDP. sigma is formed as 1/(sqrt(2) sqrt(rho)), four roundings that round_up
        # covers, so that the Gaussian's own mu never exceeds sqrt(2 rho); as 1/sqrt(2 rho),
        # 2 rho overflowed past rho = 9e307 and ZCDP(1e308).epsilon_bounds raised "sigma must
        # lie in [1e-300, inf), got 0.0".
        sigma = round_up(1.0 / (math.sqrt(2.0) * math.sqrt(self.rho)))
        return Gaussian(sigma).epsilon_bounds(delta)[0]
