"""What the parts' closed forms answer without composing anything: one run of one pair, the
largest finite loss of a composition, and a total-variation bound on its delta at 0.

The PLD route reads these before it discretises: a closed-form single step is answered from
its own profile, delta beyond the largest finite loss is the mass at +inf, and eps(delta) is 0
where the parts' total variations already sum to at most delta.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from autoacct.binomial import binomial_profiles
from autoacct.converters.rdp import DELTA_FLOOR
from autoacct.exactness import MACHINE_EPSILON
from autoacct.losses import PrivacyLoss
from autoacct.pld.lawcache import VARIATIONS, law_key

if TYPE_CHECKING:
    from autoacct.mechanism import Mechanism

ArrayBounds = tuple[np.ndarray, np.ndarray]
_UNIT = MACHINE_EPSILON


def single_step(m: Mechanism) -> tuple[PrivacyLoss, PrivacyLoss] | None:
    """The two laws of a mechanism that is one run of one pair whose profiles are closed forms.

    Its PLD is the pair itself, so delta(eps) is the larger of the two laws'
    profiles, with no discretisation (``PrivacyLoss.exact_profile``).
    """
    parts = m.kept_loss_parts()
    if parts is None or len(parts) != 1 or parts[0].times != 1:
        return None
    fwd, bwd = parts[0].forward, parts[0].backward
    return (fwd, bwd) if fwd.exact_profile and bwd.exact_profile else None


class ClosedProfiles(Protocol):
    """Upper and lower bounds on a mechanism's profile at an array of eps, computed without a
    lattice (:func:`closed_profiles`); ``guess``, where an inverse may start its search; and
    ``final``, whether the bounds are as tight as the lattice's could be (closed forms; a binomial
    sum is only as tight as its losses' bounds, and wider than tol the PLD route asks the lattice)."""

    @property
    def guess(self) -> float: ...

    @property
    def final(self) -> bool: ...

    def upper(self, eps: Any) -> np.ndarray: ...

    def lower(self, eps: Any) -> np.ndarray: ...


@dataclass(frozen=True)
class _SingleStep:
    """One run of one pair with closed-form profiles (:func:`single_step`)."""

    m: Mechanism
    laws: tuple[PrivacyLoss, PrivacyLoss]
    guess: float = 1.0
    final: bool = True

    def upper(self, eps: Any) -> np.ndarray:
        return single_profile(self.laws, eps, upper=True)

    def lower(self, eps: Any) -> np.ndarray:
        return single_lower(self.m, self.laws, eps)


def closed_profiles(m: Mechanism) -> ClosedProfiles | None:
    """The profiles of a mechanism answered without composing on a lattice: one run of one pair
    with closed-form profiles (:func:`single_step`), or k runs of one pair on two outcomes
    (:func:`autoacct.binomial.binomial_profiles`); None otherwise."""
    laws = single_step(m)
    return _SingleStep(m, laws) if laws is not None else binomial_profiles(m)


