"""The ``reward_memory`` entry point: the capability as a turn-hooks plugin.

Importing this module is cheap: the core is imported inside the hooks and command
handlers that need it.
"""

from __future__ import annotations

from typing import Any

from turn_hooks import hookimpl


class RewardMemoryPlugin:
    """Reward memory's hooks and commands."""

    @hookimpl
    def register_commands(self, commands: Any) -> None:
        """Add ``turn-hooks reward-memory ...``."""
        from capabilities.reward_memory.commands import register

        register(commands)


plugin = RewardMemoryPlugin()
"""The entry-point object (``turn_hooks`` group, name ``reward_memory``)."""
