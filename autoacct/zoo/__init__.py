"""The mechanism and transformer zoo."""

from autoacct.subsampling import PoissonSubsample, SampleWithoutReplacement, SampleWithReplacement
from autoacct.zoo.composite import GaussianSVT, LaplaceSVT, NoisyGD
from autoacct.zoo.discrete import Binomial, DiscreteGaussian, DiscreteLaplace
from autoacct.zoo.exponential import BinaryCountingExponential, ExponentialMechanism
from autoacct.zoo.mechanisms import ZCDP, ApproxDP, Gaussian, Laplace, PureDP, RandomizedResponse
from autoacct.zoo.transformers import ComposedMechanism, Composition
from autoacct.zoo.tuning import RepeatAndSelect

__all__ = ["ApproxDP", "BinaryCountingExponential", "Binomial", "ComposedMechanism", "Composition",
           "DiscreteGaussian", "DiscreteLaplace", "ExponentialMechanism", "Gaussian", "GaussianSVT",
           "Laplace", "LaplaceSVT", "NoisyGD", "PoissonSubsample", "PureDP", "RandomizedResponse",
           "RepeatAndSelect", "SampleWithReplacement", "SampleWithoutReplacement", "ZCDP"]
