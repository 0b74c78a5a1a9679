"""Every hookspec has its own test here, and the meta-test keeps it that way (datasette)."""

from __future__ import annotations

import inspect
import sys

from turn_hooks import hookspecs


def spec_names():
    return sorted(
        name
        for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
        if hasattr(fn, "turn_hooks_spec")
    )


def test_every_hookspec_has_a_test():
    module = sys.modules[__name__]
    assert spec_names() == [
        "post_settlement",
        "post_writeback",
        "pre_turn",
        "read_result",
        "register_commands",
    ]
    for name in spec_names():
        assert hasattr(module, f"test_hook_{name}"), f"write test_hook_{name}"


def spec_options(name):
    return getattr(hookspecs, name).turn_hooks_spec


def documented(name):
    doc = inspect.getdoc(getattr(hookspecs, name))
    return all(
        part in doc
        for part in (":param turn:", "**Must not**", ".. versionadded::", "**Use in hosts**")
    )


def test_hook_pre_turn():
    assert inspect.signature(hookspecs.pre_turn).parameters.keys() == {"turn"}
    assert spec_options("pre_turn") == {
        "firstresult": False,
        "historic": False,
        "warn_on_impl": None,
        "warn_on_impl_args": None,
    }
    assert documented("pre_turn")


def test_hook_post_settlement():
    assert list(inspect.signature(hookspecs.post_settlement).parameters) == ["turn", "settlement"]
    assert spec_options("post_settlement")["firstresult"] is False
    assert documented("post_settlement")


def test_hook_post_writeback():
    assert list(inspect.signature(hookspecs.post_writeback).parameters) == ["turn", "writeback"]
    assert spec_options("post_writeback")["historic"] is False
    assert documented("post_writeback")


def test_hook_register_commands(pm):
    import argparse

    from turn_hooks import hookimpl

    class Commands:
        @hookimpl
        def register_commands(self, commands):
            commands.add_parser("hello").set_defaults(handler=lambda args: ({"ok": True}, "t"))

    pm.register(Commands(), name="commands")
    parser = argparse.ArgumentParser()
    pm.hook.register_commands(commands=parser.add_subparsers(dest="command"))
    args = parser.parse_args(["hello"])
    assert args.handler(args) == ({"ok": True}, "t")
    assert documented("register_commands") is False, "it takes no turn; its docs name commands"
    assert ":param commands:" in inspect.getdoc(hookspecs.register_commands)


def test_hook_read_result():
    assert list(inspect.signature(hookspecs.read_result).parameters) == ["field", "value"]
    assert spec_options("read_result")["firstresult"] is False
    doc = inspect.getdoc(hookspecs.read_result)
    assert documented("read_result") is False, "it takes no turn; its docs name the field"
    assert all(part in doc for part in (":param field:", "**Must not**", "**Use in hosts**"))
