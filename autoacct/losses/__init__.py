"""Privacy-loss laws of dominating pairs: the input of the PLD and phi accountants.

* :mod:`~autoacct.losses.base`: the law interface (cell masses under P and Q, exact
  profile, moments), the closed-form law of the Gaussian and finite atom laws;
* :mod:`~autoacct.losses.laplace`: the closed-form law of the Laplace;
* :mod:`~autoacct.losses.binary`: randomized response and the leaky randomized response,
  their profiles in closed form;
* :mod:`~autoacct.losses.atoms`: large and infinite discrete supports held atom by atom,
  truncated and merged soundly, and the bounded-range envelope;
* :mod:`~autoacct.losses.mixture`: a mixture of Gaussians against one Gaussian (monotone loss).
"""

from autoacct.losses.base import (
    ATOM_MASS_ULPS,
    PROFILE_REL,
    SIZING_TILTS,
    ContinuousLoss,
    DiscreteLoss,
    GaussianLoss,
    PrivacyLoss,
    gaussian_delta,
    gaussian_delta_bounds,
    gaussian_delta_with_error,
    segment_sums,
    sizing_cgf_of,
)
from autoacct.losses.binary import (
    LeakyRandomizedResponseLoss,
    RandomizedResponseLoss,
    leaky_rr_loss,
    randomized_response_loss,
)
from autoacct.losses.laplace import LaplaceLoss

__all__ = ["ATOM_MASS_ULPS", "PROFILE_REL", "SIZING_TILTS", "ContinuousLoss", "DiscreteLoss", "GaussianLoss",
           "LaplaceLoss", "LeakyRandomizedResponseLoss", "PrivacyLoss", "RandomizedResponseLoss",
           "gaussian_delta", "gaussian_delta_bounds", "gaussian_delta_with_error", "leaky_rr_loss",
           "randomized_response_loss", "segment_sums", "sizing_cgf_of"]
