"""Opacus's accountant interface, answered by autoacct's certified accountant.

Opacus (``opacus.accountants``) accounts a training run through an ``IAccountant``:
``step(noise_multiplier=, sample_rate=)`` after each optimizer step, ``get_epsilon(delta)``
when asked, ``len()`` the number of steps, ``history`` a list of (noise_multiplier,
sample_rate, num_steps) tuples, ``state_dict()`` / ``load_state_dict()`` for checkpoints
and the class method ``mechanism()`` naming the accountant. :class:`AutoacctAccountant`
implements that interface: each step is one DP-SGD step with Poisson sampling under
add/remove neighbouring (``PoissonSubsample(sample_rate)(Gaussian(noise_multiplier))``,
what Opacus's RDP and PRV accountants assume), and ``get_epsilon`` is the certified
epsilon of :class:`autoacct.Accountant` for the same history, which equals
``autoacct.dpsgd_schedule(...)`` of the phases and, for one phase, ``autoacct.dpsgd``.

Opacus is optional: without it the class is a plain class with the same methods. When
Opacus is importable it subclasses ``opacus.accountants.IAccountant`` and is registered
under the name ``"autoacct"`` in Opacus's registry (``register_accountant``, in the
Opacus versions that have one), so that ``PrivacyEngine(accountant="autoacct")`` uses it.

:func:`get_noise_multiplier` has the signature of Opacus's
``opacus.accountants.utils.get_noise_multiplier`` and counts steps as it does,
``int(epochs / sample_rate)``; with ``accountant="autoacct"`` it returns autoacct's
calibrated noise multiplier (certified within 0.2% of the smallest one meeting the budget).
"""

from __future__ import annotations

import importlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from autoacct import _validation as check
from autoacct.accountant import Accountant
from autoacct.calibrators.dpsgd import calibrate_dpsgd

__all__ = ["MECHANISM", "REGISTERED", "AutoacctAccountant", "get_noise_multiplier", "register"]

#: The accountant's name in Opacus (``PrivacyEngine(accountant=MECHANISM)``).
MECHANISM = "autoacct"


def _opacus_accountants() -> Any:
    """``opacus.accountants``, or None when Opacus (or torch) cannot be imported."""
    try:
        return importlib.import_module("opacus.accountants")
    except ImportError:
        return None


_OPACUS = _opacus_accountants()

if TYPE_CHECKING or _OPACUS is None:
    _Base: type = object
else:
    _Base = _OPACUS.IAccountant

History = list[tuple[float, float, int]]


