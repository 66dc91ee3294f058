"""Transformers: pure callables that build new mechanisms from old ones."""

from __future__ import annotations

import copy
import functools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from autoacct import _validation as check
from autoacct.errors import AccuracyWarning
from autoacct.exactness import MACHINE_EPSILON, rational_up, round_up
from autoacct.grouping import group
from autoacct.limits import check_deadline
from autoacct.losses import PrivacyLoss, randomized_response_loss
from autoacct.mechanism import LossPart, Mechanism, Neighboring, PairRdp, RdpFamily, Transformer
from autoacct.subsampling.numerics import interpolate_log_moments
from autoacct.zoo.discrete import DiscreteLaplace
from autoacct.zoo.group_pure import group_pure_dp_loss
from autoacct.zoo.mechanisms import MAX_EPS, PureDP, RandomizedResponsePair, rr_rdp
from autoacct.zoo.rr_composition import rr_composition_delta_lower, rr_composition_epsilon_lower


def common_neighboring(mechanisms: Sequence[Mechanism]) -> Neighboring | None:
    """The one neighbouring relation the mechanisms declare (None if none declares one)."""
    declared = {m.neighboring for m in mechanisms if m.neighboring is not None}
    if len(declared) > 1:
        names = ", ".join(sorted(r.value for r in declared))
        raise ValueError(f"mechanisms mix neighbouring relations ({names}); "
                         "composing guarantees for different relations is not meaningful")
    return declared.pop() if declared else None


def merge_params(children: Sequence[Mechanism]) -> dict[str, float]:
    """All children's parameters; a child whose name repeats is told apart by its index."""
    names = [c.name for c in children]
    out: dict[str, float] = {}
    for i, child in enumerate(children):
        clash = names.count(child.name) > 1
        for key, val in child.params.items():
            out[f"[{i}]{key}" if clash else key] = val
    return out


def not_attained(law: PrivacyLoss) -> PrivacyLoss:
    """``law`` flagged not ``tight`` (a copy; laws may be shared between mechanisms)."""
    if not law.tight:
        return law
    out = copy.copy(law)
    out.tight = False
    return out


