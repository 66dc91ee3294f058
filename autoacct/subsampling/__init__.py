"""Subsampling: run a mechanism on a random sample of the dataset.

One module per scheme, each holding its dominating pair's laws, its mechanism,
its transformer and its Renyi-DP bound:

* :mod:`~autoacct.subsampling.poisson`: Poisson sampling, add/remove relation;
* :mod:`~autoacct.subsampling.without_replacement`: fixed-size samples, replace-one;
* :mod:`~autoacct.subsampling.with_replacement`: draws with replacement, replace-one;
* :mod:`~autoacct.subsampling.truncated`: Poisson samples cut to a maximum size, add/remove;
* :mod:`~autoacct.subsampling.allocation`: random allocation (balls-in-bins), each record in
  exactly one step of an epoch, add/remove.

Shared parts: :mod:`~autoacct.subsampling.base` (the mechanism and transformer
bases, the RDP table of general bases), :mod:`~autoacct.subsampling.represented`
(cell masses at transformed edges), :mod:`~autoacct.subsampling.numerics`
(log-space sums with error bounds), :mod:`~autoacct.subsampling.gaussian_rdp`
(the exact RDP of the subsampled Gaussian) and :mod:`~autoacct.subsampling.schemes`
(the DP-SGD sampling schemes by name). A new scheme is a module here and, if
DP-SGD can use it, an entry in :data:`~autoacct.subsampling.schemes.SCHEMES`.
"""

from autoacct.subsampling.allocation import RandomAllocatedMechanism, RandomAllocation
from autoacct.subsampling.base import SubsampledMechanism
from autoacct.subsampling.poisson import PoissonSubsample, PoissonSubsampledMechanism
from autoacct.subsampling.truncated import TruncatedPoissonSubsample, TruncatedPoissonSubsampledMechanism
from autoacct.subsampling.with_replacement import SampledWithReplacementMechanism, SampleWithReplacement
from autoacct.subsampling.without_replacement import SampledWithoutReplacementMechanism, SampleWithoutReplacement

__all__ = ["PoissonSubsample", "PoissonSubsampledMechanism", "RandomAllocatedMechanism",
           "RandomAllocation", "SampleWithReplacement",
           "SampleWithoutReplacement", "SampledWithReplacementMechanism",
           "SampledWithoutReplacementMechanism", "SubsampledMechanism", "TruncatedPoissonSubsample",
           "TruncatedPoissonSubsampledMechanism"]
