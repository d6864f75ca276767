"""The project's modules and the imports between them, read from the source without running
it: what tests/foundation/test_layout.py checks for circles inside a package and for Django
inside an engine.

Every import statement is an arrow, wherever it sits: at the top, inside a function (a circle
hidden in a function is still a circle) or under `if TYPE_CHECKING:` (the modules still need
each other to be understood). `from a.b import c` is an arrow to the module a.b.c when there is
one, and to a.b otherwise; naming a submodule does not count as an arrow to its package's
`__init__`, since every import of a submodule runs that too.
"""

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules(package: str) -> dict[str, Path]:
    """Every module of a top-level package by dotted name (a package is its `__init__`)."""
    return {module_name(path): path for path in sorted((ROOT / package).rglob("*.py"))}


def imported_names(
    source: str, module: str, *, is_package: bool = False
) -> Iterator[tuple[str, int]]:
    """Each dotted name the module's import statements name, with the statement's line:
    `import a.b` names a.b, `from a.b import c` names a.b.c, relative imports made absolute."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, is_package=is_package)
            yield from ((f"{base}.{alias.name}", node.lineno) for alias in node.names)


def _absolute(node: ast.ImportFrom, module: str, *, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    here = module.split(".") if is_package else module.split(".")[:-1]
    parent = here[: len(here) - node.level + 1]
    return ".".join([*parent, *([node.module] if node.module else [])])


def resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module a dotted name lives in: the longest prefix of it that is a module."""
    parts = name.split(".")
    while parts and ".".join(parts) not in modules:
        parts.pop()
    return ".".join(parts) or None


def module_imports(module: str, modules: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """(dotted name, line) of every import in the module."""
    path = modules[module]
    return imported_names(path.read_text(), module, is_package=path.name == "__init__.py")


def package_graph(package: str) -> dict[str, set[str]]:
    """The arrows between the modules of one top-level package."""
    modules = package_modules(package)
    graph = {}
    for module in modules:
        targets = (resolve(name, modules) for name, _ in module_imports(module, modules))
        graph[module] = {target for target in targets if target not in (None, module)}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every elementary circle of the graph, each once: starting at its alphabetically first
    module and ending where it started (a -> b -> a)."""
    reach = {module: _reachable(graph, module) for module in graph}
    cycles = []
    for start in sorted(graph):
        # Only the modules of start's circle that come after it: each circle is found once.
        circle = {m for m in reach[start] if start in reach[m] and m > start}
        cycles += _paths_back(graph, start, [start], circle)
    return cycles


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), list(graph[start])
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += graph.get(module, ())
    return seen


def _paths_back(graph, start: str, path: list[str], allowed: set[str]) -> list[list[str]]:
    found = []
    for target in sorted(graph[path[-1]]):
        if target == start:
            found.append([*path, start])
        elif target in allowed and target not in path:
            found += _paths_back(graph, start, [*path, target], allowed)
    return found


def chain(cycle: list[str]) -> str:
    return " -> ".join(cycle)


def is_engine(module: str) -> bool:
    return "engine" in module.split(".")


def django_via(
    name: str, modules: dict[str, Path], seen: frozenset[str] = frozenset()
) -> list[str]:
    """How importing `name` brings in Django: the chain of modules down to the Django module
    (`["common.query", "django.http"]`), or [] when it does not. Engine modules are not
    followed: each engine module answers for its own imports."""
    if name.split(".")[0] == "django":
        return [name]
    module = resolve(name, modules)
    if module is None or module in seen or is_engine(module):
        return []
    for imported, _ in module_imports(module, modules):
        found = django_via(imported, modules, seen | {module})
        if found:
            return [module, *found]
    return []