def _phase(noise_multiplier: Any, sample_rate: Any, num_steps: Any = 1) -> tuple[float, float, int]:
    sigma = check.real("noise_multiplier", noise_multiplier, low=0.0, low_open=True)
    q = check.real("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True)
    return sigma, q, check.bounded_int("num_steps", num_steps)


class AutoacctAccountant(_Base):
    """Opacus's accountant interface (``IAccountant``) on autoacct's certified accountant.

    ``history`` holds (noise_multiplier, sample_rate, num_steps) tuples, consecutive
    steps with the same noise multiplier and sample rate merged, as in Opacus's RDP
    and PRV accountants; it may be assigned (Opacus's own calibration does so).
    """

    def __init__(self) -> None:
        self.history: History = []
        self._ledger: tuple[tuple[tuple[float, float, int], ...], Accountant] | None = None

    @classmethod
    def mechanism(cls) -> str:
        """The accountant's name in Opacus: ``"autoacct"``."""
        return MECHANISM

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one DP-SGD step: noise multiplier sigma > 0, Poisson sample rate q in (0, 1]."""
        sigma, q, _ = _phase(noise_multiplier, sample_rate)
        if self.history and self.history[-1][:2] == (sigma, q):
            last = self.history[-1]
            self.history[-1] = (last[0], last[1], last[2] + 1)
        else:
            self.history.append((sigma, q, 1))

    def __len__(self) -> int:
        """Number of steps recorded."""
        return sum(int(n) for _, _, n in self.history)

    def ledger(self) -> Accountant:
        """The :class:`autoacct.Accountant` of ``history`` (rebuilt when the history changed)."""
        key = tuple(_phase(*entry) for entry in self.history)
        if self._ledger is None or self._ledger[0] != key:
            acc = Accountant()
            for sigma, q, n in key:
                acc.step_dpsgd(sigma, q, n)
            self._ledger = (key, acc)
        return self._ledger[1]

    def get_epsilon(self, delta: float, *, tol: float | None = None) -> float:
        """Certified upper bound on the epsilon(delta) of the steps so far, delta in (0, 1).

        ``tol``: relative accuracy of autoacct's accountant (default 1e-3).
        """
        check.real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
        return float(self.ledger().epsilon(delta, tol=tol))

    def get_optimizer_hook_fn(self, sample_rate: float) -> Callable[[Any], None]:
        """A hook for Opacus's ``DPOptimizer`` recording one step per optimizer step.

        The step's sample rate is ``sample_rate`` times the optimizer's number of
        accumulated iterations, and its noise multiplier the optimizer's.
        """
        def hook_fn(optim: Any) -> None:
            self.step(noise_multiplier=optim.noise_multiplier,
                      sample_rate=sample_rate * optim.accumulated_iterations)
        return hook_fn

    def state_dict(self, destination: Any = None) -> Any:
        """The accountant's state: ``history`` and ``mechanism`` (into ``destination`` if given)."""
        if destination is None:
            destination = OrderedDict()
        destination["history"] = list(self.history)
        destination["mechanism"] = MECHANISM
        return destination

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore a state written by :meth:`state_dict` (ValueError for any other)."""
        if not state_dict:
            raise ValueError(f"state_dict is None or empty and cannot be loaded, got {state_dict!r}")
        for key in ("history", "mechanism"):
            if key not in state_dict:
                raise ValueError(f"state_dict has no key {key!r} and cannot be loaded")
        if state_dict["mechanism"] != MECHANISM:
            raise ValueError(f"state_dict of mechanism {state_dict['mechanism']!r} cannot be loaded "
                             f"into an accountant of mechanism {MECHANISM!r}")
        history = state_dict["history"]
        if not isinstance(history, (list, tuple)):
            raise TypeError(f"state_dict['history'] must be a list of (noise_multiplier, "
                            f"sample_rate, num_steps), got {type(history).__name__}")
        for i, entry in enumerate(history):
            if not isinstance(entry, (list, tuple)) or len(entry) != 3:
                raise ValueError(f"state_dict['history'][{i}] must be (noise_multiplier, "
                                 f"sample_rate, num_steps), got {entry!r}")
        self.history = [_phase(*entry) for entry in history]
        self._ledger = None


def get_noise_multiplier(*, target_epsilon: float, target_delta: float, sample_rate: float,
                         epochs: float | None = None, steps: int | None = None,
                         accountant: str = MECHANISM, epsilon_tolerance: float = 0.01,
                         **kwargs: Any) -> float:
    """The noise multiplier that meets (target_epsilon, target_delta), with Opacus's signature.

    The run has Poisson sample rate q = ``sample_rate`` and ``steps`` steps, or
    ``int(epochs / sample_rate)`` steps as Opacus counts them. With
    ``accountant="autoacct"`` the result is :func:`autoacct.calibrators.calibrate_dpsgd`'s:
    its certified epsilon(target_delta) is at most ``target_epsilon`` and it is within
    0.2% of the smallest noise multiplier whose true epsilon meets the budget, which is
    finer than Opacus's ``epsilon_tolerance`` (checked, then not needed). ``kwargs``
    may hold ``tol``, the accountant's relative accuracy. Any other ``accountant`` is
    handed to Opacus's own ``get_noise_multiplier`` (ValueError without Opacus).
    """
    if accountant != MECHANISM:
        if _OPACUS is None:
            raise ValueError(f"accountant must be {MECHANISM!r} (Opacus is not importable), "
                             f"got {accountant!r}")
        utils = importlib.import_module("opacus.accountants.utils")
        return float(utils.get_noise_multiplier(
            target_epsilon=target_epsilon, target_delta=target_delta, sample_rate=sample_rate,
            epochs=epochs, steps=steps, accountant=accountant,
            epsilon_tolerance=epsilon_tolerance, **kwargs))
    unknown = set(kwargs) - {"tol"}
    if unknown:
        raise TypeError(f"get_noise_multiplier got unexpected keyword arguments {sorted(unknown)}")
    check.real("epsilon_tolerance", epsilon_tolerance, low=0.0, low_open=True)
    q = check.real("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True)
    if (steps is None) == (epochs is None):
        raise ValueError(f"give either steps or epochs, got steps={steps!r}, epochs={epochs!r}")
    if steps is None:
        e = check.real("epochs", epochs, low=0.0, low_open=True)
        k = int(e / q)  # Opacus's count, in floating point
        if k < 1:
            raise ValueError(f"epochs={epochs!r} at sample_rate={sample_rate!r} is int(epochs / "
                             f"sample_rate) = {k} steps: at least one is needed")
    else:
        k = check.bounded_int("steps", steps)
    return calibrate_dpsgd(target_epsilon, target_delta, sample_rate=q, steps=k,
                           tol=kwargs.get("tol"))


def register() -> bool:
    """Register :class:`AutoacctAccountant` in Opacus's registry as ``"autoacct"``.

    Returns whether it is registered: False when Opacus is not importable or has no
    ``register_accountant`` (versions before the registry).
    """
    if _OPACUS is None or not hasattr(_OPACUS, "register_accountant"):
        return False
    try:
        _OPACUS.register_accountant(MECHANISM, AutoacctAccountant)
    except ValueError:
        # The name is taken (this module reloaded, or someone else's "autoacct"): ours or not?
        return isinstance(_OPACUS.create_accountant(MECHANISM), AutoacctAccountant)
    return True


#: Whether the accountant is registered in Opacus (False without Opacus).
REGISTERED = register()
