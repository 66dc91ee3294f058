"""autoacct: tight, certified differential-privacy accounting.

Build mechanisms (``autoacct.zoo``), transform them (composition,
subsampling), and ask for their privacy as (epsilon, delta), Renyi DP, f-DP
tradeoff curves or privacy-loss distributions. Every epsilon or delta returned
is an upper bound on the truth; every tradeoff value a lower bound.
"""

from autoacct.dpsgd import dpsgd, dpsgd_schedule
from autoacct.errors import AccuracyWarning, InfeasibleBudgetError, RouteUnavailableError
from autoacct.mechanism import Calibrator, Mechanism, Neighboring, Transformer
from autoacct.zoo import (
                  ZCDP,
                  ApproxDP,
                  Composition,
                  Gaussian,
                  Laplace,
                  PoissonSubsample,
                  PureDP,
                  RandomizedResponse,
                  SampleWithoutReplacement,
                  SampleWithReplacement,
)

__version__ = "0.1.0"

__all__ = ["AccuracyWarning", "ApproxDP", "Calibrator", "Composition", "Gaussian", "Laplace",
           "Mechanism", "Neighboring", "PoissonSubsample", "PureDP", "RandomizedResponse",
           "InfeasibleBudgetError", "RouteUnavailableError", "SampleWithReplacement",
           "SampleWithoutReplacement", "Transformer",
           "ZCDP", "__version__", "dpsgd", "dpsgd_schedule"]
