"""Bad input is rejected at construction with a ValueError (or TypeError) naming the parameter."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from autoacct import Mechanism, Neighboring, RouteUnavailableError
from autoacct.zoo import ZCDP, ApproxDP, Composition, Gaussian, Laplace, PoissonSubsample, PureDP, RandomizedResponse


@pytest.mark.parametrize("make, name", [
    (lambda: Gaussian(0.0), "sigma"),
    (lambda: Gaussian(-1.0), "sigma"),
    (lambda: Gaussian(math.nan), "sigma"),
    (lambda: Gaussian(math.inf), "sigma"),
    (lambda: Laplace(0.0), "b"),
    (lambda: Laplace(math.nan), "b"),
    (lambda: RandomizedResponse(0.4), "p"),
    (lambda: RandomizedResponse(1.0), "p"),
    (lambda: RandomizedResponse(math.nan), "p"),
    (lambda: PureDP(-0.1), "eps"),
    (lambda: ApproxDP(1.0, 1.0), "delta"),
    (lambda: ApproxDP(1.0, -1e-9), "delta"),
    (lambda: ApproxDP(math.nan, 0.1), "eps"),
    (lambda: ZCDP(0.0), "rho"),
])
def test_bad_parameters_name_themselves(make, name):
    with pytest.raises(ValueError, match=name):
        make()


def test_non_numeric_parameter_is_a_type_error():
    with pytest.raises(TypeError, match="sigma"):
        Gaussian("1.0")


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.5, 1.5, math.nan])
def test_epsilon_rejects_delta_outside_unit_interval(delta):
    with pytest.raises(ValueError, match="delta"):
        Gaussian(1.0).epsilon(delta)


@pytest.mark.parametrize("eps", [-1.0, math.nan])
def test_delta_rejects_bad_epsilon(eps):
    with pytest.raises(ValueError, match="epsilon"):
        Laplace(1.0).delta(eps)


@pytest.mark.parametrize("counts, name", [([0], "counts"), ([-3], "counts"), ([1.5], "counts"),
                                          ([math.nan], "counts")])
def test_composition_counts_must_be_positive_integers(counts, name):
    with pytest.raises(ValueError, match=name):
        Composition()([Gaussian(1.0)], counts)


def test_composition_lengths_must_match():
    with pytest.raises(ValueError, match="mechanisms and counts"):
        Composition()([Gaussian(1.0), Laplace(1.0)], [1])


def test_composition_rejects_non_mechanisms():
    with pytest.raises(TypeError, match=r"mechanisms\[1\]"):
        Composition()([Gaussian(1.0), 3.0], [1, 1])


def test_mixing_neighbouring_relations_is_an_error():
    a = Gaussian(1.0, neighboring=Neighboring.ADD_REMOVE)
    b = Gaussian(1.0, neighboring=Neighboring.REPLACE_ONE)
    with pytest.raises(ValueError, match="neighbouring"):
        Composition()([a, b], [1, 1])


def test_unknown_route_and_unavailable_route():
    with pytest.raises(ValueError, match="via"):
        Gaussian(1.0).epsilon(1e-5, via="magic")
    with pytest.raises(RouteUnavailableError, match="pld"):
        ZCDP(0.5).epsilon(1e-5, via="pld")
    with pytest.raises(ValueError, match="alpha"):
        Gaussian(1.0).rdp(0.999)
    with pytest.raises(ValueError, match="tol"):
        Gaussian(1.0).epsilon(1e-5, tol=0.0)


def test_mechanisms_are_immutable():
    g = Gaussian(2.0)
    with pytest.raises(AttributeError):
        g.sigma = 3.0


def test_a_mechanism_without_any_representation_is_rejected_at_definition():
    with pytest.raises(TypeError, match="representation"):
        class Empty(Mechanism):
            pass


@pytest.mark.parametrize("make", [lambda v: Laplace(v), lambda v: PureDP(v), lambda v: RandomizedResponse(v),
                                  lambda v: PoissonSubsample(v)])
def test_an_integer_beyond_floating_point_is_a_value_error_naming_the_parameter(make):
    # float(10**400) raises OverflowError inside the check; it is out of every range here.
    with pytest.raises(ValueError, match=r"(b|eps|p|q) must"):
        make(10**400)


# ----- attack-risk views and targets ----------------------------------------------------------

@pytest.mark.parametrize("fpr", [-0.1, 1.5, math.nan, math.inf])
def test_tpr_rejects_fpr_outside_the_unit_interval(fpr):
    with pytest.raises(ValueError, match="fpr"):
        Gaussian(1.0).tpr(fpr)
    with pytest.raises(ValueError, match="fpr"):
        Gaussian(1.0).tpr([0.1, fpr])


@pytest.mark.parametrize("call", [lambda m: m.advantage(tol=0.0), lambda m: m.gdp_mu(tol=-1.0),
                                  lambda m: m.pld(tol=2.0)])
def test_risk_views_reject_a_bad_tolerance(call):
    with pytest.raises(ValueError, match="tol"):
        call(Composition()([Laplace(1.0)], [2]))


_GAUSS = Gaussian  # the calibrated family


@pytest.mark.parametrize("kwargs, name", [
    (dict(tpr=0.1, fpr=0.2), "tpr"),            # tpr <= fpr
    (dict(tpr=0.1, fpr=0.1), "tpr"),
    (dict(tpr=1.0, fpr=0.01), "tpr"),
    (dict(tpr=0.1, fpr=0.0), "fpr"),
    (dict(tpr=0.1, fpr=1.5), "fpr"),
    (dict(tpr=0.1, fpr=math.nan), "fpr"),
    (dict(tpr=0.1), "fpr"),
    (dict(advantage=0.0), "advantage"),
    (dict(advantage=1.0), "advantage"),
    (dict(advantage=-0.2), "advantage"),
    (dict(advantage=math.nan), "advantage"),
    (dict(epsilon=1.0, delta=1e-5, tpr=0.1, fpr=0.01), "epsilon=1.0, tpr=0.1"),
    (dict(tpr=0.1, fpr=0.01, advantage=0.05), "tpr=0.1, advantage=0.05"),
    (dict(advantage=0.05, fpr=0.01), "fpr"),
    (dict(advantage=0.05, delta=1e-5), "delta"),
    (dict(epsilon=1.0, delta=1e-5, fpr=0.01), "fpr"),
    (dict(epsilon=1.0), "delta"),
    (dict(), "none"),
])
def test_calibration_targets_are_checked(kwargs, name):
    from autoacct.calibrators import calibrate, calibrate_dpsgd
    with pytest.raises(ValueError, match=re.escape(name)):
        calibrate(_GAUSS, **kwargs)
    with pytest.raises(ValueError, match=re.escape(name)):
        calibrate_dpsgd(sample_rate=0.01, steps=100, **kwargs)


def test_an_infinite_end_a_value_may_not_take_reads_open() -> None:
    # "b must lie in [1e-100, inf]" while inf itself is refused as not finite.
    with pytest.raises(ValueError, match=r"must lie in \[1e-100, inf\), got 1e-101"):
        Laplace(1e-101)


# ----- booleans among numbers -----------------------------------------------------------------

def _mixture(sens, probs):
    from autoacct.zoo import MixtureOfGaussians
    return MixtureOfGaussians(1.0, sens, probs)


def _pair(p, q):
    from autoacct.zoo import DiscretePair
    return DiscretePair(p, q)


@pytest.mark.parametrize("make, name", [
    # np.asarray((0, True)) is an int array: the dtype check alone read True as 1.0.
    (lambda: _mixture((0, True), (0.9, 0.1)), "sensitivities"),
    (lambda: _mixture((0.0, 1.0), (0.9, False)), "probabilities"),
    (lambda: _mixture([[0.0], [True]], (0.9, 0.1)), "sensitivities"),
    (lambda: _mixture((0.0, 1.0), [np.array([0.9]), np.array([True])]), "probabilities"),
    (lambda: _mixture((0, np.True_), (0.9, 0.1)), "sensitivities"),
    (lambda: _pair((0.5, 0.5), (True, 0)), "q"),
    (lambda: Gaussian(1.0).delta_bounds([0.5, True]), "epsilon"),
    (lambda: Gaussian(1.0).epsilon_bounds((1e-5, True)), "delta"),
    (lambda: Gaussian(1.0).rdp([2, True]), "alpha"),
    (lambda: Gaussian(1.0).tradeoff([0.1, False]), "fpr"),
])
def test_a_boolean_inside_a_sequence_is_a_type_error_naming_the_parameter(make, name):
    with pytest.raises(TypeError, match=rf"{name} must hold real numbers, not booleans"):
        make()


def test_numbers_of_mixed_kinds_are_still_accepted():
    # ints, floats and numpy scalars mixed (no boolean) are numbers: the same mechanism as floats.
    m = _mixture((0, np.float64(1.0)), (np.int64(0), 1.0))
    assert m.sensitivities == (0.0, 1.0) and m.probabilities == (0.0, 1.0)
    lower, upper = Gaussian(1.0).delta_bounds(range(3))
    assert lower.shape == upper.shape == (3,)
