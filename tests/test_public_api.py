"""The curated public surface (httpx's test_api)."""

from __future__ import annotations

import importlib

import pytest

import turn_hooks


def public_names(module):
    return {name for name in vars(module) if not name.startswith("_")} - {"annotations", "Any"}


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
