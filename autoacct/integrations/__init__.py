"""Adapters that let other libraries account with autoacct (each optional, imported on demand).

* :mod:`autoacct.integrations.dp_accounting`: ``from_dp_event`` and ``AutoacctAccountant``,
  a dp_accounting ``PrivacyAccountant`` backed by autoacct (needs dp-accounting).
* :mod:`autoacct.integrations.opacus`: an accountant with Opacus's interface
  (``AutoacctAccountant``) and Opacus's ``get_noise_multiplier``. Importing it needs
  neither Opacus nor torch; when Opacus is importable, the accountant is registered
  in Opacus's accountant registry as ``"autoacct"``.
"""

__all__: list[str] = []
