"""The FFT accountant for privacy-loss distributions (Koskela, Jalko and Honkela 2020;
Koskela, Jalko, Prediger and Honkela 2021; connect-the-dots of Doroshenko et al. 2022).

Parts, in the order data flows through them: ``components`` (a discretised law and its
count), ``grid`` (spacing and ranges), ``discretize`` (upper and lower discrete PLDs),
``cumulants`` (component sets, tilts, windows and tail bounds), ``compose`` (FFT
composition with accounted wrap-around), ``levels`` (multi-level self-composition),
``profiles`` (queries on a composed PLD), ``chernoff`` (profiles from cumulants alone),
``query`` (what a query asks: aim and budgets) and ``accountant`` (orchestration, caching and refinement).
"""

from autoacct.pld.accountant import DEFAULT_TOL, FFTAccountant

__all__ = ["DEFAULT_TOL", "FFTAccountant"]
