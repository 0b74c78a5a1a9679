"""The docs document every hook with its exact signature (datasette's test_docs), and
the README stays a front door whose promises, module map and reflection live in docs/."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from test_hookspecs import spec_names

from turn_hooks import hookspecs

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def page(name):
    """One page of docs/, where the README's reference material moved."""
    return (ROOT / "docs" / name).read_text(encoding="utf-8")


def section(text, heading):
    """The body under ``heading`` (a whole heading line) up to the next of its level or above."""
    level = heading.split(" ")[0]
    found = re.search(
        rf"^{re.escape(heading)}\n(.*?)(?=^#{{1,{len(level)}}} |\Z)", text, re.S | re.M
    )
    assert found, f"needs a '{heading}' section"
    return found.group(1)


def signature(name):
    fn = getattr(hookspecs, name)
    return f"{name}{inspect.signature(fn)}".replace("'", "")


def test_every_hook_has_a_section_with_its_exact_signature():
    plugins = page("plugins.md")
    for name in spec_names():
        assert f"```python\n{signature(name)}\n```" in section(plugins, f"### {name}"), signature(
            name
        )


def test_the_readme_stays_a_front_door():
    assert len(README.splitlines()) < 200, "move reference material to docs/"
    assert "(docs/promises.md)" in README, "the promises are linked from the front"


def test_readme_lists_exactly_two_commands_for_a_fresh_machine():
    block = re.search(r"## Two commands\n.*?```sh\n(.*?)```", README, re.S).group(1)
    assert [line.split("#")[0].strip() for line in block.strip().splitlines()] == [
        "make demo",
        "make test",
    ]


def test_every_environment_variable_is_documented():
    from turn_hooks import _names

    for name in (
        _names.ENV_LOAD_PLUGINS,
        _names.ENV_DISABLE_PLUGINS,
        _names.ENV_PLUGINS,
        _names.ENV_TRACE_PLUGINS,
        _names.ENV_HOOK_DEADLINE,
    ):
        assert f"`{name}`" in page("environment.md")


def test_every_promise_names_tests_that_exist():
    promises = page("promises.md")
    assert promises.startswith("# Promises, and the tests that keep them\n")
    rows = [line for line in promises.splitlines() if line.startswith("| ") and "`tests/" in line]
    assert len(rows) >= 8
    root = Path(__file__).parent.parent
    for row in rows:
        named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", row)
        assert named, row
        for path, name in named:
            text = (root / path).read_text(encoding="utf-8")
            assert re.search(rf"^def {name}\(", text, re.M), f"{path}::{name} does not exist"


def module_map():
    """docs/reward-memory.md's module map: ``{sub-package: (modules, may import)}``."""
    rows = re.findall(r"^\| `(\w+)/` \| (.*?) \| (.*?) \|$", page("reward-memory.md"), re.M)
    assert rows, "the Reward memory section needs its module map"
    return {
        name: (set(re.findall(r"`(\w+)`", owns)), set(re.findall(r"`(\w+)`", allowed)))
        for name, owns, allowed in rows
    }


def test_the_module_map_lists_exactly_the_sub_packages_and_modules_on_disk():
    package = Path(__file__).parent.parent / "capabilities" / "reward_memory"
    on_disk = {
        path.name: {module.stem for module in path.glob("*.py") if module.name != "__init__.py"}
        for path in package.iterdir()
        if (path / "__init__.py").is_file()
    }
    assert {name: modules for name, (modules, _) in module_map().items()} == on_disk


def test_the_module_map_states_the_enforced_layers():
    from test_layers import RM_LAYERS

    assert {name: allowed for name, (_, allowed) in module_map().items()} == RM_LAYERS


def test_the_reflection_example_is_one_the_contract_accepts_and_the_model_is_asked_for():
    import json

    from capabilities.reward_memory.contract.experience import parse_reflection
    from capabilities.reward_memory.contract.reader import read_reflection
    from capabilities.reward_memory.turn.pre_turn import REFLECTION_INSTRUCTION

    reflection = section(page("reflection.md"), "## The reflection a learning Turn ends with")
    [example] = re.findall(r"```json\n(.*?)```", reflection, re.DOTALL)
    parsed = parse_reflection(read_reflection(example).value)
    assert parsed.kind == "eligible", "the docs' example is learnable as written"
    document = json.loads(example)
    for key in [*document, *document["experience"], *document["experience"]["future_behavior"]]:
        assert key in REFLECTION_INSTRUCTION, f"{key}: the model is told about every key"
    assert "<reward_memory_reflection_json>" in reflection
    assert "--reward-memory-reflection-json" in reflection
