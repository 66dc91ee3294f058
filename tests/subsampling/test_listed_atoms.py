"""Atoms the subsampled laws list (autoacct/subsampling/poisson.py, without_replacement.py): the
Poisson remove pair's atom at log(1 - q) from its base's mass at -inf, and the atoms of the
symmetric pair of replace-one sampling. Each listed atom must be the mass its cells hold
there, for a restriction at thresholds clear of it to split no atom (losses/restricted.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autoacct.losses import GaussianLoss
from autoacct.subsampling.poisson import PoissonRemoveLoss
from autoacct.subsampling.with_replacement import MixtureLoss
from autoacct.subsampling.without_replacement import SymmetrizedLoss
from autoacct.zoo import Gaussian, SampleWithoutReplacement, SampleWithReplacement


def _cell_at(law, x: float) -> tuple[float, float]:
    """P- and Q-mass of the law in the cell (prev(x) - 1e-12, x]: an atom at x, nothing else."""
    p, q = law.cell_masses(np.array([x - 1e-12, x]))
    return float(p[0]), float(q[0])


@pytest.mark.parametrize("q", [1e-4, 0.01, 0.3])
def test_poisson_remove_lists_the_atom_of_its_bases_mass_at_minus_inf(q):
    # A base with Q-mass w at -inf (outcomes only Q produces) and no atoms: under the remove
    # pair those outcomes have P-mass (1 - q) w and Q-mass w, at the loss log(1 - q).
    w = 1e-3
    base = MixtureLoss([GaussianLoss(1.0)], np.array([1.0 - w]), w_inf=w)
    assert not base.has_atoms and base.q_ninf == pytest.approx(w)
    law = PoissonRemoveLoss(base, q)
    values, masses = law.atoms
    assert values.tolist() == [math.log1p(-q)]
    assert masses[0] == pytest.approx((1.0 - q) * w, rel=1e-12)
    p, qm = _cell_at(law, values[0])
    # (the Gaussian part adds a density's sliver of 1e-12 to the cell)
    assert p == pytest.approx(masses[0], rel=1e-6) and qm == pytest.approx(w, rel=1e-6)
    # A base without mass at -inf lists none, nor one whose atoms are read through its cells.
    assert PoissonRemoveLoss(GaussianLoss(1.0), q).atoms[0].size == 0


def test_the_symmetric_pair_lists_its_atom_at_zero_and_the_halfs_mirrored():
    # Without replacement: the Gaussian half has no atoms; the symmetric pair's one atom is 0,
    # the mass of neither side, which its cells hold.
    law = SampleWithoutReplacement(1e-3)(Gaussian(1.0)).loss_parts()[0].forward
    values, masses = law.atoms
    assert values.tolist() == [0.0] and masses[0] == law.a0
    assert _cell_at(law, 0.0) == pytest.approx((law.a0, law.a0), rel=1e-9)
    # With replacement: the half's atom at log(1 - eta) < 0 falls into the mass at 0.
    swr = SampleWithReplacement(10, 100_000)(Gaussian(1.0)).loss_parts()[0].forward
    assert isinstance(swr, SymmetrizedLoss) and swr.half.atoms[0].size == 1 and swr.half.atoms[0][0] < 0
    assert swr.atoms[0].tolist() == [0.0]
    # A half with an atom at v > 0 gives v under X (its A-mass) and -v (its B-mass e^-v times).
    v, pa = 0.7, 0.2
    from autoacct.losses.base import DiscreteLoss
    pm, qm = np.array([1.0 - pa, pa]), np.array([1.0 - pa * math.exp(-v), pa * math.exp(-v)])
    half = DiscreteLoss(np.log(pm / qm), pm, qm)
    values, masses = SymmetrizedLoss(half).atoms
    assert values == pytest.approx([-v, 0.0, v], abs=1e-15) and values[1] == 0.0
    assert masses[0] == pytest.approx(pa * math.exp(-v)) and masses[2] == pa


def test_the_symmetric_pair_of_a_half_with_unlisted_atoms_lists_none():
    from autoacct.zoo import Laplace
    law = SampleWithoutReplacement(1e-3)(Laplace(1.0)).loss_parts()[0].forward
    assert law.has_atoms and law.half.has_atoms and law.atoms[0].size == 0
