"""Subsampling: run a mechanism on a random sample of the dataset."""

from autoacct.subsampling.mechanisms import (
                                             PoissonSubsample,
                                             PoissonSubsampledMechanism,
                                             SampledWithoutReplacementMechanism,
                                             SampledWithReplacementMechanism,
                                             SampleWithoutReplacement,
                                             SampleWithReplacement,
                                             SubsampledMechanism,
)

__all__ = ["PoissonSubsample", "PoissonSubsampledMechanism", "SampleWithReplacement",
           "SampleWithoutReplacement", "SampledWithReplacementMechanism",
           "SampledWithoutReplacementMechanism", "SubsampledMechanism"]