@dataclass(frozen=True, eq=False, repr=False)
class ComposedMechanism(Mechanism):
    """Adaptive composition of ``counts[i]`` runs of ``children[i]``.

    Dominating pairs compose as products (Zhu, Dong and Wang 2022): PLDs convolve,
    RDP adds (per order of the pair), and Gaussians merge
    exactly into one Gaussian with mu = sqrt(sum_i k_i mu_i^2). The name is
    derived from the children's; the relation is the one they declare.

    Lower ends: a child whose pair one run attains but a composition of runs need
    not (``Mechanism.attained_parts``: sampling without replacement) has its laws
    marked not ``tight`` when the composition holds more than one run; the lower
    ends then come from composing every child's attained pairs (its loss parts for
    a child without them), certified where all of those are ``tight``.
    """

    children: tuple[Mechanism, ...]
    counts: tuple[int, ...]
    #: Most children whose lower ends :meth:`epsilon_lower` asks for.
    LOWER_CHILDREN: ClassVar[int] = 16
    #: Fewest children of one family whose Renyi DP :meth:`rdp_curve` sums at once.
    FAMILY_MIN: ClassVar[int] = 16

    def __post_init__(self) -> None:
        self._set(children=tuple(self.children), counts=tuple(self.counts))
        rel = common_neighboring(self.children)
        if self.neighboring is None:
            self._set(neighboring=rel)
        if not self.name:
            self._set(name="Compose:{" + ", ".join(f"{c.name}: {k}"
                                                   for c, k in zip(self.children, self.counts)) + "}")
        super().__post_init__()

    @property
    def params(self) -> Mapping[str, Any]:
        return MappingProxyType(merge_params(self.children))

    def exact_gdp_mu(self) -> float | None:
        total = 0.0
        for child, k in zip(self.children, self.counts):
            mu = child.exact_gdp_mu()
            if mu is None:
                return None
            total += k * mu * mu
        return float(np.sqrt(total))

    def loss_parts(self) -> list[LossPart] | None:
        out: list[LossPart] = []
        once: list[bool] = []
        for child, k in zip(self.children, self.counts):
            parts = child.loss_parts()
            if parts is None:
                return None
            out.extend(LossPart(f, b, k * n) for f, b, n in parts)
            once.extend([child.attained_parts() is not None] * len(parts))
        if sum(part.times for part in out) <= 1:
            return out  # one run of one pair: the child's own, attained where it says so
        # The pairs of a child with attained pairs of its own are attained by one run, not by
        # compositions of runs (``Mechanism.attained_parts``).
        return [LossPart(not_attained(f), not_attained(b), n) if alone else LossPart(f, b, n)
                for (f, b, n), alone in zip(out, once)]

    def attained_parts(self) -> list[LossPart] | None:
        # One fixed pair of datasets attains every child's attained pairs at every run (each
        # child's query is chosen for that pair), hence their composition; a child without
        # its own attained pairs contributes its loss parts, whose ``tight`` flags decide.
        if all(child.attained_parts() is None for child in self.children):
            return None
        out: list[LossPart] = []
        for child, k in zip(self.children, self.counts):
            parts = child.attained_parts() or child.loss_parts()
            if parts is None:
                return None
            out.extend(LossPart(f, b, k * n) for f, b, n in parts)
        return out

    def brackets_own_pair(self) -> bool:
        # Each child's ends bound its own pair (its own word, or tight laws and no other
        # attained pairs); one fixed pair of datasets attains them all at every run.
        def own(child: Mechanism) -> bool:
            parts = child.kept_loss_parts()
            return child.brackets_own_pair() or (child.attained_parts() is None and parts is not None
                                                 and all(p.forward.tight and p.backward.tight for p in parts))
        return any(child.brackets_own_pair() for child in self.children) and all(map(own, self.children))

    def rdp_curve(self) -> PairRdp | None:
        # Children of one family (``Mechanism.rdp_family``: subsampled Gaussians of distinct
        # rates and noise), FAMILY_MIN or more, are summed at once; the others one by one.
        families: dict[RdpFamily, list[int]] = {}
        for i, child in enumerate(self.children):
            member = child.rdp_family()
            if member is not None:
                families.setdefault(member[0], []).append(i)
        batched = {fn: idx for fn, idx in families.items() if len(idx) >= self.FAMILY_MIN}
        alone = sorted(set(range(len(self.children))) - {i for idx in batched.values() for i in idx})
        curves = [self.children[i].rdp_curve() for i in alone]
        if any(c is None for c in curves):
            return None
        parts = [self._family_curve(fn, idx) for fn, idx in batched.items()]
        parts += [functools.partial(_scaled, c, self.counts[i]) for c, i in zip(curves, alone) if c is not None]

        def curve(alpha: np.ndarray) -> np.ndarray:
            total = np.zeros((2,) + np.shape(alpha))
            for j, part in enumerate(parts):
                # A sum over some of the parts bounds nothing: past the deadline, stop (checked
                # between parts, so that a query on one part is never cut).
                if j:
                    check_deadline(f"the Renyi DP of a composition of {len(self.children)} mechanisms")
                total = total + part(alpha)
            # Each part is an upper bound; their products by the counts and the sum of n of
            # them (non-negative) round by at most n + 1 half-units of the total, which
            # round_up adds (a sum of Gaussians and Laplaces came out an ulp below the sum of
            # their exact values in 118 of 1000 random cases). A total of 0 is exact (every
            # part is 0: a positive part keeps the products and the sum positive).
            return np.where(total > 0.0, round_up(total, (len(parts) + 4) * MACHINE_EPSILON), total)
        return curve

    def _family_curve(self, fn: RdpFamily, idx: list[int]) -> PairRdp:
        """The summed Renyi DP of the children ``idx`` of one family (``fn``), at every order:
        integer orders from ``fn`` (kept), fractional ones by the convexity of the log-moment
        between their integer neighbours (``interpolate_log_moments``), a bound looser than a
        member's own fractional value but found without a series per member."""
        rows = np.array([self.children[i].rdp_family()[1] for i in idx])  # type: ignore[index]
        counts = np.array([float(self.counts[i]) for i in idx])
        key = ("rdp-family", fn.__module__, fn.__qualname__)

        def log_moment(n: int) -> float:
            return self.cached((*key, n), lambda: fn(rows, counts, n))

        def curve(alpha: np.ndarray) -> np.ndarray:
            a = np.asarray(alpha, dtype=float)
            # Order 1 (the KL divergence) is the family's own bound there (``log_moment(1)``,
            # see Mechanism.rdp_family): the interpolation's limit at 1 is the chord's slope K(2),
            # about twice the KL of a small-rate step.
            at_one = a == 1.0
            v = interpolate_log_moments(log_moment, np.where(at_one, 2.0, a))
            if np.any(at_one):
                v = np.where(at_one, np.minimum(v, log_moment(1)), v)
            return np.stack([v, v])
        return curve

    def grouped(self, up: bool, most: int) -> tuple[Mechanism, float] | None:
        # Children moved onto the finest grid that leaves at most ``most`` distinct, equal ones
        # merged (zoo.grouping): every child dominates (is dominated by) its moved self, and
        # compositions keep that order.
        def make() -> tuple[Mechanism, float] | None:
            out = group(self.children, self.counts, up, most)
            if out is None:
                return None
            children, counts, ratio = out
            return ComposedMechanism(tuple(children), tuple(counts)), ratio
        return self.cached(("grouped", up, most), make)

    def dp_guarantee(self) -> tuple[float, float] | None:
        # Basic composition (Dwork and Roth 2014, Theorem 3.16): epsilons and deltas add.
        # Summed exactly in rationals and rounded up, so that 1 + 2 certifies 3, not 3 + ulp.
        eps, delta = Fraction(0), Fraction(0)
        for child, k in zip(self.children, self.counts):
            g = child.dp_guarantee()
            if g is None or not math.isfinite(g[0]):
                return None
            eps += k * Fraction(g[0])
            delta += k * Fraction(g[1])
        if delta >= 1:
            return None
        return rational_up(eps), rational_up(delta)

    def dominating(self) -> Mechanism | None:
        """The composition of every child's dominating mechanism (``Mechanism.dominating``; the
        child itself where it has none), where it is exactly GDP: a composition of Gaussians, one
        Gaussian with mu = sqrt(sum_i k_i mu_i^2), whose closed form costs nothing. None where no
        child has a dominating mechanism, or where their composition would need a PLD of its own.

        Sound: each child's pairs are dominated by its dominating mechanism's at every e^eps >= 0
        in both directions, which for one direction is an order of tradeoff curves, hence a
        post-processing by Blackwell's theorem (Dong, Roth and Su 2022, Theorem 2.10); the
        adaptive composition of the children is dominated by the product of their pairs (Zhu,
        Dong and Wang 2022, Theorem 10), and products of post-processings are post-processings
        of the products. A DP-SGD run of balls-in-bins epochs of t = 2 steps at sigma = 0.3, five
        epochs, is thus at most the Gaussian with mu = sqrt(5) / 0.3: eps(1e-5) <= 58.78, where
        the epochs' Renyi DP gives 62.22."""
        above = [child.dominating() for child in self.children]
        if not any(a is not None and c.dominating_alone for a, c in zip(above, self.children)):
            return None
        run = ComposedMechanism(tuple(a or c for a, c in zip(above, self.children)), self.counts)
        mu = run.exact_gdp_mu()
        return run if mu is not None and math.isfinite(mu) else None

    def epsilon_lower(self, delta: float) -> float:
        """The largest lower end of the children run once (the composition is at least as
        revealing as any one of its parts), over the LOWER_CHILDREN most repeated children:
        a query per child, at 0.1-0.2 s for a subsampled one, is too much for thousands of
        distinct steps, and a maximum over some of them is still a lower bound. Where
        children offer a mechanism they dominate (``Mechanism.dominated``: balls-in-bins
        epochs, their summed outputs), also the lower end of those composed with their
        counts: dropping the other children's outputs and post-processing the rest is
        post-processing of the whole composition."""
        order = sorted(range(len(self.children)), key=lambda i: -self.counts[i])
        # Only these queries' lower ends are read: how wide their brackets are is not the
        # caller's concern (a balls-in-bins epoch's own warning named its own bracket).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AccuracyWarning)
            lows = [self.children[i].epsilon_bounds(delta)[0] for i in order[:self.LOWER_CHILDREN]]
            kept = [(d, k) for d, k in ((c.dominated(), k) for c, k in zip(self.children, self.counts))
                    if d is not None]
            if sum(k for _, k in kept) > 1:
                below = Composition()([d for d, _ in kept], [k for _, k in kept])
                lows.append(below.epsilon_bounds(delta)[0])
            gaussian = self.dominated_gaussian()
            if gaussian is not None:
                lows.append(gaussian.epsilon_bounds(delta)[0])
        lows.extend(rr_composition_epsilon_lower(c.eps0, k, delta) for c, k in self._exact_rr_children())
        return max(lows)

    def _exact_rr_children(self) -> list[tuple[RandomizedResponsePair, int]]:
        """The children that attain randomized response with an exact log-odds (PureDP), with their
        counts: each composed alone has the binomial profile of :mod:`~autoacct.zoo.rr_composition`,
        whose central limit gives lower ends where the PLD grid is capped (2^36 runs and more)."""
        return [(c, k) for c, k in zip(self.children, self.counts)
                if isinstance(c, RandomizedResponsePair) and c.attained and c.exact_eps0() is not None]

    def delta_lower(self, eps: np.ndarray) -> np.ndarray | None:
        """The lower ends on delta of :meth:`dominated_gaussian` and of the children of
        :meth:`_exact_rr_children`, closed forms. Not the other
        lower ends :meth:`epsilon_lower` takes: this hook is asked on every delta query
        (``routes._auto_delta``), where queries of the children would cost what the query does,
        and the PLD route reads the ``dominated`` pairs' laws itself (``attained_parts``)."""
        lows = [rr_composition_delta_lower(c.eps0, k, eps) for c, k in self._exact_rr_children()]
        gaussian = self.dominated_gaussian()
        if gaussian is not None:
            lows.append(np.asarray(gaussian.delta_bounds(eps)[0], dtype=float))
        return np.max(lows, axis=0) if lows else None

    def dominated_gaussian(self) -> Mechanism | None:
        """The composition of the children's ``dominated_gaussian`` pairs with their counts, the
        other children's outputs dropped (post-processing); exactly GDP, with mu =
        sqrt(sum_i k_i mu_i^2). None where no child has one."""
        def make() -> Mechanism | None:
            kept = [(d, k) for d, k in ((c.dominated_gaussian(), k) for c, k in zip(self.children, self.counts))
                    if d is not None]
            return Composition()([d for d, _ in kept], [k for _, k in kept]) if kept else None
        return self.cached(("dominated gaussian",), make)


