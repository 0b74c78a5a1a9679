"""Conformance checks that host maintainers run against their adapter.

``turn-hooks conformance run`` runs the scenario catalogue (conformance/scenarios.py)
through a host driver (conformance/drivers.py) and writes a
``turn_hooks_host_coverage_v0`` report (conformance/runner.py), identified and
rendered for pasting by conformance/report.py; conformance/plugin.py is the opt-in
pytest plugin. Importing this package stays cheap: the CLI reads
:data:`HOSTS` while building its parser on every command.
"""

HOSTS = ("codex-cli", "codex-app", "claude-code", "gemini", "dsh", "generic")
"""The hosts ``conformance run --host`` knows."""