def monotone(eps: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> ArrayBounds:
    """Bounds on delta at an array of eps made monotone as delta is: an upper bound at a
    smaller eps bounds delta at a larger one, a lower bound at a larger eps one at a smaller
    (a closed form's rounding margins alone can break the order between nearby eps: a
    subsampled Gaussian step's upper bound at 1 + 4e-16 was 1.2e-11 relatively above its
    value at 1)."""
    flat = np.ravel(eps)
    order = np.argsort(flat, kind="stable")
    up, lo = np.ravel(upper)[order], np.ravel(lower)[order]
    up_out, lo_out = np.empty_like(up), np.empty_like(lo)
    up_out[order] = np.minimum.accumulate(up)
    lo_out[order] = np.maximum.accumulate(lo[::-1])[::-1]
    return lo_out.reshape(np.shape(lower)), up_out.reshape(np.shape(upper))


def max_loss(parts: list[Any]) -> float:
    """The composition's largest finite loss, sum of k times each part's (+inf if any part's
    is unknown or there is no finite one): an upper bound on where its profile can be positive
    apart from the mass at +inf."""
    return composed_max_loss([(max(p.forward.max_loss, p.backward.max_loss), p.times) for p in parts])


def composed_max_loss(tops: list[tuple[float, int]]) -> float:
    """The largest finite loss of a composition of k_i runs of laws whose largest finite
    losses are t_i, given as (t_i, k_i): sum k_i t_i rounded up (+inf if any t_i is)."""
    if not all(math.isfinite(t) for t, _ in tops):
        return math.inf
    terms = [k * t for t, k in tops]
    total = math.fsum(terms)
    # Each product is one rounding off (none for one run of one part, whose top is then exact).
    exact = len(tops) == 1 and tops[0][1] == 1
    return total if exact else total + 2.0 * _UNIT * math.fsum(abs(x) for x in terms)


def single_lower(m: Mechanism, laws: tuple[PrivacyLoss, PrivacyLoss], eps: Any) -> np.ndarray:
    """The lower profile of one run of one pair; where its laws only dominate, that of the one run
    of a pair it attains if there is one (``attained_parts``: random allocation's epoch)."""
    parts = None if laws[0].tight and laws[1].tight else m.attained_parts()
    if parts is not None and len(parts) == 1 and parts[0].times == 1:
        below = (parts[0].forward, parts[0].backward)
        laws = below if below[0].exact_profile and below[1].exact_profile else laws
    return single_profile(laws, eps, upper=False)


def single_profile(laws: tuple[PrivacyLoss, PrivacyLoss], eps: Any, upper: bool) -> np.ndarray:
    """The larger of the two laws' profiles, moved by each law's rounding bound; the lower
    one also leaves out mass that truncation moved to +-inf (``p_inf_truncated``,
    ``profile_truncated``), and is 0 unless both pairs are
    attained (``tight``)."""
    vals = []
    for law in laws:
        val, err = law.profile_with_error(eps)
        if upper:
            # Below 1e-300 the closed forms' exponentials may underflow (a Gaussian step's
            # profile is positive at every eps): where the loss can still exceed eps the bound
            # is then DELTA_FLOOR, the floor the other routes keep.
            val = val + err
            vals.append(np.where((val < DELTA_FLOOR) & (np.asarray(eps) < law.max_loss), DELTA_FLOOR, val))
        else:
            vals.append(val - err - law.p_inf_truncated - law.profile_truncated)
    best = np.maximum(vals[0], vals[1])
    if upper:
        return np.minimum(best, 1.0)
    tight = laws[0].tight and laws[1].tight
    return np.maximum(best, 0.0) if tight else np.zeros(np.shape(best))


def variation_up(parts: list[Any], stop_above: float = math.inf) -> float:
    """An upper bound on the composition's delta at eps = 0, its total variation distance:
    total variation is subadditive over products of pairs (the coupling inequality; Lindvall
    1992), which dominate adaptive compositions, so it is at most sum_i k_i TV_i, each TV_i
    the larger of a part's two profiles at 0 plus their rounding bounds (+inf where a part's
    profile is not a closed form). Each TV_i is kept by the laws' value: a ledger asks again
    at every query (1.4 ms for a subsampled Gaussian's pair).

    With ``stop_above``, the terms are summed only until their sum exceeds it: the value
    returned then exceeds ``stop_above`` but may be below the whole bound, which is all a
    caller asking "is delta(0) <= stop_above?" needs (the terms are non-negative). The first
    term or two usually exceed delta, and the others would cost 1.2 of a 3.9 s query on
    1,000 distinct steps."""
    if not all(p.forward.exact_profile and p.backward.exact_profile for p in parts):
        return math.inf
    terms: list[float] = []
    running = 0.0
    for p in parts:
        term = p.times * VARIATIONS.get(("variation", law_key(p.forward), law_key(p.backward)),
                                        partial(_variation, p.forward, p.backward))
        if not math.isfinite(term):
            return math.inf
        terms.append(term)
        running += term
        # The running sum only says when to look: what is returned past stop_above is the
        # bound on the terms so far, itself above stop_above (else the sum goes on).
        if running > stop_above and _bound(terms) > stop_above:
            break
    return _bound(terms)


def _bound(terms: list[float]) -> float:
    """An upper bound on the sum of the products ``terms`` (fsum: each product one rounding,
    the sum one more)."""
    return math.fsum(terms) * (1.0 + 4.0 * _UNIT)


def _variation(forward: PrivacyLoss, backward: PrivacyLoss) -> float:
    """The larger of the two laws' profiles at eps = 0, plus their rounding bounds."""
    zero = np.zeros(1)
    pairs = (law.profile_with_error(zero) for law in (forward, backward))
    return max(float(value[0] + error[0]) for value, error in pairs)
