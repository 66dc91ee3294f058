"""autodp-style class interface: a calibrator bound to one parameter of a mechanism class."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from autoacct.calibrators.calibrate import calibrate_result
from autoacct.calibrators.result import DEFAULT_RTOL, CalibrationResult
from autoacct.mechanism import Calibrator, Mechanism


class ParameterCalibrator(Calibrator):
    """Calibrates the parameter ``param_name`` of ``mechanism_class`` to a budget.

    ``ParameterCalibrator(Gaussian, "sigma")(epsilon=1.0, delta=1e-5)`` returns
    the mechanism M_{x_s} = mechanism_class(**fixed_params, param_name=x_s) where
    x_s is the value found by :func:`autoacct.calibrators.calibrate` (the one
    closest to the budget whose certified epsilon(delta) is within it).

    Parameters
    ----------
    mechanism_class:
        Any callable taking keyword arguments and returning a Mechanism (a
        mechanism class, or a function such as ``autoacct.dpsgd.dpsgd``).
    param_name:
        The keyword argument to calibrate; its values must be positive.
    fixed_params:
        The other keyword arguments, held fixed.
    bounds, integer, tol, rtol, via, increasing, x0:
        Passed to :func:`autoacct.calibrators.calibrate`.
    """

    def __init__(self, mechanism_class: Callable[..., Mechanism], param_name: str,
                 fixed_params: Mapping[str, Any] | None = None, *,
                 bounds: tuple[float | None, float | None] | None = None, integer: bool = False,
                 tol: float | None = None, rtol: float = DEFAULT_RTOL, via: str = "auto",
                 increasing: bool | None = None, x0: float | None = None) -> None:
        if not callable(mechanism_class):
            raise TypeError(f"mechanism_class must be callable, got {mechanism_class!r}")
        if not isinstance(param_name, str) or not param_name:
            raise TypeError(f"param_name must be a non-empty string, got {param_name!r}")
        fixed = dict(fixed_params or {})
        if param_name in fixed:
            raise ValueError(f"param_name {param_name!r} is also among fixed_params")
        self.mechanism_class = mechanism_class
        self.param_name = param_name
        self.fixed_params: Mapping[str, Any] = MappingProxyType(fixed)
        self._options: dict[str, Any] = dict(bounds=bounds, integer=integer, tol=tol, rtol=rtol,
                                              via=via, increasing=increasing, x0=x0)

    def __repr__(self) -> str:
        name = getattr(self.mechanism_class, "__name__", repr(self.mechanism_class))
        return f"ParameterCalibrator({name}, {self.param_name!r}, {dict(self.fixed_params)!r})"

    def factory(self, value: float) -> Mechanism:
        """The mechanism with ``param_name`` = value and the fixed parameters."""
        return self.mechanism_class(**self.fixed_params, **{self.param_name: value})

    def calibrate(self, epsilon: float, delta: float) -> CalibrationResult:
        """The full search result for the budget (epsilon, delta)."""
        return calibrate_result(self.factory, epsilon, delta, name=self.param_name, **self._options)

    def __call__(self, epsilon: float, delta: float) -> Mechanism:
        """The calibrated mechanism for the budget (epsilon > 0, delta in (0, 1))."""
        return self.calibrate(epsilon, delta).mechanism
