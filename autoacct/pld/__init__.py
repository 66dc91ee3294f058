"""The FFT accountant for privacy-loss distributions (seeds 000 and 003).

Parts: ``grid`` (spacing and ranges), ``discretize`` (upper and lower discrete
PLDs), ``cumulants`` (tilts, windows and tail bounds), ``compose`` (FFT
composition with accounted wrap-around), ``levels`` (multi-level
self-composition), ``profiles`` (queries on a composed PLD, and Chernoff profiles) and
``accountant`` (orchestration, caching and refinement).
"""

from autoacct.pld.accountant import DEFAULT_TOL, FFTAccountant

__all__ = ["DEFAULT_TOL", "FFTAccountant"]