def _scaled(curve: PairRdp, count: int, alpha: np.ndarray) -> np.ndarray:
    """``count`` runs of a pair with Renyi DP ``curve``: its curve times the count."""
    return count * np.asarray(curve(alpha), dtype=float)


class Composition(Transformer):
    """``Composition()(mechanisms, counts)``: run ``mechanisms[i]`` ``counts[i]`` times, adaptively."""

    def __call__(self, mechanisms: Any, counts: Any = None) -> Mechanism:
        if isinstance(mechanisms, Mechanism):
            mechanisms = [mechanisms]
        if not isinstance(mechanisms, (list, tuple)):
            raise TypeError(f"mechanisms must be a list of Mechanism, got {type(mechanisms).__name__}")
        if counts is None:
            counts = [1] * len(mechanisms)
        if not isinstance(counts, (list, tuple, np.ndarray)):
            raise TypeError(f"counts must be a list of positive integers, got {counts!r}")
        check.same_length(("mechanisms", "counts"), mechanisms, counts)
        if len(mechanisms) == 0:
            raise ValueError("mechanisms must not be empty")
        for i, m in enumerate(mechanisms):
            if not isinstance(m, Mechanism):
                raise TypeError(f"mechanisms[{i}] must be a Mechanism, got {type(m).__name__}")
        # Counts stay exactly representable as floats (the accountant computes with them).
        ks = [check.bounded_int(f"counts[{i}]", k) for i, k in enumerate(counts)]
        return ComposedMechanism(tuple(mechanisms), tuple(ks))


