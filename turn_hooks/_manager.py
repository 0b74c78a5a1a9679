"""The plugin-manager factory and the public description of what it loaded."""

from __future__ import annotations

import os
import sys
from typing import Any

import pluggy

from turn_hooks import hookspecs
from turn_hooks._names import (
    ENV_DISABLE_PLUGINS,
    ENV_LOAD_PLUGINS,
    ENV_PLUGINS,
    ENV_TRACE_PLUGINS,
    NAME,
)


def _names_from_env(variable: str) -> list[str]:
    return [name.strip() for name in os.environ.get(variable, "").split(",") if name.strip()]


class TurnHooksPluginManager(pluggy.PluginManager):
    """A pluggy manager that also remembers which plugins failed to load."""

    def __init__(self) -> None:
        super().__init__(NAME)
        self.load_failures: list[dict[str, str]] = []
        """``{"name", "reason_code"}`` per plugin left out; never a traceback or path."""
        self.distributions: dict[str, dict[str, str]] = {}
        """``{"name", "version"}`` of the distribution that declared each entry point."""


def _load_entry_points(pm: TurnHooksPluginManager, names: list[str] | None) -> None:
    import importlib

    from turn_hooks._discovery import entry_points

    for entry_point in entry_points(NAME):
        name = entry_point.name
        wanted = names is None or name in names
        if not wanted or pm.has_plugin(name) or pm.is_blocked(name):
            continue
        module_name, _, attribute = entry_point.value.partition(":")
        try:
            plugin = importlib.import_module(module_name.strip())
            for part in attribute.strip().split(".") if attribute.strip() else ():
                plugin = getattr(plugin, part)
            pm.register(plugin, name=name)
        except Exception:  # one broken plugin must not take the others down with it
            pm.load_failures.append({"name": name, "reason_code": "plugin_load_failed"})
            continue
        pm.distributions[name] = {
            "name": entry_point.distribution,
            "version": entry_point.version,
        }


def _register_named(pm: TurnHooksPluginManager, specs: list[str]) -> None:
    """Register each ``module:attribute`` plugin under that spec as its name."""
    import importlib

    for spec in specs:
        module_name, _, attribute = spec.partition(":")
        if pm.is_blocked(spec) or pm.has_plugin(spec):
            continue
        try:
            plugin = getattr(importlib.import_module(module_name), attribute or "plugin")
            pm.register(plugin, name=spec)
        except Exception:  # recorded, and the Turn goes on without it
            pm.load_failures.append({"name": spec, "reason_code": "plugin_load_failed"})


def _drop_invalid_plugins(pm: TurnHooksPluginManager) -> None:
    while True:
        try:
            pm.check_pending()
            return
        except pluggy.PluginValidationError as exc:
            name = pm.get_name(exc.plugin) or ""
            pm.unregister(exc.plugin)
            pm.load_failures.append({"name": name, "reason_code": "plugin_validation_failed"})


def make_plugin_manager(*, autoload: bool = True) -> TurnHooksPluginManager:
    """Return a new plugin manager with the hookspecs added and plugins loaded.

    With ``autoload`` the entry points of group ``turn_hooks`` are loaded, subject to
    ``TURN_HOOKS_LOAD_PLUGINS`` (unset: all; empty: none; ``a,b``: only those entry
    point names) and ``TURN_HOOKS_DISABLE_PLUGINS`` (names blocked first, so they are
    never imported). ``TURN_HOOKS_PLUGINS`` adds plugins by import path
    (``module:attribute``, comma-separated; the spec is the plugin's name), the way a
    conformance run injects its probe: an ordinary Turn imports none of them.
    ``TURN_HOOKS_TRACE_PLUGINS=1`` traces every hook call to stderr.
    A plugin that fails to import or implements an unknown hook is left out and
    recorded in ``load_failures``; the others still load. Nothing happens at import
    time; tests call this with ``autoload=False``.

    A manager made ahead by :func:`prebuild_plugin_manager` is returned instead, once,
    when nothing it was made from has changed since.
    """
    if autoload and _prebuilt:
        key, prebuilt = _prebuilt.pop()
        if key == _inputs_key():
            return prebuilt
    pm = TurnHooksPluginManager()
    pm.add_hookspecs(hookspecs)
    for name in _names_from_env(ENV_DISABLE_PLUGINS):
        pm.set_blocked(name)
    if autoload:
        allowed = None if ENV_LOAD_PLUGINS not in os.environ else _names_from_env(ENV_LOAD_PLUGINS)
        _load_entry_points(pm, allowed)
        _register_named(pm, _names_from_env(ENV_PLUGINS))
    _drop_invalid_plugins(pm)
    if os.environ.get(ENV_TRACE_PLUGINS) == "1":
        _enable_tracing(pm)
    return pm


