"""The Opacus adapter, without torch: its methods are those Opacus's IAccountant documents, its
epsilon is autoacct's DP-SGD epsilon, its state round-trips, and its noise calibration meets the
budget. The registry test runs only where Opacus is importable."""

from __future__ import annotations

import importlib.util
import inspect
import math
from collections import OrderedDict

import pytest
from closed_forms import gaussian_eps_closed

from autoacct import dpsgd, dpsgd_schedule
from autoacct.integrations.opacus import MECHANISM, AutoacctAccountant, get_noise_multiplier

# Opacus's IAccountant (opacus/accountants/accountant.py, documented at opacus.ai/api/accounting):
# method -> (parameter names after self/cls, keyword-only names).
IACCOUNTANT = {
    "step": (["noise_multiplier", "sample_rate"], {"noise_multiplier", "sample_rate"}),
    "get_epsilon": (["delta"], set()),
    "__len__": ([], set()),
    "mechanism": ([], set()),
    "get_optimizer_hook_fn": (["sample_rate"], set()),
    "state_dict": (["destination"], set()),
    "load_state_dict": (["state_dict"], set()),
}
# opacus.accountants.utils.get_noise_multiplier: every parameter keyword-only, with these defaults.
GET_NOISE_MULTIPLIER = {"target_epsilon": inspect.Parameter.empty,
                        "target_delta": inspect.Parameter.empty,
                        "sample_rate": inspect.Parameter.empty, "epochs": None, "steps": None,
                        "accountant": "autoacct", "epsilon_tolerance": 0.01}


@pytest.mark.parametrize("name", sorted(IACCOUNTANT))
def test_methods_have_opacus_signatures(name: str):
    params = [p for p in inspect.signature(getattr(AutoacctAccountant, name)).parameters.values()
              if p.name not in ("self", "cls") and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    names, keyword_only = IACCOUNTANT[name]
    assert [p.name for p in params][:len(names)] == names
    assert all(p.default is not p.empty for p in params[len(names):])   # extras are optional
    assert {p.name for p in params if p.kind is p.KEYWORD_ONLY} >= keyword_only


def test_mechanism_is_a_classmethod_naming_autoacct():
    assert isinstance(inspect.getattr_static(AutoacctAccountant, "mechanism"), classmethod)
    assert AutoacctAccountant.mechanism() == "autoacct" == MECHANISM


def test_get_noise_multiplier_has_opacus_signature():
    params = inspect.signature(get_noise_multiplier).parameters
    named = {n: p for n, p in params.items() if p.kind is not p.VAR_KEYWORD}
    assert {n: p.default for n, p in named.items()} == GET_NOISE_MULTIPLIER
    assert all(p.kind is p.KEYWORD_ONLY for p in named.values())
    assert any(p.kind is p.VAR_KEYWORD for p in params.values())


def test_epsilon_is_autoacct_dpsgd():
    acc = AutoacctAccountant()
    for _ in range(200):
        acc.step(noise_multiplier=1.1, sample_rate=0.01)
    assert len(acc) == 200 and acc.history == [(1.1, 0.01, 200)]
    assert acc.get_epsilon(1e-5) == dpsgd(0.01, 1.1, 200).epsilon(1e-5)
    acc.step(noise_multiplier=2.0, sample_rate=0.02)
    assert acc.history == [(1.1, 0.01, 200), (2.0, 0.02, 1)]
    assert acc.get_epsilon(delta=1e-5) == dpsgd_schedule([(0.01, 1.1, 200), (0.02, 2.0, 1)]).epsilon(1e-5)


def test_history_may_be_assigned_as_opacus_does():
    acc = AutoacctAccountant()
    acc.history = [(1.1, 0.01, 300)]
    assert len(acc) == 300
    assert acc.get_epsilon(1e-5) == dpsgd(0.01, 1.1, 300).epsilon(1e-5)


def test_state_dict_round_trip():
    acc = AutoacctAccountant()
    for sigma in (1.0, 1.0, 1.5):
        acc.step(noise_multiplier=sigma, sample_rate=0.05)
    state = acc.state_dict()
    assert isinstance(state, OrderedDict) and state["mechanism"] == "autoacct"
    back = AutoacctAccountant()
    back.load_state_dict(state)
    assert back.history == acc.history and len(back) == 3
    assert back.get_epsilon(1e-5) == acc.get_epsilon(1e-5)
    into: dict = {}
    assert acc.state_dict(into) is into and into["history"] == acc.history


@pytest.mark.parametrize("state, match", [
    ({}, "empty"), ({"history": []}, "mechanism"), ({"mechanism": "autoacct"}, "history"),
    ({"history": [], "mechanism": "rdp"}, "'rdp'"),
    ({"history": [(1.0, 2.0, 3)], "mechanism": "autoacct"}, "sample_rate.*2.0"),
    ({"history": [(1.0, 0.5, -3)], "mechanism": "autoacct"}, "num_steps.*-3"),
])
def test_load_state_dict_rejects_bad_states(state, match):
    with pytest.raises(ValueError, match=match):
        AutoacctAccountant().load_state_dict(state)


def test_optimizer_hook_steps_with_the_optimizers_noise():
    class Optim:
        noise_multiplier = 1.3
        accumulated_iterations = 2

    acc = AutoacctAccountant()
    acc.get_optimizer_hook_fn(sample_rate=0.01)(Optim())
    assert acc.history == [(1.3, 0.02, 1)]


def test_get_noise_multiplier_meets_the_budget():
    sigma = get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.01, epochs=3)
    steps = int(3 / 0.01)            # Opacus's count: 300 (3 / 0.01 = 300.00000000000006)
    assert dpsgd(0.01, sigma, steps).epsilon(1e-5) <= 2.0
    assert dpsgd(0.01, sigma * (1 - 3e-3), steps).epsilon_bounds(1e-5)[0] > 2.0   # near-optimal


