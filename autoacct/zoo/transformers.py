"""Transformers: pure callables that build new mechanisms from old ones."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from autoacct import _validation as check
from autoacct.losses import PrivacyLoss
from autoacct.mechanism import Mechanism, Neighboring, Transformer


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


class ComposedMechanism(Mechanism):
    """Adaptive composition of ``counts[i]`` runs of ``mechanisms[i]``.

    Dominating pairs compose as products (seed 001, Theorem 2): PLDs convolve,
    RDP adds (per order of the pair), and Gaussians merge exactly into one
    Gaussian with mu = sqrt(sum_i k_i mu_i^2).
    """

    def __init__(self, mechanisms: Sequence[Mechanism], counts: Sequence[int]) -> None:
        children = tuple(mechanisms)
        ks = tuple(counts)
        rel = common_neighboring(children)
        name = "Compose:{" + ", ".join(f"{c.name}: {k}" for c, k in zip(children, ks)) + "}"
        super().__init__(name=name, params=merge_params(children), neighboring=rel)
        object.__setattr__(self, "children", children)
        object.__setattr__(self, "counts", ks)

    def _gdp_mu(self) -> float | None:
        total = 0.0
        for child, k in zip(self.children, self.counts):
            mu = child._gdp_mu()
            if mu is None:
                return None
            total += k * mu * mu
        return float(np.sqrt(total))

    def _pld_parts(self) -> list[tuple[PrivacyLoss, PrivacyLoss, int]] | None:
        out = []
        for child, k in zip(self.children, self.counts):
            parts = child._pld_parts()
            if parts is None:
                return None
            out.extend((f, b, k * n) for f, b, n in parts)
        return out

    def _has_rdp(self) -> bool:
        return all(c._has_rdp() for c in self.children)

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        total = np.zeros((2,) + np.shape(alpha))
        for child, k in zip(self.children, self.counts):
            total = total + k * np.asarray(child._rdp(alpha), dtype=float)
        return total

    def _epsilon_lower(self, delta: float) -> float:
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
        ks = [check.positive_int(f"counts[{i}]", k) for i, k in enumerate(counts)]
        return ComposedMechanism(mechanisms, ks)
