"""The pure packages must never import Django: they run in Spark, in the simulators and in
the readers. Every module of each package is imported, not only its __init__."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PURE = [
    "partitions/sources",
    "partitions/simulator",
    "spark_tasks",
]
# One interpreter per package imports its modules one by one and names the first that
# brought Django in (a later one would only find it already there).
PROBE = """
import importlib, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
    if "django" in sys.modules:
        print(name)
        break
"""


def modules_of(package: str) -> list[str]:
    """Return the dotted names of every module under a package folder."""
    names = []
    root = ROOT / package
    for path in [root] if root.is_file() else sorted(root.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_every_pure_package_is_found_with_its_modules():
    found = {package: modules_of(package) for package in PURE}
    assert all(found.values()), [package for package, names in found.items() if not names]
    assert "partitions.sources.spanner_commit_timestamp.poller" in found["partitions/sources"]
    assert "partitions.sources.bigtable.decode" in found["partitions/sources"]
    assert "partitions.sources.spanner_change_stream.reader" in found["partitions/sources"]
    assert "partitions.sources.grpc_status" in found["partitions/sources"]
    assert "partitions.simulator.core.topology" in found["partitions/simulator"]
    assert "partitions.simulator.spanner.server" in found["partitions/simulator"]
    assert "partitions.simulator.bigtable.server" in found["partitions/simulator"]
    assert "partitions.simulator.datastream.server" in found["partitions/simulator"]
    assert "spark_tasks.throughput" in found["spark_tasks"]


@pytest.mark.parametrize("package", PURE)
def test_no_module_of_a_pure_package_imports_django(package):
    modules = modules_of(package)
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *modules], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "", f"{out.stdout.strip()} imports Django"
