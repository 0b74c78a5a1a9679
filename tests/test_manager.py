"""The plugin-manager factory and its three environment variables (run in subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pluggy
import pytest

from turn_hooks import make_plugin_manager, plugin_info, prebuild_plugin_manager

PLUGIN_MODULE = textwrap.dedent(
    """
    import os, pathlib
    from turn_hooks import ContextRegistration, hookimpl
    pathlib.Path(os.environ["IMPORT_LOG"], "{name}").touch()

    class Plugin:
        registrations = {{"pre_turn": ContextRegistration(
            hook_id="{name}.ctx", capability_id="{name}", readback_slots=())}}

        @hookimpl
        def pre_turn(self):
            return {{"instructions": ["from {name}"]}}

    plugin = Plugin()
    """
)


@pytest.fixture
def plugin_path(tmp_path):
    """A directory holding a fake distribution with three turn_hooks entry points."""
    site = tmp_path / "site"
    dist_info = site / "fakeplugins-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplugins\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(
        "[turn_hooks]\nalpha = fake_alpha:plugin\nbeta = fake_beta:plugin\n"
        "broken = fake_broken:plugin\ntypo = fake_typo:plugin\n"
    )
    for name in ("alpha", "beta"):
        (site / f"fake_{name}.py").write_text(PLUGIN_MODULE.format(name=name))
    (site / "fake_broken.py").write_text("raise ImportError('broken on purpose')\n")
    (site / "fake_typo.py").write_text(
        "from turn_hooks import hookimpl\n"
        "class Typo:\n    @hookimpl\n    def pre_trun(self):\n        pass\nplugin = Typo()\n"
    )
    log = tmp_path / "imports"
    log.mkdir()
    return site, log


def run_plugins(plugin_path, command=("plugins", "--format", "json"), stdin=None, **env):
    site, log = plugin_path
    environment = (
        {k: v for k, v in os.environ.items() if not k.startswith("TURN_HOOKS_")}
        | {"PYTHONPATH": str(site), "IMPORT_LOG": str(log)}
        | env
    )
    result = subprocess.run(
        [sys.executable, "-m", "hosts.cli", *command],
        capture_output=True,
        text=True,
        env=environment,
        input=stdin,
        check=False,
    )
    return result


def names(result):
    assert result.returncode == 0, result.stdout + result.stderr
    return [plugin["name"] for plugin in json.loads(result.stdout)["plugins"]]


def imported(plugin_path):
    return sorted(p.name for p in plugin_path[1].iterdir())


def test_unset_loads_every_entry_point_and_isolates_broken_ones(plugin_path):
    result = run_plugins(plugin_path)
    assert names(result) == ["alpha", "beta", "reward_memory"]
    assert json.loads(result.stdout)["load_failures"] == [
        {"name": "broken", "reason_code": "plugin_load_failed"},
        {"name": "typo", "reason_code": "plugin_validation_failed"},
    ]
    assert "Traceback" not in result.stderr


def test_empty_allow_list_loads_nothing(plugin_path):
    assert names(run_plugins(plugin_path, TURN_HOOKS_LOAD_PLUGINS="")) == []
    assert imported(plugin_path) == []


def test_allow_list_loads_only_the_named_entry_points(plugin_path):
    result = run_plugins(plugin_path, TURN_HOOKS_LOAD_PLUGINS="alpha, reward_memory")
    assert names(result) == ["alpha", "reward_memory"]
    assert imported(plugin_path) == ["alpha"]


def test_block_list_wins_and_the_blocked_module_is_never_imported(plugin_path):
    result = run_plugins(
        plugin_path, TURN_HOOKS_LOAD_PLUGINS="alpha,beta", TURN_HOOKS_DISABLE_PLUGINS="beta"
    )
    assert names(result) == ["alpha"]
    assert imported(plugin_path) == ["alpha"]


def test_allow_list_naming_a_broken_plugin_still_loads_the_rest(plugin_path):
    result = run_plugins(plugin_path, TURN_HOOKS_LOAD_PLUGINS="broken,alpha")
    assert names(result) == ["alpha"]


def test_tracing_goes_to_stderr(plugin_path):
    turn = {
        "host": "generic_cli",
        "host_turn_id": "t",
        "observed_at": "2026-01-01T00:00:00Z",
        "payload": {"goal_id": "g", "agent_id": "a"},
    }
    result = run_plugins(
        plugin_path,
        ("dispatch", "pre-turn"),
        stdin=json.dumps(turn),
        TURN_HOOKS_TRACE_PLUGINS="1",
        TURN_HOOKS_LOAD_PLUGINS="alpha",
    )
    assert result.returncode == 0, result.stdout
    assert json.loads(result.stdout)["projection"]["capability_instructions"] == ["from alpha"]
    assert "turn-hooks trace:" not in result.stdout
    assert "turn-hooks trace: pre_turn" in result.stderr


def test_in_process_tracing_reports_calls(monkeypatch, capsys, turn):
    monkeypatch.setenv("TURN_HOOKS_TRACE_PLUGINS", "1")
    monkeypatch.setenv("TURN_HOOKS_LOAD_PLUGINS", "")
    monkeypatch.setenv("TURN_HOOKS_PLUGINS", ECHO)
    pm = make_plugin_manager()
    pm.hook.pre_turn(turn=turn)
    err = capsys.readouterr().err
    assert f"pre_turn -> [{ECHO}]" in err and "done (failed=False)" in err


def test_autoload_false_loads_nothing_and_is_a_pluggy_manager():
    pm = make_plugin_manager(autoload=False)
    assert isinstance(pm, pluggy.PluginManager)
    assert pm.get_plugins() == set()
    assert plugin_info(pm) == []


def test_plugin_info_describes_registered_plugins(pm):
    from turn_hooks import SettlementRegistration, hookimpl

    class WithoutRegistrations:
        @hookimpl
        def post_writeback(self):
            return None

    class WithRegistrations:
        registrations = {
            "post_settlement": SettlementRegistration(hook_id="w.effect", capability_id="w"),
            "pre_turn": "unused: no pre_turn implementation",
        }

        @hookimpl
        def post_settlement(self):
            return None

    pm.register(WithoutRegistrations(), name="b_plain")
    pm.register(WithRegistrations(), name="a_registered")
    pm.set_blocked("c_blocked")
    assert plugin_info(pm) == [
        {
            "name": "a_registered",
            "hooks": ["post_settlement"],
            "hook_ids": {"post_settlement": "w.effect"},
            "distribution": None,
        },
        {"name": "b_plain", "hooks": ["post_writeback"], "hook_ids": {}, "distribution": None},
    ]


def test_a_default_install_lists_only_the_built_in_capabilities():
    pm = make_plugin_manager()
    [info] = plugin_info(pm)
    assert info["name"] == "reward_memory"
    assert info["distribution"] == {"name": "turn-hooks", "version": "0.1.0"}
    assert info["hook_ids"] == {
        "post_settlement": "reward-memory.outcome-ingest",
        "pre_turn": "reward-memory.turn-context",
    }


ECHO = "capabilities.example_echo:plugin"


def test_named_plugins_are_registered_by_import_path(monkeypatch):
    """``TURN_HOOKS_PLUGINS`` works like pytest's ``-p``: the example plugin and the
    conformance probe reach a hook process only when a run names them."""
    monkeypatch.setenv("TURN_HOOKS_PLUGINS", f"{ECHO}, conformance.probe:plugin")
    pm = make_plugin_manager()
    assert [p["name"] for p in plugin_info(pm)] == [
        ECHO,
        "conformance.probe:plugin",
        "reward_memory",
    ]
    [echo] = [p for p in plugin_info(pm) if p["name"] == ECHO]
    assert echo["hook_ids"] == {
        "post_settlement": "example-echo.settlement",
        "pre_turn": "example-echo.turn-context",
    }


@pytest.mark.parametrize(
    "spec", ["no_such_module_here:plugin", "capabilities.example_echo:missing"]
)
def test_a_named_plugin_that_cannot_load_is_recorded(monkeypatch, spec):
    monkeypatch.setenv("TURN_HOOKS_PLUGINS", spec)
    pm = make_plugin_manager()
    assert pm.load_failures == [{"name": spec, "reason_code": "plugin_load_failed"}]
    assert [p["name"] for p in plugin_info(pm)] == ["reward_memory"]


def test_a_named_plugin_is_blocked_like_any_other(monkeypatch):
    monkeypatch.setenv("TURN_HOOKS_PLUGINS", f"{ECHO},{ECHO}")
    monkeypatch.setenv("TURN_HOOKS_DISABLE_PLUGINS", ECHO)
    pm = make_plugin_manager()
    assert [p["name"] for p in plugin_info(pm)] == ["reward_memory"]
    monkeypatch.delenv("TURN_HOOKS_DISABLE_PLUGINS")
    assert [p["name"] for p in plugin_info(make_plugin_manager())] == [ECHO, "reward_memory"]


@pytest.fixture
def in_process_plugins(plugin_path, monkeypatch):
    """The fake distribution on this process's path; its modules are forgotten afterwards."""
    site, log = plugin_path
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("IMPORT_LOG", str(log))
    yield plugin_path
    for name in ("fake_alpha", "fake_beta", "fake_broken", "fake_typo"):
        sys.modules.pop(name, None)


