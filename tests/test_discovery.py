"""Entry-point discovery without importlib.metadata, and the cache that makes it a stat."""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys
from pathlib import Path

import pytest

from turn_hooks import _discovery
from turn_hooks._discovery import EntryPoint, cache_key, cache_path, entry_points, scan

GROUP = "turn_hooks"


@pytest.fixture
def site(tmp_path, monkeypatch):
    """An empty site directory alone on ``sys.path``, and a private cache directory."""
    directory = tmp_path / "site"
    directory.mkdir()
    monkeypatch.setattr(sys, "path", [str(directory)])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return directory


def distribution(site, folder, entry_points_txt, metadata="", metadata_file="METADATA"):
    info = site / folder
    info.mkdir()
    (info / "entry_points.txt").write_text(entry_points_txt)
    if metadata:
        (info / metadata_file).write_text(metadata)
    return info


def test_scan_matches_importlib_metadata_on_this_interpreter():
    """Same names, values and precedence as the standard library, on the real venv."""
    expected = [(ep.name, ep.value) for ep in importlib.metadata.entry_points(group=GROUP)]
    assert [(ep.name, ep.value) for ep in scan(GROUP)] == expected
    [ours] = [ep for ep in scan(GROUP) if ep.name == "reward_memory"]
    assert (ours.distribution, ours.version) == (
        "turn-hooks",
        importlib.metadata.version("turn-hooks"),
    )


def test_parsing_keeps_order_drops_extras_comments_and_other_groups(site):
    distribution(
        site,
        "alpha_pkg-2.0.dist-info",
        "[console_scripts]\nx = nope:main\n\n# a comment\n[turn_hooks]\n; another\n"
        "zeta = alpha.z:plugin [extra]\nalpha = alpha.a:plugin\n[other]\ny = nope:y\n",
        "Metadata-Version: 2.1\nName: Alpha.Pkg\nVersion: 2.0\n\nName: not-a-header\n",
    )
    distribution(site, "plain-1.0.dist-info", "[console_scripts]\np = plain:main\n")
    distribution(
        site, "bodied-3.0.dist-info", "[turn_hooks]\nb = b:plugin\n", "Name: bodied\n\nVersion: 9\n"
    )
    assert scan(GROUP) == [
        EntryPoint("zeta", "alpha.z:plugin", "Alpha.Pkg", "2.0"),
        EntryPoint("alpha", "alpha.a:plugin", "Alpha.Pkg", "2.0"),
        EntryPoint("b", "b:plugin", "bodied", ""),  # a "header" in the body is not one
    ]


def test_first_distribution_of_a_name_wins_across_path_entries(site, tmp_path, monkeypatch):
    later = tmp_path / "later"
    later.mkdir()
    monkeypatch.setattr(sys, "path", [str(site), str(tmp_path / "missing"), str(later)])
    distribution(site, "dup_pkg-2.0.dist-info", "[turn_hooks]\nnew = new:plugin\n")
    distribution(later, "Dup.Pkg-1.0.dist-info", "[turn_hooks]\nold = old:plugin\n")
    distribution(
        later,
        "legacy.egg-info",
        "[turn_hooks]\nlegacy = legacy:plugin\n",
        "Name: legacy\nVersion: 0.1\n",
        metadata_file="PKG-INFO",
    )
    assert entry_points(GROUP) == [
        EntryPoint("new", "new:plugin", "dup_pkg", ""),
        EntryPoint("legacy", "legacy:plugin", "legacy", "0.1"),
    ]


def test_unreadable_or_hostile_entry_point_files_are_passed_over(site):
    fifo = site / "fifo-1.0.dist-info"
    fifo.mkdir()
    os.mkfifo(fifo / "entry_points.txt")  # must not block the Turn
    huge = distribution(site, "huge-1.0.dist-info", "")
    (huge / "entry_points.txt").write_bytes(b"[turn_hooks]\n" + b"#" * _discovery.CACHE_LIMIT)
    linked = site / "linked-1.0.dist-info"
    linked.mkdir()
    (linked / "entry_points.txt").symlink_to(site / "elsewhere.txt")
    (site / "elsewhere.txt").write_text("[turn_hooks]\nlinked = linked:plugin\n")
    assert scan(GROUP) == []


