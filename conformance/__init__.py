"""Conformance checks that host maintainers run against their adapter.

The scenario catalogue, runner and opt-in pytest plugin arrive with the
conformance work (see the README); this package is part of the fixed layout.
"""
