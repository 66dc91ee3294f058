"""Privacy-loss laws of dominating pairs: the input of the PLD and phi accountants."""

from autoacct.losses.base import (
                                  SIZING_TILTS,
                                  ContinuousLoss,
                                  DiscreteLoss,
                                  GaussianLoss,
                                  LaplaceLoss,
                                  PrivacyLoss,
                                  gaussian_delta,
                                  leaky_rr_loss,
                                  randomized_response_loss,
                                  segment_sums,
                                  sizing_cgf_of,
)

__all__ = ["SIZING_TILTS", "ContinuousLoss", "DiscreteLoss", "GaussianLoss", "LaplaceLoss",
           "PrivacyLoss", "gaussian_delta", "leaky_rr_loss", "randomized_response_loss",
           "segment_sums", "sizing_cgf_of"]