_prebuilt: list[tuple[tuple[str | None, ...], TurnHooksPluginManager]] = []
"""At most one manager made ahead, with the key of what it was made from."""


def _inputs_key() -> tuple[str | None, ...]:
    # What a manager is made from: the plugin variables (unset and empty differ) and
    # the installed distributions (the entry-point cache's key, a stat per path entry).
    from turn_hooks._discovery import cache_key

    variables = (ENV_DISABLE_PLUGINS, ENV_LOAD_PLUGINS, ENV_PLUGINS, ENV_TRACE_PLUGINS)
    return (*(os.environ.get(name) for name in variables), cache_key(NAME))


def prebuild_plugin_manager() -> None:
    """Make the next :func:`make_plugin_manager` manager ahead of the call that asks.

    The resident hook server does this before it forks, so a hook call it serves
    finds its plugins imported, validated and registered. The next call takes that
    manager if the plugin variables (``TURN_HOOKS_LOAD_PLUGINS``,
    ``TURN_HOOKS_DISABLE_PLUGINS``, ``TURN_HOOKS_PLUGINS``, ``TURN_HOOKS_TRACE_PLUGINS``)
    and the installed distributions are what they were here; otherwise it makes its
    own, as it would have anyway. Either way a manager serves one caller only.
    """
    _prebuilt.clear()
    key = _inputs_key()
    _prebuilt.append((key, make_plugin_manager()))


def _enable_tracing(pm: pluggy.PluginManager) -> None:
    def before(hook_name: str, hook_impls: Any, kwargs: Any) -> None:
        names = ", ".join(impl.plugin_name for impl in hook_impls)
        print(f"turn-hooks trace: {hook_name} -> [{names}]", file=sys.stderr)

    def after(outcome: Any, hook_name: str, hook_impls: Any, kwargs: Any) -> None:
        failed = outcome.exception is not None
        print(f"turn-hooks trace: {hook_name} done (failed={failed})", file=sys.stderr)

    pm.add_hookcall_monitoring(before, after)


def plugin_info(pm: pluggy.PluginManager) -> list[dict[str, Any]]:
    """Describe each registered plugin: name, hooks, hook ids and distribution.

    Sorted by plugin name, the order the dispatchers call plugins in.
    """
    distributions = getattr(pm, "distributions", {})
    described = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None:  # a blocked name stays listed with no plugin object
            continue
        hooks = sorted(impl.name for impl in pm.get_hookcallers(plugin) or ())
        registrations = getattr(plugin, "registrations", None)
        hook_ids = {}
        if isinstance(registrations, dict):
            hook_ids = {
                hook: getattr(reg, "hook_id", None)
                for hook, reg in sorted(registrations.items())
                if hook in hooks
            }
        dist = distributions.get(name)
        described.append(
            {
                "name": name,
                "hooks": hooks,
                "hook_ids": hook_ids,
                "distribution": dict(dist) if dist else None,
            }
        )
    return sorted(described, key=lambda item: item["name"])
