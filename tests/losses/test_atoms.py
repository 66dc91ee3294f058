"""Loss laws held atom by atom, and the bounded-range envelope (autoacct/losses/atoms.py).

Truth for the envelope: its P- and Q-masses in closed form at 60 digits (mpmath), and for
its composition the randomized response with log-odds eps / 2, which is eps-bounded-range
itself, so that any certified upper bound for k eps-BR mechanisms lies above its k-fold
composition; by the central limit theorem that is mu-GDP with mu = sqrt(k) eps / 2 (to
about 1e-8 relatively at the counts below, far inside the margins).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from closed_forms import gaussian_delta_closed
from warning_policy import strict_warnings

from autoacct.exactness import MACHINE_EPSILON
from autoacct.losses.atoms import AtomLoss, BoundedRangeEnvelopeLoss
from autoacct.pld.accountant import FFTAccountant
from autoacct.zoo import Composition, ExponentialMechanism


def _exact_masses(eps: float, edges: np.ndarray) -> tuple[list[mp.mpf], list[mp.mpf]]:
    """P- and Q-masses of the envelope's cells (edges clipped to [-eps, eps]) at 60 digits."""
    with mp.workdps(60):
        e = mp.mpf(eps)
        norm = mp.expm1(e)
        x = [min(max(mp.mpf(float(v)), -e), e) for v in edges]
        cdf_p = [mp.expm1((e + v) / 2) / norm for v in x]
        sf_q = [mp.expm1((e - v) / 2) / norm for v in x]
        return ([cdf_p[i + 1] - cdf_p[i] for i in range(len(x) - 1)],
                [sf_q[i] - sf_q[i + 1] for i in range(len(x) - 1)])


@pytest.mark.parametrize("eps", [1e-8, 1.01e-8, 0.3, 5.0])
def test_bounded_range_envelope_cell_masses_within_a_few_roundoffs(eps: float) -> None:
    """Every cell mass is within 8 roundoffs of the truth, so the ratio of a cell's Q- and
    P-mass that the connect-the-dots split reads is within the discretiser's RATIO_ULPS = 16
    (at eps = 1e-8 they were off by up to 390, from differences of exponentials of logs)."""
    loss = BoundedRangeEnvelopeLoss(eps)
    h = eps / 30.37
    edges = np.concatenate(([-np.inf], np.arange(-32, 33) * h, [np.inf]))
    m_p, m_q = loss.cell_masses(edges)
    ex_p, ex_q = _exact_masses(eps, edges)
    for got, exact in ((m_p, ex_p), (m_q, ex_q)):
        rel = [abs(float((mp.mpf(float(g)) - x) / x)) for g, x in zip(got, exact) if x > 0]
        assert max(rel) <= 8 * MACHINE_EPSILON
        assert all(g == 0.0 for g, x in zip(got, exact) if x == 0)


@pytest.mark.parametrize("eps, count", [(1e-8, 2 ** 51), (1e-8, 3 * 2 ** 49)])
def test_bounded_range_composed_near_2_pow_51_above_randomized_response(eps: float, count: int) -> None:
    """k = 2^51 and 3 2^49 copies at eps = 1e-8: the FFT accountant's upper delta at mu lies
    above the composed randomized response's (it was 0.0195 and 0.25 times it: the envelope's
    masses lost 4e-15 of their total and moved their mean below the KL divergence, which the
    composition multiplies by k)."""
    mu = math.sqrt(count) * eps / 2.0
    parts = Composition()([ExponentialMechanism(eps)], [count]).loss_parts()
    with strict_warnings():
        acc = FFTAccountant([(p.forward, p.backward, count) for p in parts])
        _, upper = acc.delta(np.array([mu]), acc.eps_scale(1e-5), 1e-3)
    assert float(upper[0]) >= gaussian_delta_closed(mu, mu) * (1.0 + 1e-6)


def test_dominating_atom_law_sums_its_cells_outward() -> None:
    # A law that only dominates its pair (tight=False) is read for upper PLDs alone: each cell's
    # P-mass must be at least, and its Q-mass at most, the exact sum of its atoms' masses
    # (exact rationals here). Plain float sums of 4,000 masses per cell fell below the exact
    # P-sums on some cells; a tight law keeps its plain sums (its lower PLD reads them too).
    from fractions import Fraction

    from autoacct.losses.atoms import AtomLoss

    rng = np.random.default_rng(11)
    n = 40_000
    values = np.sort(rng.uniform(-1.0, 1.0, n))
    p = rng.random(n) / n
    q = p * np.exp(-values)
    edges = np.linspace(-1.0, 1.0, 11)
    idx = np.searchsorted(values, edges, side="right")
    exact_p = [sum(map(Fraction, p[i:j].tolist()), Fraction(0)) for i, j in zip(idx[:-1], idx[1:])]
    exact_q = [sum(map(Fraction, q[i:j].tolist()), Fraction(0)) for i, j in zip(idx[:-1], idx[1:])]
    up_p, up_q = AtomLoss(("outward",), values, p, q, tight=False).cell_masses(edges)
    assert all(Fraction(float(a)) >= e for a, e in zip(up_p, exact_p))
    assert all(Fraction(float(a)) <= e for a, e in zip(up_q, exact_q))
    # ... within a few gamma_(n-1) (4,000 atoms a cell: 9e-13).
    assert all(float(a) <= float(e) * (1 + 2e-12) for a, e in zip(up_p, exact_p))
    plain_p, _ = AtomLoss(("plain",), values, p, q, tight=True).cell_masses(edges)
    assert any(Fraction(float(a)) < e for a, e in zip(plain_p, exact_p))


