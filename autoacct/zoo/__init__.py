"""The mechanism and transformer zoo."""

from autoacct.subsampling import (
    PoissonSubsample,
    RandomAllocation,
    SampleWithoutReplacement,
    SampleWithReplacement,
    TruncatedPoissonSubsample,
)
from autoacct.zoo.banded import BandedMatrixFactorization
from autoacct.zoo.composite import GaussianSVT, LaplaceSVT, NoisyGD, TreeAggregation
from autoacct.zoo.continuous import ContinuousPair
from autoacct.zoo.custom import DiscretePair
from autoacct.zoo.discrete import Binomial, DiscreteGaussian, DiscreteLaplace, KaryRandomizedResponse
from autoacct.zoo.exponential import BinaryCountingExponential, ExponentialMechanism
from autoacct.zoo.mechanisms import ZCDP, ApproxDP, Gaussian, Laplace, PureDP, RandomizedResponse
from autoacct.zoo.mixture import MixtureOfGaussians
from autoacct.zoo.selection import PermuteAndFlip
from autoacct.zoo.transformers import ComposedMechanism, Composition, Group, GroupMechanism
from autoacct.zoo.tuning import RepeatAndSelect

__all__ = ["ApproxDP", "BandedMatrixFactorization", "BinaryCountingExponential", "Binomial", "ComposedMechanism",
           "Composition", "ContinuousPair", "DiscreteGaussian", "DiscreteLaplace", "DiscretePair",
           "ExponentialMechanism", "Gaussian", "GaussianSVT", "Group", "GroupMechanism", "KaryRandomizedResponse",
           "Laplace", "LaplaceSVT", "MixtureOfGaussians", "NoisyGD", "PermuteAndFlip", "PoissonSubsample", "PureDP",
           "RandomAllocation", "RandomizedResponse", "RepeatAndSelect", "SampleWithReplacement",
           "SampleWithoutReplacement", "TreeAggregation", "TruncatedPoissonSubsample", "ZCDP"]
