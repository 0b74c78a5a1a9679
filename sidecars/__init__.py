"""Private JSON sidecar files: mode 0600, locked, atomically replaced, never via links."""

from sidecars.files import kind_problem, read_bounded, read_source, read_stream
from sidecars.paths import (
    SIDECAR_DIR,
    goal_agent_parts,
    lock_path,
    path_token,
    sidecar_path,
    sidecar_root,
)
from sidecars.registry import (
    goal_repository,
    read_registry,
    registry_goal,
    require_goal_repository,
)
from sidecars.store import (
    DEFAULT_LOCK_TIMEOUT,
    DIR_MODE,
    FILE_MODE,
    SidecarCheck,
    SidecarStore,
    SidecarTransaction,
    atomic_write_text,
    dumps,
)

__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "DIR_MODE",
    "FILE_MODE",
    "SIDECAR_DIR",
    "SidecarCheck",
    "SidecarStore",
    "SidecarTransaction",
    "atomic_write_text",
    "dumps",
    "goal_agent_parts",
    "goal_repository",
    "kind_problem",
    "lock_path",
    "path_token",
    "read_bounded",
    "read_registry",
    "read_source",
    "read_stream",
    "registry_goal",
    "require_goal_repository",
    "sidecar_path",
    "sidecar_root",
]