def _lone_atoms(seed: int) -> tuple[np.random.Generator, float, int, int, np.ndarray, np.ndarray]:
    """(rng, h, cells, j0, values, p): one atom in each half of every cell (at a quarter and three
    quarters of it), P-masses of total 1 spread over three orders of magnitude."""
    rng = np.random.default_rng(seed)
    h = float(rng.choice([0.01, 0.02, 0.05]))
    cells = int(rng.integers(50, 400))
    j0 = -cells // 2
    values = np.array([(j + f) * h for j in range(j0, j0 + cells) for f in (0.25, 0.75)])
    p = rng.random(len(values)) * rng.choice([1.0, 1e-3], len(values))
    return rng, h, cells, j0, values, p / p.sum()


@pytest.mark.parametrize("seed", [0, 3, 30, 41])
def test_dominating_atom_law_with_lone_atoms_per_half_cell_keeps_its_total(seed: int) -> None:
    # discretize() asks the law for half-cells and adds each cell's two halves (one more
    # rounding): with one atom in each half, the halves' sums are exact and were left as they
    # were, so their rounded sum put the upper PLD's total P-mass (its profile as eps -> -inf)
    # up to 2.4e-17 relatively below the atoms' exact total (seed 3). Truth: exact rationals.
    from fractions import Fraction

    from autoacct.losses.atoms import AtomLoss
    from autoacct.pld.discretize import discretize

    rng, h, cells, j0, values, p = _lone_atoms(seed)
    p = p * (1 - 1e-6)
    loss = AtomLoss(("lone atoms", seed), values, p, p * np.exp(-values), p_inf=1e-6 * rng.random(), tight=False)
    upper, _ = discretize(loss, h, j0 - 1, j0 + cells + 1)
    exact = sum(map(Fraction, p.tolist()), Fraction(0)) + Fraction(loss.p_inf)
    total = sum(map(Fraction, upper.masses.tolist()), Fraction(0)) + Fraction(upper.p_inf)
    assert total >= exact


def _exact_sum(masses: np.ndarray) -> Fraction:
    return sum(map(Fraction, np.asarray(masses).tolist()), Fraction(0))


def _dense_tight_law(seed: int, n: int = 3000) -> AtomLoss:
    """A tight law of n atoms spread over [-1, 1]: 75 atoms in each cell of width 0.05."""
    rng = np.random.default_rng(seed)
    values = np.sort(rng.uniform(-1.0, 1.0, n))
    p = rng.random(n)
    p /= p.sum()
    return AtomLoss(("tight sums", seed), values, p, p * np.exp(-values), tight=True)


def test_tight_atom_law_bounds_the_rounding_of_its_cell_sums() -> None:
    # Each cell's plain float sums are within the bound cell_masses_with_error gives of the
    # exact sums of its atoms' masses (exact rationals), and a lone atom's mass is its own.
    loss = _dense_tight_law(0)
    edges = np.concatenate(([-np.inf], np.linspace(-1.0, 1.0, 41), [np.inf]))
    m_p, m_q, rel = loss.cell_masses_with_error(edges)
    assert rel is not None
    idx = np.searchsorted(loss.values, edges, side="right")
    for i, (a, b) in enumerate(zip(idx[:-1], idx[1:])):
        for got, masses in ((m_p[i], loss.p_mass[a:b]), (m_q[i], loss.q_mass[a:b])):
            exact = _exact_sum(masses)
            assert abs(Fraction(float(got)) - exact) <= Fraction(float(rel[i])) * exact
        assert (rel[i] == 0.0) == (b - a <= 1)


@pytest.mark.parametrize("seed", [1, 2, 5, 6])
def test_tight_atom_law_pld_totals_bracket_the_atoms_total(seed: int) -> None:
    # The upper PLDs' total P-mass (their profile as eps -> -inf) is at least the atoms' exact
    # total, the lower PLD's at most (exact rationals). A tight law's cells were summed plainly
    # (its lower PLD reads the same masses), and 75 atoms a cell put the upper totals up to
    # 4.3e-17 below the exact one (seed 6: discretize_upper 4.3e-17, discretize 1.5e-17; seed 2
    # discretize 1.0e-17; seed 5 discretize_upper 4.3e-18): k compositions multiply that by k.
    from autoacct.pld.discretize import discretize, discretize_upper

    loss = _dense_tight_law(seed)
    exact = _exact_sum(loss.p_mass)
    upper, lower = discretize(loss, 0.05, -21, 21)
    alone = discretize_upper(loss, 0.05, -21, 21)
    for pld in (upper, alone):
        assert _exact_sum(pld.masses) + Fraction(pld.p_inf) >= exact
    assert _exact_sum(lower.masses) + Fraction(lower.p_inf) <= exact


@pytest.mark.parametrize("seed", [0, 3, 30, 41])
def test_tight_atom_law_with_lone_atoms_per_half_cell_keeps_its_total(seed: int) -> None:
    # One atom in each half of every cell: the halves' sums are exact, and the discretiser's
    # sum of the two is moved outward by its one rounding (u of itself), each way.
    from autoacct.pld.discretize import discretize

    _, h, cells, j0, values, p = _lone_atoms(seed)
    loss = AtomLoss(("tight lone atoms", seed), values, p, p * np.exp(-values), tight=True)
    upper, lower = discretize(loss, h, j0 - 1, j0 + cells + 1)
    exact = _exact_sum(p)
    assert _exact_sum(upper.masses) + Fraction(upper.p_inf) >= exact
    assert _exact_sum(lower.masses) + Fraction(lower.p_inf) <= exact
