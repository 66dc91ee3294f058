"""Adapters to the tools DP practitioners already run; each imports its library only when used.

* :mod:`autoacct.integrations.dp_accounting`: ``from_dp_event`` and a dp_accounting
  ``PrivacyAccountant`` backed by autoacct.
"""