def test_in_process_loading_isolates_broken_and_invalid_plugins(in_process_plugins):
    pm = make_plugin_manager()
    assert sorted(pm.get_name(p) for p in pm.get_plugins()) == ["alpha", "beta", "reward_memory"]
    assert pm.load_failures == [
        {"name": "broken", "reason_code": "plugin_load_failed"},
        {"name": "typo", "reason_code": "plugin_validation_failed"},
    ]


def test_in_process_allow_and_block_lists(in_process_plugins, monkeypatch):
    monkeypatch.setenv("TURN_HOOKS_LOAD_PLUGINS", "alpha,broken,beta")
    monkeypatch.setenv("TURN_HOOKS_DISABLE_PLUGINS", "beta")
    pm = make_plugin_manager()
    assert [pm.get_name(p) for p in pm.get_plugins()] == ["alpha"]
    assert pm.is_blocked("beta")
    assert pm.load_failures == [{"name": "broken", "reason_code": "plugin_load_failed"}]


def loaded(pm):
    return sorted(pm.get_name(p) for p in pm.get_plugins())


def test_a_prebuilt_manager_serves_the_next_call_once(in_process_plugins):
    # The resident server makes the manager before it forks; the call it forks takes it.
    prebuild_plugin_manager()
    first = make_plugin_manager(autoload=False)  # not what was made ahead: left there
    assert loaded(first) == []
    taken = make_plugin_manager()
    assert loaded(taken) == ["alpha", "beta", "reward_memory"]
    again = make_plugin_manager()
    assert again is not taken and loaded(again) == loaded(taken)
    assert again.load_failures == taken.load_failures


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("TURN_HOOKS_DISABLE_PLUGINS", "beta", ["alpha", "reward_memory"]),
        ("TURN_HOOKS_LOAD_PLUGINS", "", []),
        ("TURN_HOOKS_LOAD_PLUGINS", "alpha", ["alpha"]),
        ("TURN_HOOKS_PLUGINS", ECHO, ["alpha", "beta", ECHO, "reward_memory"]),
    ],
)
def test_a_prebuilt_manager_is_not_used_once_a_plugin_variable_differs(
    in_process_plugins, monkeypatch, variable, value, expected
):
    prebuild_plugin_manager()
    monkeypatch.setenv(variable, value)
    assert loaded(make_plugin_manager()) == expected


def test_a_prebuilt_manager_is_not_used_once_a_distribution_changed(
    in_process_plugins, monkeypatch
):
    site, _ = in_process_plugins
    prebuild_plugin_manager()
    (site / "fake_alpha.py").unlink()
    (site / "fakeplugins-1.0.dist-info" / "entry_points.txt").write_text(
        "[turn_hooks]\nbeta = fake_beta:plugin\n"
    )
    # A directory's mtime has a granularity; the installed set changing moves it.
    os.utime(site, ns=(1, 1))
    assert loaded(make_plugin_manager()) == ["beta", "reward_memory"]
