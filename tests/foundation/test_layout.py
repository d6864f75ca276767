"""The import rules: arrows between the project's packages run one way, from the top down;
inside a package they run one way too (no circle); and an engine imports no Django.

APP_LAYERS (tests/support/layers.py) is the one list of that order. A module may import
its own package and any package of a lower layer, never one of its own layer or above: the
data flows benchmark -> jury -> annotation -> alignment, the site-level pieces (home page,
demo) sit above every app, and `common` (helpers any app may use) sits below them all.

Inside a package, modules that import each other (directly or round a longer circle) can only
be read, tested and moved together, and a circle hidden in a function-level import breaks the
day someone lifts that import to the top. `engine/` packages are pure Python: no Django, and
nothing that brings Django in (a project app's models or services), so they run and are tested
without a database. tests/support/import_graph.py reads the imports.
"""

import ast
import tomllib
from pathlib import Path

import pytest

from tests.support.import_graph import (
    chain,
    django_via,
    import_cycles,
    is_engine,
    module_imports,
    package_graph,
    package_modules,
)
from tests.support.layers import APP_LAYERS, PROJECT_PACKAGES

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


def test_the_rule_sees_imports_under_type_checking():
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from jury.models import X\n"
    assert imported_packages(source) == {"typing", "jury"}


# `config` wires everything together (the URLs, Celery's worker steps), and it is also what
# Django reads before it loads any app (settings, environment, file caches): only the wiring
# may import the apps.
CONFIG_WIRING = ("config.urls", "config.celery")


def test_only_the_wiring_of_config_imports_an_app():
    modules = package_modules("config")
    apps = set(LAYER_OF) - {"config"}
    wrong = [
        f"{module} -> {name}"
        for module in sorted(set(modules) - set(CONFIG_WIRING))
        for name, _ in module_imports(module, modules)
        if name.split(".")[0] in apps
    ]
    assert wrong == []


# --- no circle inside a package ------------------------------------------------------------------


@pytest.mark.parametrize("package", sorted(LAYER_OF))
def test_no_modules_of_a_package_import_each_other_in_a_circle(package):
    assert [chain(cycle) for cycle in import_cycles(package_graph(package))] == []


def test_each_circle_is_reported_once_as_a_chain():
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": {"a"}, "d": {"a"}}
    assert [chain(cycle) for cycle in import_cycles(graph)] == [
        "a -> b -> a",
        "a -> b -> c -> a",
    ]


def test_a_graph_without_circles_has_none():
    assert import_cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


# --- engines are pure ----------------------------------------------------------------------------

PROJECT_MODULES = {
    name: path for package in PROJECT_PACKAGES for name, path in package_modules(package).items()
}


def django_in_engines() -> list[str]:
    """`path:line imports name` for every import in an engine module that brings in Django."""
    wrong = []
    for module, path in sorted(PROJECT_MODULES.items()):
        if not is_engine(module):
            continue
        for name, line in module_imports(module, PROJECT_MODULES):
            via = django_via(name, PROJECT_MODULES)
            if via:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {chain(via)}")
    return wrong


def test_no_engine_imports_django():
    assert django_in_engines() == []


def test_the_engine_rule_follows_a_module_down_to_django(tmp_path):
    helper = tmp_path / "helper.py"
    helper.write_text("from django.db import models\n")
    modules = {"app.helper": helper}
    assert django_via("app.helper.Model", modules) == ["app.helper", "django.db.models"]
    assert django_via("app.engine.maths", modules) == []
    assert django_via("json", modules) == []
