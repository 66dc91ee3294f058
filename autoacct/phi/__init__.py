"""The characteristic-function accountant (Zhu, Dong and Wang 2022): upper bounds from phi."""

from autoacct.phi.accountant import (
                                     PhiAccountant,
                                     PhiAccuracyWarning,
                                     composed_log_phi,
                                     log_phi,
                                     phi_delta,
                                     phi_epsilon,
                                     phi_tradeoff,
)

__all__ = ["PhiAccountant", "PhiAccuracyWarning", "composed_log_phi", "log_phi", "phi_delta",
           "phi_epsilon", "phi_tradeoff"]
