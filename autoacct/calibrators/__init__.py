"""Calibrators: parameter values that meet a privacy budget.

* :func:`calibrate` (and :func:`calibrate_result`): generic search over one
  parameter of a mechanism family, certified within budget and within a
  relative ``rtol`` of the optimum.
* :func:`calibrate_gaussian`: the exact analytic Gaussian (Balle and Wang 2018).
* :func:`calibrate_dpsgd`, :func:`calibrate_dpsgd_steps`: DP-SGD noise
  multiplier and number of steps.
* :class:`ParameterCalibrator`: autodp-style class interface over the same search.
"""

from autoacct.calibrators.calibrate import calibrate, calibrate_result
from autoacct.calibrators.dpsgd import calibrate_dpsgd, calibrate_dpsgd_result, calibrate_dpsgd_steps
from autoacct.calibrators.gaussian import calibrate_gaussian, gdp_mu
from autoacct.calibrators.parameter import ParameterCalibrator
from autoacct.calibrators.result import DEFAULT_RTOL, CalibrationResult
from autoacct.errors import InfeasibleBudgetError

__all__ = ["DEFAULT_RTOL", "CalibrationResult", "InfeasibleBudgetError", "ParameterCalibrator",
           "calibrate", "calibrate_dpsgd", "calibrate_dpsgd_result", "calibrate_dpsgd_steps",
           "calibrate_gaussian", "calibrate_result", "gdp_mu"]
