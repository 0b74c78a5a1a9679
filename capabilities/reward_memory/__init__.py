"""Reward memory: bounded recall before a Turn, verified ingest after it settles.

Provider-neutral: the core talks to :mod:`capabilities.providers` through the
provider protocol and never to a concrete store. Reached through the
``reward_memory`` entry point, never imported by hosts.
"""
