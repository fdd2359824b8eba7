"""Apps depend one way, and no module imports another that imports it back (DESIGN §2, §11).

Read from the code's own import statements (every one, at any depth), over every module
of every app: streams at the bottom; partitions above it, itself in layers (the pure kinds
and simulators, then the models and read models, then the pipeline, then its pages);
cdcweb, which composes them, on top. A new import that runs back up, or a cycle hidden by
an import inside a function, fails here.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CODE = ("streams", "partitions", "cdcweb", "spark_tasks")
PARTITIONS_WEB = ("views", "urls", "admin", "api", "management", "apps")

# Which layers a layer may import (besides its own, and third-party code).
MAY_IMPORT = {
    "streams": set(),
    "sources": {"streams"},  # pure; streams.times is pure too (tests/test_pure_packages.py)
    "spark_tasks": {"sources"},
    "simulator": {"sources", "streams"},
    "partitions": {"sources", "streams"},  # models and read models
    "pipeline": {"partitions", "sources", "streams"},
    "partitions_web": {"partitions", "pipeline", "sources", "simulator", "streams"},
    "cdcweb": {"partitions_web", "partitions", "pipeline", "sources", "simulator", "spark_tasks", "streams"},
}


def layer(module: str) -> str | None:
    """Return the layer of a module of ours, or None for anything else."""
    parts = module.split(".")
    if parts[0] in ("streams", "cdcweb", "spark_tasks"):
        return parts[0]
    if parts[0] != "partitions":
        return None
    second = parts[1] if len(parts) > 1 else ""
    if second in ("sources", "simulator", "pipeline"):
        return second
    return "partitions_web" if second in PARTITIONS_WEB else "partitions"


def modules() -> list[Path]:
    """Return every Python file of the apps, migrations left out (they name models by string)."""
    return sorted(
        p for package in CODE for p in (ROOT / package).rglob("*.py") if "migrations" not in p.parts
    )


def name_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def imported(path: Path) -> tuple[tuple[str, bool], ...]:
    """Return (absolute module name, imported inside a function?) of each import in the file."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if isinstance(child, ast.Import):
                found.extend((alias.name, inner) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = (
                    ".".join(package.split(".")[: len(package.split(".")) - child.level + 1])
                    if child.level
                    else ""
                )
                module = ".".join(part for part in (base, child.module or "") if part)
                found.append((module, inner))
                # `from package import module` imports the module too
                found.extend((f"{module}.{alias.name}", inner) for alias in child.names)
            visit(child, inner)

    visit(ast.parse(path.read_text()), False)
    return tuple(found)


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", modules(), ids=rel)
def test_no_module_imports_from_a_layer_above_its_own(path):
    mine = layer(name_of(path))
    allowed = MAY_IMPORT[mine] | {mine}
    wrong = {n for n, _ in imported(path) if layer(n) is not None and layer(n) not in allowed}
    assert not wrong, f"{mine} may import only {sorted(allowed)}: {sorted(wrong)}"


# Inside cdcweb: the dashboard shows firing alerts and reports use the streams' pages, so
# alerts must need neither back.
CDCWEB_MAY_NOT = {"cdcweb.alerts": ("cdcweb.dashboard", "cdcweb.reports")}


@pytest.mark.parametrize("path", [p for p in modules() if name_of(p).startswith("cdcweb.")], ids=rel)
def test_cdcweb_apps_import_one_way(path):
    mine = name_of(path)
    for app, forbidden in CDCWEB_MAY_NOT.items():
        if mine.startswith(app):
            wrong = [n for n, _ in imported(path) if n.startswith(forbidden)]
            assert not wrong, f"{app} may not import {forbidden}: {wrong}"


# Imports placed in a function on purpose, never to dodge a cycle (the cycle test below
# counts them too).
LATE_ON_PURPOSE = {
    "streams/apps.py": "AppConfig.ready(): models are importable only once the apps are loaded",
    "cdcweb/accounts/apps.py": "AppConfig.ready(): cdcweb.auth imports knox's and Django's auth models",
    "cdcweb/demo.py": "the launcher writes the demo's environment before Django is set up",
    "spark_tasks/main.py": "bad arguments fail before PySpark (seconds to import) is loaded",
}


@pytest.mark.parametrize("path", modules(), ids=rel)
def test_nothing_of_ours_is_imported_inside_a_function(path):
    # an import inside a function is how cycles between modules were held apart
    late = [name for name, inner in imported(path) if inner and layer(name) is not None]
    assert not late or rel(path) in LATE_ON_PURPOSE, f"imported inside a function: {late}"


def _graph() -> dict[str, set[str]]:
    """Return module -> modules of ours it imports (only names that are modules of ours)."""
    known = {name_of(p) for p in modules()}
    return {name_of(p): {n for n, _ in imported(p) if n in known and n != name_of(p)} for p in modules()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def connect(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            connect(node)
    return found


def test_no_modules_import_each_other_in_a_circle():
    # a package's __init__ importing its own modules (the kinds' registry) is not a circle
    # unless one of them imports the package back
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_every_layer_is_met():
    found = {layer(name_of(p)) for p in modules()}
    assert found == set(MAY_IMPORT), found
