"""The Bigtable reader and simulator packages are pure: no module of them imports Django."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
# Imports each module in turn and reports the first that brought Django in.
PROBE = """
import importlib, json, sys
found = {}
for name in sys.argv[1:]:
    importlib.import_module(name)
    found[name] = "django" in sys.modules
print(json.dumps(found))
"""


def _modules(package: str) -> list[str]:
    folder = ROOT / package.replace(".", "/")
    return [package] + [f"{package}.{p.stem}" for p in sorted(folder.glob("*.py")) if p.stem != "__init__"]


@pytest.mark.parametrize("package", ["partitions.sources.bigtable", "partitions.simulator.bigtable"])
def test_every_module_imports_without_django(package):
    # given a fresh interpreter and every module of the package
    modules = _modules(package)
    assert len(modules) > 5
    # when each is imported in turn
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *modules], capture_output=True, text=True, check=True, cwd=ROOT
    )
    # then none of them imported Django
    assert json.loads(out.stdout) == dict.fromkeys(modules, False)
