"""The kind's package is pure: every module imports without Django, in a fresh interpreter."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import partitions.sources.spanner_commit_timestamp as package

MODULES = sorted(f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__))
NEW_SIMULATOR_MODULES = [
    "partitions.simulator.spanner.watched_tables",
    "partitions.simulator.spanner.table_history",
    "partitions.simulator.spanner.table_reads",
    "partitions.simulator.spanner.table_sql",
    "partitions.simulator.spanner.table_service",
    "partitions.simulator.spanner.transactions",
]


def test_every_module_of_the_package_imports_without_django():
    # given every module of the package, and the simulator's new modules
    assert len(MODULES) >= 10
    modules = [package.__name__, *MODULES, *NEW_SIMULATOR_MODULES]
    code = "import importlib, sys\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules)
    code += "print('django' in sys.modules)"
    # when a fresh interpreter imports them all
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # then Django was not imported along with any of them
    assert out.stdout.strip() == "False"
