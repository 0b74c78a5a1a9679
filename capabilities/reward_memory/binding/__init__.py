"""The binding: which Goal enables reward memory for which Agent, and with what config.

The registry resolves a Goal/Agent to its status, normalised config and sidecars
(read-only, every Turn); enablement commits a verified binding (the ``configure``
command only). It sits on the contract and below everything that needs a binding.
"""
