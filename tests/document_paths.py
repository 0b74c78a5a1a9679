"""Places in a JSON document, for tests that change one place at a time."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

Path = tuple[str | int, ...]


def paths(document: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every place in ``document``, the root ``()`` first, then depth first."""
    yield prefix
    if isinstance(document, dict):
        for key, value in document.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from paths(value, (*prefix, index))


def replaced(document: Any, path: Path, value: Any) -> Any:
    """A copy of ``document`` with ``value`` at ``path`` (``value`` itself at the root)."""
    if not path:
        return value
    copied = copy.deepcopy(document)
    target = copied
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return copied
