"""The one project name and the environment variables derived from it."""

NAME = "turn_hooks"
"""Marker name, plugin-manager project name and entry-point group."""

ENV_LOAD_PLUGINS = "TURN_HOOKS_LOAD_PLUGINS"
ENV_DISABLE_PLUGINS = "TURN_HOOKS_DISABLE_PLUGINS"
ENV_TRACE_PLUGINS = "TURN_HOOKS_TRACE_PLUGINS"
ENV_HOOK_DEADLINE = "TURN_HOOKS_HOOK_DEADLINE_SECONDS"
"""Shortens the deadline of one hook call (never lengthens it)."""
ENV_PLUGINS = "TURN_HOOKS_PLUGINS"
"""Extra plugins to register by import path (``module:attribute``, comma-separated),
the way pytest's ``-p`` names one: conformance runs inject their probe with it."""
