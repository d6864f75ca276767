"""The import rule: arrows between the project's packages run one way, from the top down.

APP_LAYERS (tests/support/layers.py) is the one list of that order. A module may import
its own package and any package of a lower layer, never one of its own layer or above: the
data flows benchmark -> jury -> annotation -> alignment, the site-level pieces (home page,
demo) sit above every app, and `common` (helpers any app may use) sits below them all.
"""

import ast
import tomllib
from pathlib import Path

import pytest

from tests.support.layers import APP_LAYERS

ROOT = Path(__file__).resolve().parents[2]

LAYER_OF = {package: rank for rank, layer in enumerate(APP_LAYERS) for package in layer}


def imported_packages(source: str) -> set[str]:
    """The top-level packages a module imports by absolute name, wherever the import sits
    (a function-level import is an arrow too)."""
    packages = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            packages.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            packages.add(node.module.split(".")[0])
    return packages


def upward_imports(package: str) -> list[str]:
    """Every `module -> package` arrow of this package that points at its own layer or
    above."""
    rank = LAYER_OF[package]
    wrong = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for target in sorted(imported_packages(path.read_text()) & LAYER_OF.keys()):
            if target != package and LAYER_OF[target] >= rank:
                wrong.append(f"{path.relative_to(ROOT)} -> {target}")
    return wrong


def test_every_project_package_has_a_layer():
    """A new app must be given its place in APP_LAYERS, or the rule would not see it."""
    packages = {
        path.parent.name
        for path in ROOT.glob("*/__init__.py")
        if path.parent.name not in {"tests", "bench"}
    }
    assert packages == set(LAYER_OF)


def test_the_distribution_installs_every_project_package():
    """An app left out of pyproject's package list works in a checkout and is missing from an
    installed copy."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    included = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    assert {pattern.removesuffix("*") for pattern in included} == set(LAYER_OF)


@pytest.mark.parametrize("package", sorted(LAYER_OF))
def test_no_module_imports_a_package_above_it(package):
    assert upward_imports(package) == []


def test_the_rule_sees_imports_inside_functions():
    source = "def home():\n    from jury.models import ScoringJob\n"
    assert imported_packages(source) == {"jury"}
