"""The one project name and the environment variables derived from it."""

NAME = "turn_hooks"
"""Marker name, plugin-manager project name and entry-point group."""

ENV_LOAD_PLUGINS = "TURN_HOOKS_LOAD_PLUGINS"
ENV_DISABLE_PLUGINS = "TURN_HOOKS_DISABLE_PLUGINS"
ENV_TRACE_PLUGINS = "TURN_HOOKS_TRACE_PLUGINS"
