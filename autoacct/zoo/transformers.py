"""Transformers: pure callables that build new mechanisms from old ones."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import numpy as np

from autoacct import _validation as check
from autoacct.exactness import rational_up
from autoacct.mechanism import LossPart, Mechanism, Neighboring, PairRdp, Transformer


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


@dataclass(frozen=True, eq=False, repr=False)
class ComposedMechanism(Mechanism):
    """Adaptive composition of ``counts[i]`` runs of ``children[i]``.

    Dominating pairs compose as products (Zhu, Dong and Wang 2022): PLDs convolve,
    RDP adds (per order of the pair), and Gaussians merge
    exactly into one Gaussian with mu = sqrt(sum_i k_i mu_i^2). The name is
    derived from the children's; the relation is the one they declare.
    """

    children: tuple[Mechanism, ...]
    counts: tuple[int, ...]

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
        for child, k in zip(self.children, self.counts):
            parts = child.loss_parts()
            if parts is None:
                return None
            out.extend(LossPart(f, b, k * n) for f, b, n in parts)
        return out

    def rdp_curve(self) -> PairRdp | None:
        curves = [child.rdp_curve() for child in self.children]
        if any(c is None for c in curves):
            return None

        def curve(alpha: np.ndarray) -> np.ndarray:
            total = np.zeros((2,) + np.shape(alpha))
            for c, k in zip(curves, self.counts):
                assert c is not None
                total = total + k * np.asarray(c(alpha), dtype=float)
            return total
        return curve

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

    def epsilon_lower(self, delta: float) -> float:
        # The composition is at least as revealing as any one of its parts.
        return max(c.epsilon_bounds(delta)[0] for c in self.children)


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
