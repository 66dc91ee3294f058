"""Laplace compositions (no closed form) against an independent accountant, dp_accounting."""

from __future__ import annotations

import pytest

from autoacct.zoo import Composition, Laplace

pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")


@pytest.mark.parametrize("b, k", [(1.0, 1), (3.0, 40), (10.0, 500), (0.5, 10)])
@pytest.mark.parametrize("delta", [1e-5, 1e-9])
def test_laplace_composition_agrees_with_dp_accounting(b, k, delta):
    # dp_accounting's pessimistic PLD with a fine grid is an upper bound; its
    # optimistic one a lower bound. The truth lies between them.
    fine = 1e-4
    up = pld.from_laplace_mechanism(b, value_discretization_interval=fine).self_compose(k)
    lo = pld.from_laplace_mechanism(b, value_discretization_interval=fine,
                                    pessimistic_estimate=False).self_compose(k)
    ref_up = up.get_epsilon_for_delta(delta)
    ref_lo = lo.get_epsilon_for_delta(delta)
    m = Composition()([Laplace(b)], [k])
    ours_lo, ours_up = m.epsilon_bounds(delta)
    assert ours_up >= ref_lo - 1e-9            # never below the truth
    assert ours_lo <= ref_up + 1e-9            # our lower bound is below the truth too
    assert ours_up <= ref_up * (1 + 1e-3) + 1e-9   # within 0.1% of the truth
    assert m.epsilon(delta) == ours_up
