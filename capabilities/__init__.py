"""Built-in capabilities: ordinary turn-hooks plugins.

They are reached through the ``turn_hooks`` entry points declared in this
distribution's ``pyproject.toml``, exactly like third-party plugins; hosts never
import this package.
"""
