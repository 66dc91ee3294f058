"""autoacct: tight, certified differential-privacy accounting.

Build mechanisms (``autoacct.zoo``), transform them (composition,
subsampling), and ask for their privacy as (epsilon, delta), Renyi DP, f-DP
tradeoff curves or privacy-loss distributions. Every epsilon or delta returned
is an upper bound on the truth; every tradeoff value a lower bound.

The subpackages are attributes of the package (``autoacct.calibrators.calibrate``);
``autoacct.plotting`` and ``autoacct.cli`` load on first use (they import matplotlib
and argparse, which a plain ``import autoacct`` does not need).
"""

import importlib

from autoacct import calibrators, converters, losses, phi, pld, routes, subsampling, zoo
from autoacct.accountant import Accountant
from autoacct.dpsgd import dpsgd, dpsgd_schedule
from autoacct.errors import AccuracyWarning, BudgetWarning, InfeasibleBudgetError, RouteUnavailableError
from autoacct.limits import limits, set_limits
from autoacct.mechanism import Calibrator, Mechanism, Neighboring, Transformer
from autoacct.statement import PrivacyStatement, statement
from autoacct.zoo import (
    ZCDP,
    ApproxDP,
    BandedMatrixFactorization,
    Composition,
    Gaussian,
    Laplace,
    PoissonSubsample,
    PureDP,
    RandomAllocation,
    RandomizedResponse,
    SampleWithoutReplacement,
    SampleWithReplacement,
)

__version__ = "0.1.0"

_LAZY = ("plotting", "cli")


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return importlib.import_module(f"autoacct.{name}")
    raise AttributeError(f"module 'autoacct' has no attribute {name!r}")


__all__ = ["ZCDP", "AccuracyWarning", "Accountant", "ApproxDP", "BandedMatrixFactorization", "BudgetWarning",
           "Calibrator", "Composition", "Gaussian", "InfeasibleBudgetError", "Laplace", "Mechanism", "Neighboring",
           "PoissonSubsample", "PrivacyStatement", "PureDP", "RandomAllocation", "RandomizedResponse",
           "RouteUnavailableError", "SampleWithReplacement", "SampleWithoutReplacement", "Transformer",
           "__version__", "calibrators", "converters", "dpsgd", "dpsgd_schedule", "limits", "losses",
           "phi", "pld", "routes", "set_limits", "statement", "subsampling", "zoo"]
