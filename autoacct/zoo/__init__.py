"""The mechanism and transformer zoo."""

from autoacct.subsampling import PoissonSubsample, SampleWithoutReplacement, SampleWithReplacement
from autoacct.zoo.composite import GaussianSVT, LaplaceSVT, NoisyGD
from autoacct.zoo.custom import DiscretePair
from autoacct.zoo.discrete import Binomial, DiscreteGaussian, DiscreteLaplace, KaryRandomizedResponse
from autoacct.zoo.exponential import BinaryCountingExponential, ExponentialMechanism
from autoacct.zoo.mechanisms import ZCDP, ApproxDP, Gaussian, Laplace, PureDP, RandomizedResponse
from autoacct.zoo.transformers import ComposedMechanism, Composition

__all__ = ["ApproxDP", "BinaryCountingExponential", "Binomial", "ComposedMechanism", "Composition",
           "DiscreteGaussian", "DiscreteLaplace", "DiscretePair", "ExponentialMechanism", "Gaussian",
           "GaussianSVT", "KaryRandomizedResponse", "Laplace", "LaplaceSVT", "NoisyGD", "PoissonSubsample",
           "PureDP", "RandomizedResponse", "SampleWithReplacement", "SampleWithoutReplacement", "ZCDP"]
