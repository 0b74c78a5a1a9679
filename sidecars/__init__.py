"""Private JSON sidecar files: mode 0600, locked, atomically replaced, never via links."""

from sidecars.files import kind_problem, read_bounded, read_source, read_stream
from sidecars.naming import (
    AGENT_ENV,
    GOAL_ENV,
    REGISTRY_ENV,
    NamedBinding,
    config_home,
    default_registry,
    name_binding,
    name_registry,
    serves_directory,
)
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
from sidecars.validator import (
    VALIDATOR_FILE,
    command_words,
    read_validator,
    record_validator,
    validator_document,
)

__all__ = [
    "AGENT_ENV",
    "DEFAULT_LOCK_TIMEOUT",
    "DIR_MODE",
    "FILE_MODE",
    "GOAL_ENV",
    "REGISTRY_ENV",
    "SIDECAR_DIR",
    "VALIDATOR_FILE",
    "NamedBinding",
    "SidecarCheck",
    "SidecarStore",
    "SidecarTransaction",
    "atomic_write_text",
    "command_words",
    "config_home",
    "default_registry",
    "dumps",
    "goal_agent_parts",
    "goal_repository",
    "kind_problem",
    "lock_path",
    "name_binding",
    "name_registry",
    "path_token",
    "read_bounded",
    "read_registry",
    "read_source",
    "read_stream",
    "read_validator",
    "record_validator",
    "registry_goal",
    "require_goal_repository",
    "serves_directory",
    "sidecar_path",
    "sidecar_root",
    "validator_document",
]
