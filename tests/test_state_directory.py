"""`doctor` fails a repository whose ``.local/turn-hooks`` the store refuses.

Every read and write of the store and the sidecars refuses a linked or widened tree
(the sidecar store's own checks), so a hook there recalls and learns nothing. Before
this check the binding looked whole and doctor said ok; now it names the cause and
the fix, and says nothing of where the link points.
"""

from __future__ import annotations

import json
import os

import pytest
from test_install_hosts import repo, turn_hooks  # noqa: F401 (fixture)

from sidecars import SidecarStore
from turn_hooks import SidecarError


@pytest.fixture
def project(request):
    """A scratch git repository after `turn-hooks init`."""
    return request.getfixturevalue("repo")


def binding_row(doctor):
    return next(check for check in doctor["checks"] if check["check"] == "binding")


def test_a_linked_state_directory_fails_doctor_with_the_fix(project, tmp_path):
    state = project / ".local" / "turn-hooks"
    elsewhere = tmp_path / "elsewhere"
    state.rename(elsewhere)
    state.symlink_to(elsewhere)

    code, doctor = turn_hooks(project, "doctor", home=tmp_path / "home")

    row = binding_row(doctor)
    assert (code, doctor["ok"], row["reason_code"]) == (2, False, "sidecar_symlink"), doctor
    assert "replace the link" in row["message"]
    assert str(tmp_path) not in json.dumps(doctor), "no path in the receipt"

    state.unlink()
    elsewhere.rename(state)
    code, doctor = turn_hooks(project, "doctor", home=tmp_path / "home")
    assert (code, binding_row(doctor)["ok"]) == (0, True), doctor


def test_a_widened_state_directory_fails_doctor_with_the_chmod(project, tmp_path):
    os.chmod(project / ".local" / "turn-hooks", 0o755)
    code, doctor = turn_hooks(project, "doctor", home=tmp_path / "home")
    row = binding_row(doctor)
    assert (code, row["reason_code"]) == (2, "sidecar_permission_widened"), doctor
    assert "chmod -R go-rwx .local/turn-hooks" in row["message"]


def test_a_file_in_place_of_the_state_directory_says_to_move_it_and_init(project, tmp_path):
    state = project / ".local" / "turn-hooks"
    state.rename(tmp_path / "aside")
    state.write_text("not a directory")
    code, doctor = turn_hooks(project, "doctor", home=tmp_path / "home")
    row = binding_row(doctor)
    assert code == 2 and row["ok"] is False, doctor
    assert "turn-hooks init" in row["message"]


def test_make_directory_makes_private_directories_and_refuses_a_link(tmp_path):
    root = tmp_path / "repo" / ".local" / "turn-hooks"
    store = SidecarStore(root)
    store.make_directory(root / "incoming" / "deeper")
    for directory in (root, root / "incoming", root / "incoming" / "deeper"):
        assert (directory.stat().st_mode & 0o777) == 0o700
    (root / "linked").symlink_to(tmp_path)
    with pytest.raises(SidecarError) as raised:
        store.make_directory(root / "linked" / "below")
    assert raised.value.reason_code == "sidecar_symlink"
    assert not (tmp_path / "below").exists(), "nothing made through the link"


def test_a_fifo_in_place_of_the_embedded_store_fails_doctor(project, tmp_path):
    store = project / ".local" / "turn-hooks" / "memory.sqlite3"
    if store.exists():
        store.unlink()
    os.mkfifo(store)
    code, doctor = turn_hooks(project, "doctor", home=tmp_path / "home")
    row = binding_row(doctor)
    assert (code, row["ok"]) == (2, False), doctor
    assert "FIFO" in row["message"]
    # It names the one file to move, not the directory that holds the memories.
    assert ".local/turn-hooks/memory.sqlite3" in row["message"]
    assert "not the directory" in row["message"]


def test_a_widened_store_file_is_named_not_a_directory(project, tmp_path):
    store = project / ".local" / "turn-hooks" / "memory.sqlite3"
    if not store.exists():
        store.write_bytes(b"")
    os.chmod(store, 0o644)
    code, doctor = turn_hooks(project, "doctor", home=tmp_path / "home")
    row = binding_row(doctor)
    assert (code, row["reason_code"]) == (2, "sidecar_permission_widened"), doctor
    assert "directory" not in row["message"].split(";")[0], row["message"]
    assert "chmod 600 .local/turn-hooks/memory.sqlite3" in row["message"]


def test_a_linked_store_file_is_named_not_its_directories(project, tmp_path):
    store = project / ".local" / "turn-hooks" / "memory.sqlite3"
    if store.exists():
        store.unlink()
    store.symlink_to(tmp_path / "elsewhere.sqlite3")
    code, doctor = turn_hooks(project, "doctor", home=tmp_path / "home")
    row = binding_row(doctor)
    assert (code, row["reason_code"]) == (2, "sidecar_symlink"), doctor
    assert row["message"].startswith(".local/turn-hooks/memory.sqlite3 is a symbolic link")
    assert str(tmp_path) not in json.dumps(doctor)
