"""Entry-point discovery without importlib.metadata, and the cache that makes it a stat."""

from __future__ import annotations

import importlib.metadata
import os
import sys

import pytest

from turn_hooks import _discovery
from turn_hooks._discovery import EntryPoint, cache_key, entry_points, scan

GROUP = "turn_hooks"


@pytest.fixture
def site(tmp_path, monkeypatch):
    """An empty site directory alone on ``sys.path``."""
    directory = tmp_path / "site"
    directory.mkdir()
    monkeypatch.setattr(sys, "path", [str(directory)])
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
    (huge / "entry_points.txt").write_bytes(b"[turn_hooks]\n" + b"#" * _discovery.READ_LIMIT)
    linked = site / "linked-1.0.dist-info"
    linked.mkdir()
    (linked / "entry_points.txt").symlink_to(site / "elsewhere.txt")
    (site / "elsewhere.txt").write_text("[turn_hooks]\nlinked = linked:plugin\n")
    assert scan(GROUP) == []


@pytest.fixture
def counted_scans(monkeypatch):
    scans: list[str] = []
    real_scan = _discovery.scan
    monkeypatch.setattr(_discovery, "scan", lambda group: scans.append(group) or real_scan(group))
    monkeypatch.setattr(_discovery, "_remembered", {})
    return scans


def test_the_answer_is_remembered_until_a_distribution_is_installed(site, counted_scans):
    distribution(site, "one-1.0.dist-info", "[turn_hooks]\none = one:plugin\n")
    assert [ep.name for ep in entry_points(GROUP)] == ["one"]
    assert [ep.name for ep in entry_points(GROUP)] == ["one"]
    assert counted_scans == [GROUP], "the second answer came from memory"
    distribution(site, "two-1.0.dist-info", "[turn_hooks]\ntwo = two:plugin\n")
    os.utime(site, ns=(0, os.stat(site).st_mtime_ns + 1))  # coarse clocks: force a change
    assert [ep.name for ep in entry_points(GROUP)] == ["one", "two"]
    assert counted_scans == [GROUP, GROUP]


def test_another_path_is_another_answer(site, tmp_path, monkeypatch, counted_scans):
    distribution(site, "one-1.0.dist-info", "[turn_hooks]\none = one:plugin\n")
    assert [ep.name for ep in entry_points(GROUP)] == ["one"]
    monkeypatch.setattr(sys, "path", [str(tmp_path / "elsewhere")])
    assert entry_points(GROUP) == []
    assert cache_key(GROUP) in _discovery._remembered and len(_discovery._remembered) == 1


def test_finding_plugins_writes_nothing(site, tmp_path, monkeypatch, counted_scans):
    """Dry runs and refused input write nothing anywhere, the user's home included."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    distribution(site, "one-1.0.dist-info", "[turn_hooks]\none = one:plugin\n")
    before = sorted(tmp_path.rglob("*"))
    entry_points(GROUP)
    assert sorted(tmp_path.rglob("*")) == before