def test_the_cache_answers_until_a_distribution_is_installed(site, monkeypatch):
    distribution(site, "one-1.0.dist-info", "[turn_hooks]\none = one:plugin\n")
    assert [ep.name for ep in entry_points(GROUP)] == ["one"]
    assert os.stat(cache_path()).st_mode & 0o777 == 0o600
    scans: list[str] = []
    real_scan = _discovery.scan
    monkeypatch.setattr(_discovery, "scan", lambda group: scans.append(group) or real_scan(group))
    assert [ep.name for ep in entry_points(GROUP)] == ["one"]
    assert scans == []  # answered from the cache
    distribution(site, "two-1.0.dist-info", "[turn_hooks]\ntwo = two:plugin\n")
    os.utime(site, ns=(0, os.stat(site).st_mtime_ns + 1))  # coarse clocks: force a change
    assert [ep.name for ep in entry_points(GROUP)] == ["one", "two"]
    assert scans == [GROUP]


def plant(entries, key=None):
    """Write a cache file by hand, as another process (or an attacker) might."""
    path = Path(cache_path())
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(json.dumps({"key": key or cache_key(GROUP), "entry_points": entries}))
    return path


@pytest.fixture
def counted_scans(monkeypatch):
    scans: list[str] = []
    real_scan = _discovery.scan
    monkeypatch.setattr(_discovery, "scan", lambda group: scans.append(group) or real_scan(group))
    return scans


@pytest.mark.parametrize(
    "document",
    ["not json", json.dumps({"key": "stale", "entry_points": []}), json.dumps({"key": None})],
    ids=["garbled", "stale", "wrong-shape"],
)
def test_a_cache_that_cannot_be_believed_costs_a_scan(site, counted_scans, document):
    distribution(site, "one-1.0.dist-info", "[turn_hooks]\none = one:plugin\n")
    plant([]).write_text(document)
    assert [ep.name for ep in entry_points(GROUP)] == ["one"]
    assert counted_scans == [GROUP]


def test_a_cache_with_the_right_key_is_believed(site, counted_scans):
    plant([["cached", "cached:plugin", "cached", "1"]])
    assert entry_points(GROUP) == [EntryPoint("cached", "cached:plugin", "cached", "1")]
    assert counted_scans == []


@pytest.mark.parametrize("mode", [0o777, 0o770])
def test_a_cache_others_could_have_planted_is_never_believed(site, counted_scans, mode):
    path = plant([["evil", "evil:plugin", "evil", "1"]])
    os.chmod(path.parent, mode)
    assert entry_points(GROUP) == []
    assert counted_scans == [GROUP]


def test_an_unwritable_cache_only_costs_a_scan(site, tmp_path, monkeypatch):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache directory would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    distribution(site, "one-1.0.dist-info", "[turn_hooks]\none = one:plugin\n")
    assert [ep.name for ep in entry_points(GROUP)] == ["one"]
    assert [ep.name for ep in entry_points(GROUP)] == ["one"]


def test_a_failed_cache_write_leaves_no_temporary_file(site, monkeypatch):
    distribution(site, "one-1.0.dist-info", "[turn_hooks]\none = one:plugin\n")

    def refuse(source, destination):
        raise PermissionError("read-only cache")

    monkeypatch.setattr(_discovery.os, "replace", refuse)
    assert [ep.name for ep in entry_points(GROUP)] == ["one"]
    assert os.listdir(Path(cache_path()).parent) == []


def test_the_cache_lives_under_home_without_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_path() == str(tmp_path / ".cache" / "turn-hooks" / "entry-points-v1.json")


def test_a_symlinked_cache_is_never_followed(site, counted_scans, tmp_path):
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(
        json.dumps({"key": cache_key(GROUP), "entry_points": [["evil", "evil:p", "evil", "1"]]})
    )
    path = plant([])
    path.unlink()
    path.symlink_to(elsewhere)
    assert entry_points(GROUP) == []
    assert counted_scans == [GROUP]
