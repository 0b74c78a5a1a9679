"""The experiment config, validated once when its binding is configured.

``configure --execute`` normalises the Goal's config and keeps the normal form in a
sidecar, beside the digest of the exact bytes it came from. A Turn reads the
config's bytes anyway (the binding's digest is checked against them), and uses the
kept form only when it was kept for those very bytes; anything else (no sidecar,
another digest, an unreadable or foreign document) is validated again, as it always
was. So a hand-edited config is caught by its digest, a hand-written binding still
works, and the answer never depends on the sidecar: it only saves the validation.

The sidecar follows the sidecar rules (0600, a lock beside it, atomic replace)
because :class:`sidecars.SidecarStore` writes it. Resolution only ever reads it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from capabilities.reward_memory.contract.config import normalise_config
from sidecars import SidecarStore, path_token
from turn_hooks import InvalidInputError, SidecarError, loads_bounded

SCHEMA = "turn_reward_memory_validated_config_v0"
DIRECTORY = "reward-memory-config"
NORMAL_FORM = 1
"""The revision of ``normalise_config``'s output. Bump it when that output changes,
so that forms kept by an older version are validated again rather than trusted."""


def validated_path(store: SidecarStore, config_path: str) -> Path:
    """``reward-memory-config/T("config:" + config_path).json``: one per config file.

    The prefix keeps the name from starting with a dot (``.loopx/...`` would be a
    hidden name, which the store refuses).
    """
    return store.path(DIRECTORY, path_token(f"config:{config_path.strip()}", "config") + ".json")


def keep_validated(
    store: SidecarStore, config_path: str, digest: str, config: dict[str, Any]
) -> bool:
    """Keep ``config``, the normal form of the bytes whose digest is ``digest``.

    Returns ``False`` when the sidecar cannot be written; nothing else changes then,
    as a Turn simply validates the config itself.
    """
    document = {
        "schema_version": SCHEMA,
        "normal_form": NORMAL_FORM,
        "config_path": config_path.strip(),
        "config_digest": digest,
        # As a string: the store sorts the keys of what it writes, and the order of
        # corpora and surfaces is part of every status and recall.
        "config_json": json.dumps(config, ensure_ascii=False, separators=(",", ":")),
    }
    try:
        store.write(validated_path(store, config_path), document)
    except SidecarError:
        return False
    return True


def validated_config(
    store: SidecarStore, config_path: str, raw: bytes, digest: str
) -> dict[str, Any]:
    """The normal form of ``raw`` (whose digest is ``digest``): kept, or validated now.

    Raises what :func:`normalise_config` raises (an ``InvalidInputError``) when the
    config is validated now and is invalid.
    """
    try:
        kept = store.read(validated_path(store, config_path))
    except SidecarError:  # unreadable, too open, a link: validate, as without it
        kept = None
    if (
        kept is not None
        and kept.get("schema_version") == SCHEMA
        and kept.get("normal_form") == NORMAL_FORM
        and kept.get("config_digest") == digest
        and isinstance(kept.get("config_json"), str)
    ):
        try:
            config = loads_bounded(kept["config_json"])
        except InvalidInputError:
            config = None
        if isinstance(config, dict):
            return config
    return normalise_config(loads_bounded(raw))