#: Largest mu a group of an exactly GDP mechanism may have: that of the Gaussian with the
#: smallest noise multiplier it takes (1e-300), the range the GDP closed forms are kept for.
MAX_GROUP_MU = 1e300


#: Most records of a group of a pure-DP child given Dong, Roth and Su's group pair (g + 1 outcomes).
GROUP_PAIR_MOST = 4096


@dataclass(frozen=True, eq=False, repr=False)
class GroupMechanism(Mechanism):
    """``child`` protecting groups of ``g`` records: datasets that differ in at most g records
    (under the child's relation, applied g times).

    * An exactly mu-GDP child is exactly (g mu)-GDP for groups of g (Dong, Roth and
      Su 2022, Theorem 2.14), and for the Gaussian mechanism this is its own pair
      with sensitivity g: tight.
    * A pure eps-DP child (``dp_guarantee`` (eps, 0)) is (g eps)-DP for groups of g
      (Dwork and Roth 2014, Theorem 2.2), and dominated by the tighter group pair of Dong,
      Roth and Su (2022, Theorem 2.14; :mod:`~autoacct.zoo.group_pure`; up to
      GROUP_PAIR_MOST records): sound, but not tight in general (so lower bounds read off it
      are not certified for the child); for ``PureDP(eps)`` itself, any eps-DP mechanism, the
      geometric mechanism on a count attains that group pair (:meth:`attained_parts`).

    Other children are rejected: for them no group bound is exact, and the ones that
    are sound (through (eps, delta) with delta growing like g e^{(g-1) eps} delta) are
    loose.
    """

    child: Mechanism
    g: int

    def __post_init__(self) -> None:
        if not isinstance(self.child, Mechanism):
            raise TypeError(f"mechanism must be a Mechanism, got {type(self.child).__name__}")
        gg = check.bounded_int("g", self.g)
        if not self.name:
            self._set(name=f"Group{gg}:{self.child.name}")
        if self.neighboring is None:
            self._set(neighboring=self.child.neighboring)
        super().__post_init__()
        self._set(g=gg)
        mu = self.child.exact_gdp_mu()
        if mu is None and self._pure_eps() is None:
            raise ValueError(f"group privacy is only exact for Gaussian-type (exactly GDP) mechanisms, "
                             f"and sound here for pure-DP ones; {self.child.name} is neither")
        if mu is not None and not gg * mu <= MAX_GROUP_MU:
            # g mu overflowed to inf for Group(2**52)(Gaussian(1e-300)), which then answered
            # from an infinite mu with no check.
            most = int(MAX_GROUP_MU / mu) if math.isfinite(MAX_GROUP_MU / mu) else gg
            while most > 0 and most * mu > MAX_GROUP_MU:
                most -= 1
            raise ValueError(f"g={self.g!r} gives the group mu = g * {mu!r} = {gg * mu!r} for "
                             f"{self.child.name}: the group's mu overflows the supported range "
                             f"(at most {MAX_GROUP_MU}, Gaussian(1e-300)'s); g may be at most {most}")

    def _pure_eps(self) -> float | None:
        """The child's pure-DP epsilon (delta0 = 0 in its guarantee), else None."""
        got = self.child.dp_guarantee()
        if got is None or got[1] != 0 or not math.isfinite(got[0]):
            return None
        return float(got[0])

    @property
    def params(self) -> Mapping[str, Any]:
        return MappingProxyType({**self.child.params, f"{self.name}.g": self.g})

    def exact_gdp_mu(self) -> float | None:
        mu = self.child.exact_gdp_mu()
        return None if mu is None else self.g * mu

    def loss_parts(self) -> list[LossPart] | None:
        if self.child.exact_gdp_mu() is not None:
            return super().loss_parts()
        eps, guarantee = self._pure_eps(), self.dp_guarantee()
        assert eps is not None and guarantee is not None
        # Dong, Roth and Su's group pair (module group_pure), of g + 1 outcomes; one record's is
        # randomized response, and past GROUP_PAIR_MOST records or a largest loss g eps of 700
        # randomized response with log-odds g eps serves (it dominates the pair): the pair's
        # lattice of eps over g eps needed a grid of 5e6 points at g = 3e5, eps = 1e-6, 3 runs
        # (4.7 s, capped, no tighter), and e^(g eps) leaves the floats past 700.
        loss = (group_pure_dp_loss(eps, self.g) if 1 < self.g <= GROUP_PAIR_MOST and self.g * eps <= 700.0
                else randomized_response_loss(guarantee[0], tight=False))
        return [LossPart(loss, loss, 1)]

    def rdp_curve(self) -> PairRdp | None:
        if self.child.exact_gdp_mu() is not None:
            return super().rdp_curve()
        eps = self.dp_guarantee()
        assert eps is not None

        def curve(alpha: np.ndarray) -> np.ndarray:
            v = rr_rdp(eps[0], alpha)
            return np.stack([v, v])
        return curve

    def epsilon_lower(self, delta: float) -> float:
        # Datasets differing in one record differ in at most g: the child's own lower bound holds.
        return float(self.child.epsilon_bounds(delta)[0])

    def attained_parts(self) -> list[LossPart] | None:
        """For ``PureDP(eps)``, any eps-DP mechanism: the geometric mechanism on a count,
        c + Z with P(Z = z) proportional to e^(-eps |z|), is eps-DP, and the datasets without and
        with the group (counts c and c + g) give it the pair of ``DiscreteLaplace(1 / eps,
        sensitivity=g)`` at every run. That pair is Dong, Roth and Su's group pair (2022, Theorem
        2.14; the losses (2m - g) eps of its g + 1 outcomes are the geometric pair's): the bounds
        on every eps-DP mechanism's group pair are attained, and the bracket closes (20 runs of
        Group(3)(PureDP(0.1)), eps(1e-5): [2.568, 5.2858] -> [5.2858142, 5.2858142]). The scale
        1 / eps is rounded up, a mechanism at most eps-DP (in rationals).

        Past GROUP_PAIR_MOST records or g eps = 700 (where the group pair is not used either),
        randomized response with log-odds max(eps, g eps / 2) (rounded down): releasing 1 with
        probability sigmoid(eps (c - g / 2)), c the group's records present, moves the logit by
        eps per record (eps-DP) and by g eps between the two datasets, whose log-odds are then
        -g eps / 2 and g eps / 2."""
        if type(self.child) is not PureDP:
            return None
        eps = Fraction(self.child.eps)
        if 1 < self.g <= GROUP_PAIR_MOST and self.g * eps <= 700:
            scale = float(1 / eps)
            while 1 / Fraction(scale) > eps:
                scale = math.nextafter(scale, math.inf)
            return DiscreteLaplace(scale, sensitivity=self.g).loss_parts()
        # (at most MAX_EPS, PureDP's range: a smaller log-odds is a post-processing, also attained;
        # Group(4)(PureDP(1e100)) raised ValueError on every composed query)
        exact = min(max(eps, self.g * eps / 2), Fraction(MAX_EPS))
        log_odds = float(exact)
        return PureDP(log_odds if Fraction(log_odds) <= exact else math.nextafter(log_odds, 0.0)).loss_parts()

    def dp_guarantee(self) -> tuple[float, float] | None:
        eps = self._pure_eps() if self.child.exact_gdp_mu() is None else None
        if eps is None:
            return None
        # g eps in rationals, rounded up (exact when a float holds it).
        return rational_up(self.g * Fraction(eps)), 0.0


class Group(Transformer):
    """``Group(g)(mechanism)``: the guarantee of ``mechanism`` for datasets differing in ``g``
    records (see :class:`GroupMechanism`: exact for exactly-GDP mechanisms, sound for pure DP)."""

    def __init__(self, g: int) -> None:
        self.g = check.bounded_int("g", g)

    def __call__(self, mechanism: Any) -> Mechanism:
        return GroupMechanism(mechanism, self.g)
