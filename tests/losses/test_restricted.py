"""Parts of a loss law (autoacct/losses/restricted.py): the measure restricted to a range of
losses, for laws with a density and for laws held atom by atom."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autoacct import PoissonSubsample
from autoacct.losses import GaussianLoss
from autoacct.losses.atoms import AtomLoss
from autoacct.losses.restricted import RestrictedLoss, restricted
from autoacct.zoo import DiscreteGaussian


def _subsampled_dg(q: float, sigma: float):
    part = PoissonSubsample(q)(DiscreteGaussian(sigma)).loss_parts()[0]
    return part.forward, part.backward


@pytest.mark.parametrize("q, sigma", [(1e-4, 1.0), (1e-3, 0.7), (0.05, 2.0)])
@pytest.mark.parametrize("direction", [0, 1])
def test_atom_parts_add_up_to_the_law(q, sigma, direction):
    # The split of jumps.py expands w^{*k} binomially over w = bulk + tail: the parts must be
    # a partition of the measure. Each part is an atom law again (merged onto lattices by its
    # lower PLD), and the profile, linear in the measure, is the sum of the parts' profiles.
    law = _subsampled_dg(q, sigma)[direction]
    assert law.has_atoms and law.merged_lower and law.lattice is None
    values = law.values
    for tau in (float(np.quantile(values, 0.3)), float(values[len(values) // 2]), 1e-3):
        low, high = restricted(law, -math.inf, tau), restricted(law, tau, math.inf)
        for part in (low, high):
            assert isinstance(part, AtomLoss) and part.merged_lower and part.lattice is None
        assert np.all(low.values <= tau) and np.all(high.values > tau)
        # (a part with no atom holds one of mass 0)
        assert np.count_nonzero(low.p_mass) + np.count_nonzero(high.p_mass) == np.count_nonzero(law.p_mass)
        # +inf belongs to the upper part alone, -inf to the lower one.
        assert (low.p_inf, high.p_inf) == (0.0, law.p_inf)
        assert (low.q_ninf, high.q_ninf) == (law.q_ninf, 0.0)
        eps = np.linspace(-0.5, 2.0, 41)
        whole = law.profile(eps)
        both = low.profile(eps) + high.profile(eps)
        assert np.allclose(both, whole, rtol=1e-12, atol=1e-15)
        # The parts' masses, cell by cell, are the law's.
        edges = np.concatenate(([-np.inf], np.linspace(-0.01, 0.05, 25), [np.inf]))
        m_p, m_q = law.cell_masses(edges)
        lp, lq = low.cell_masses(edges)
        hp, hq = high.cell_masses(edges)
        assert np.allclose(lp + hp, m_p, rtol=1e-14, atol=0.0)
        assert np.allclose(lq + hq, m_q, rtol=1e-14, atol=0.0)


def test_a_middle_part_keeps_neither_infinity():
    law = _subsampled_dg(1e-3, 1.0)[0]
    part = restricted(law, -1e-3, 1e-2)
    assert part.p_inf == 0.0 and part.q_ninf == 0.0
    assert np.all((part.values > -1e-3) & (part.values <= 1e-2))
    assert part.key != restricted(law, -1e-3, 2e-2).key


def test_a_law_with_a_density_is_restricted_as_before():
    law = GaussianLoss(0.5)
    part = restricted(law, -math.inf, 0.3)
    assert isinstance(part, RestrictedLoss)
    eps = np.linspace(-1.0, 1.0, 11)
    assert np.allclose(part.profile(eps) + restricted(law, 0.3, math.inf).profile(eps), law.profile(eps),
                       rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("lo, hi", [(1.0, 1.0), (2.0, 1.0)])
def test_an_empty_range_is_refused(lo, hi):
    with pytest.raises(ValueError, match="lo < hi"):
        restricted(_subsampled_dg(1e-3, 1.0)[0], lo, hi)
    with pytest.raises(ValueError, match="lo < hi"):
        restricted(GaussianLoss(1.0), lo, hi)


@pytest.mark.parametrize("lo, hi", [(100.0, 200.0), (100.0, math.inf), (-math.inf, -50.0)])
def test_a_part_between_atoms_is_a_law_of_mass_zero(lo, hi):
    # A threshold moved onto a coarse lattice can pass the tail's last atom: the part holds no
    # atom. It must still be a law the discretiser reads (an empty atom law failed in its
    # quantile range): one atom of mass 0 in the range, and the mass at +inf where hi is +inf.
    from autoacct.pld.discretize import discretize
    from autoacct.pld.grid import index_range
    law = _subsampled_dg(1e-3, 1.0)[0]
    part = restricted(law, lo, hi)
    assert np.all((part.values > lo) & (part.values <= hi)) and not np.any(part.p_mass)
    assert part.p_inf == (law.p_inf if math.isinf(hi) else 0.0)
    eps = np.array([-1.0, 0.0, 150.0])
    assert np.array_equal(part.profile(eps), np.full(3, part.p_inf))
    up, low = discretize(part, 0.01, *index_range(part, 0.01, 1e-17))
    assert not np.any(up.masses) and not np.any(low.masses)


def _swor_law():
    from autoacct.zoo import Gaussian, SampleWithoutReplacement
    return SampleWithoutReplacement(1e-3)(Gaussian(1.0)).loss_parts()[0].forward


def test_a_symmetric_law_is_its_middle_and_its_outside():
    # The pair of sampling without replacement holds an atom at 0 (the mass of neither side),
    # which it lists: a range clear of it splits the law into a middle part holding the atom
    # and the part outside, both tails at once, whose profiles and cells add up to the law's.
    from autoacct.losses.restricted import OutsideLoss, outside
    law = _swor_law()
    values, masses = law.atoms
    assert law.has_atoms and values.tolist() == [0.0] and 0.3 < masses[0] < 0.5
    middle, out = restricted(law, -0.1, 0.12), outside(law, -0.1, 0.12)
    assert isinstance(middle, RestrictedLoss) and isinstance(out, OutsideLoss)
    assert middle.has_atoms and middle.atoms[0].tolist() == [0.0] and not out.has_atoms
    assert (middle.p_inf, out.p_inf) == (0.0, law.p_inf) and (middle.q_ninf, out.q_ninf) == (0.0, law.q_ninf)
    eps = np.linspace(-2.0, 2.0, 81)
    assert np.allclose(middle.profile(eps) + out.profile(eps), law.profile(eps), rtol=1e-12, atol=1e-16)
    edges = np.concatenate(([-np.inf], np.linspace(-0.3, 0.3, 61), [np.inf]))
    (mp_, mq_), (op, oq), (lp, lq) = middle.cell_masses(edges), out.cell_masses(edges), law.cell_masses(edges)
    assert np.allclose(mp_ + op, lp, rtol=1e-13, atol=0.0) and np.allclose(mq_ + oq, lq, rtol=1e-13, atol=0.0)
    # The outside's mass lies beyond the range only, and its range covers both tails.
    inner = np.linspace(-0.1, 0.12, 23)
    assert not np.any(out.cell_masses(inner)[0][1:])
    a, b = out.quantile_range(1e-20)
    assert a <= law.quantile_range(1e-20)[0] and b >= law.quantile_range(1e-20)[1]


@pytest.mark.parametrize("lo, hi", [(0.0, 0.1), (-0.1, 0.0), (-0.1, 1e-12)])
def test_a_listed_atom_at_a_range_end_is_refused(lo, hi):
    with pytest.raises(ValueError, match="range's ends"):
        restricted(_swor_law(), lo, hi)


def test_atoms_read_through_cells_are_refused():
    # The subsampled Laplace law has atoms it does not list (read through its cells): a cell
    # clipped at a range end could split one, so neither part is made.
    from autoacct.zoo import Laplace
    law = PoissonSubsample(1e-3)(Laplace(1.0)).loss_parts()[0].forward
    assert law.has_atoms and law.atoms[0].size == 0
    with pytest.raises(ValueError, match="range's ends"):
        restricted(law, -math.inf, 0.5)


@pytest.mark.parametrize("lo, hi", [(-math.inf, 0.1), (-0.1, math.inf), (0.1, 0.1)])
def test_outside_needs_a_finite_range(lo, hi):
    from autoacct.losses.restricted import outside
    with pytest.raises(ValueError, match="finite lo < hi"):
        outside(_swor_law(), lo, hi)


@pytest.mark.parametrize("q, sigma", [(1e-4, 1.0), (0.05, 2.0)])
def test_atom_parts_outside_a_range_add_up(q, sigma):
    # An atom law's outside is an atom law again: the atoms at or below lo and above hi, with
    # both infinities; with the middle part it partitions the atoms.
    from autoacct.losses.restricted import outside
    law = _subsampled_dg(q, sigma)[0]
    lo, hi = float(np.quantile(law.values, 0.2)), float(np.quantile(law.values, 0.7))
    middle, out = restricted(law, lo, hi), outside(law, lo, hi)
    assert isinstance(out, AtomLoss) and out.merged_lower
    assert np.all((out.values <= lo) | (out.values > hi))
    assert np.count_nonzero(middle.p_mass) + np.count_nonzero(out.p_mass) == np.count_nonzero(law.p_mass)
    assert (out.p_inf, out.q_ninf) == (law.p_inf, law.q_ninf)
    eps = np.linspace(-0.5, 2.0, 41)
    assert np.allclose(middle.profile(eps) + out.profile(eps), law.profile(eps), rtol=1e-12, atol=1e-15)