def test_get_noise_multiplier_with_full_batches_against_closed_form():
    # sample_rate 1: every step is a Gaussian; k steps are sqrt(k) / sigma-GDP.
    sigma = get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=1.0, steps=4)
    assert gaussian_eps_closed(2 / sigma, 1e-5) <= 1.0 < gaussian_eps_closed(2 / (sigma * (1 - 3e-3)), 1e-5)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(sample_rate=0.01), ValueError, "steps or epochs"),
    (dict(sample_rate=0.01, steps=10, epochs=1), ValueError, "steps or epochs"),
    (dict(sample_rate=1.5, steps=10), ValueError, "sample_rate.*1.5"),
    (dict(sample_rate=0.01, steps=-1), ValueError, "steps.*-1"),
    (dict(sample_rate=0.01, steps=2.5), ValueError, "steps.*2.5"),
    (dict(sample_rate=0.01, epochs=0.001), ValueError, "epochs"),
    (dict(sample_rate=0.01, steps=10, foo=1), TypeError, "foo"),
    (dict(sample_rate=0.01, steps=10, epsilon_tolerance=0.0), ValueError, "epsilon_tolerance"),
])
def test_get_noise_multiplier_rejects_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, **kwargs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(noise_multiplier=0.0, sample_rate=0.1), "noise_multiplier.*0.0"),
    (dict(noise_multiplier=1.0, sample_rate=-0.1), "sample_rate.*-0.1"),
])
def test_step_rejects_bad_input(kwargs, match):
    acc = AutoacctAccountant()
    with pytest.raises(ValueError, match=match):
        acc.step(**kwargs)
    assert len(acc) == 0
    with pytest.raises(ValueError, match="delta.*1.0"):
        acc.get_epsilon(1.0)


@pytest.mark.skipif(importlib.util.find_spec("opacus") is None, reason="opacus is not installed")
def test_registered_in_opacus():
    from opacus.accountants import IAccountant, create_accountant

    acc = create_accountant("autoacct")
    assert isinstance(acc, AutoacctAccountant) and isinstance(acc, IAccountant)
    acc.step(noise_multiplier=1.1, sample_rate=0.01)
    assert math.isfinite(acc.get_epsilon(1e-5))
