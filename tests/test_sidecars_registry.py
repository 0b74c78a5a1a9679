"""The one registry-to-repository lookup hosts and capabilities share (sidecars.registry)."""

from __future__ import annotations

import json

import pytest

from sidecars import goal_repository, read_registry, registry_goal
from turn_hooks import InvalidInputError


def write(tmp_path, document):
    path = tmp_path / "registry.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


REGISTRY = {
    "goals": [
        "not a goal",
        {"id": "g-1", "repo": "/work/one"},
        {"id": "g-2"},
        {"id": "g-1", "repo": "/work/shadowed"},
        {"id": "g-3", "repo": 7},
    ]
}


def test_the_first_entry_of_a_goal_names_its_repository(tmp_path):
    path = write(tmp_path, REGISTRY)
    assert goal_repository(path, "g-1") == goal_repository(str(path), "g-1")
    assert str(goal_repository(path, "g-1")) == "/work/one"
    assert registry_goal(read_registry(path), "g-2") == {"id": "g-2"}


@pytest.mark.parametrize("goal_id", ["g-2", "g-3", "absent", None, ""])
def test_no_repository_is_no_answer(tmp_path, goal_id):
    assert goal_repository(write(tmp_path, REGISTRY), goal_id) is None


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        (None, "registry_unreadable"),
        ("{", "registry_invalid"),
        ('{"goals": 3}', "registry_invalid"),
        ("[]", "registry_invalid"),
    ],
)
def test_a_registry_that_is_not_one_is_a_typed_error_and_no_repository(tmp_path, document, reason):
    path = tmp_path / "absent.json" if document is None else write(tmp_path, document)
    with pytest.raises(InvalidInputError) as caught:
        read_registry(path)
    assert caught.value.reason_code == reason
    assert caught.value.message.startswith("registry ")
    assert goal_repository(path, "g-1") is None
    assert goal_repository(None, "g-1") is None
