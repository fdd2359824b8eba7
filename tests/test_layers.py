"""Apps depend one way: streams at the bottom, partitions above it, the dashboard and reports on top.

Read from the code's own import statements (every one, at any depth), so a new
import that runs back down, or one tucked inside a function to dodge a cycle, fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CODE = ("streams", "partitions", "cdcweb", "spark_tasks")


def modules(package: str) -> list[Path]:
    """Return the package's Python files, migrations left out (they name models by string)."""
    return sorted(p for p in (ROOT / package).rglob("*.py") if "migrations" not in p.parts)


def imported(path: Path) -> list[tuple[str, bool]]:
    """Return (absolute module name, imported inside a function?) of each import in the file."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if isinstance(child, ast.Import):
                found.extend((alias.name, inner) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = package.rsplit(".", child.level - 1)[0] if child.level else ""
                name = ".".join(part for part in (base, child.module or "") if part)
                found.append((name, inner))
            visit(child, inner)

    visit(ast.parse(path.read_text()), False)
    return found


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", modules("streams"), ids=rel)
def test_streams_imports_nothing_of_partitions_or_above(path):
    names = [name for name, _ in imported(path)]
    assert not [n for n in names if n.split(".")[0] == "partitions" or n.startswith("cdcweb.")], names


@pytest.mark.parametrize("path", modules("partitions"), ids=rel)
def test_partitions_imports_nothing_from_the_layer_above(path):
    names = [name for name, _ in imported(path)]
    assert not [n for n in names if n.startswith(("cdcweb.dashboard", "cdcweb.reports"))], names


@pytest.mark.parametrize("path", [p for package in CODE for p in modules(package)], ids=rel)
def test_no_module_of_partitions_is_imported_inside_a_function(path):
    # an import inside a function is how the cycles between the pipeline's modules were held apart
    late = [name for name, inner in imported(path) if inner and name.split(".")[0] == "partitions"]
    assert not late, f"imported inside a function: {late}"
