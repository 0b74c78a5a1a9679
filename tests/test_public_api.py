"""The curated public surface (httpx's test_api)."""

from __future__ import annotations

import importlib

import pytest

import turn_hooks


def public_names(module):
    """What the module binds, and the models it builds on first use (turn_hooks.models)."""
    lazy = set(module.models._LAZY) if module is turn_hooks else set()
    bound = {name for name in vars(module) if not name.startswith("_")}
    return (bound | lazy) - {"annotations", "Any", "TYPE_CHECKING"}


def isort_style(name):
    """ruff's RUF022 order: CONSTANTS, then CamelCase, then the rest, each alphabetical."""
    return (not name.isupper(), not name[:1].isupper(), name)


@pytest.mark.parametrize("package", ["turn_hooks", "sidecars"])
def test_all_is_sorted_and_equals_the_public_names(package):
    module = importlib.import_module(package)
    submodules = {
        name
        for name, value in vars(module).items()
        if getattr(value, "__name__", "").startswith(f"{package}.")
        and type(value).__name__ == "module"
    }
    assert module.__all__ == sorted(module.__all__, key=isort_style)
    assert set(module.__all__) == public_names(module) - submodules


def test_version_is_served_lazily_from_the_distribution():
    assert turn_hooks.__version__ == "0.1.0"
    with pytest.raises(AttributeError):
        turn_hooks.no_such_name  # noqa: B018 - the attribute access is the test


def test_each_boundary_s_models_are_built_on_first_use():
    # A hook process that starts cold builds only the documents of the boundary it
    # serves: a fresh interpreter shows which modules of models one name loads.
    import json
    import subprocess
    import sys

    code = (
        "import json, sys, turn_hooks; "
        "built = lambda: sorted(m for m in sys.modules if m.endswith('_documents')); "
        "before = built(); turn_hooks.PreTurnOutcome; middle = built(); "
        "from turn_hooks.models import Settlement; print(json.dumps([before, middle, built()]))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    context, settlement = "turn_hooks._context_documents", "turn_hooks._settlement_documents"
    assert json.loads(result.stdout) == [[], [context], [context, settlement]]


@pytest.mark.parametrize("name", sorted(turn_hooks.models._LAZY))
def test_a_lazily_built_model_is_one_class_wherever_it_is_named(name):
    from turn_hooks import models

    assert getattr(turn_hooks, name) is getattr(models, name)
    assert name in dir(models) and getattr(models, name).__name__ == name
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        models.Nothing  # noqa: B018 - the attribute access is the test
