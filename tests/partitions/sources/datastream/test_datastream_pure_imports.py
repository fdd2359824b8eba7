"""The Datastream packages are pure: every module imports without Django, in a fresh interpreter."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
PACKAGES = ["partitions.sources.datastream", "partitions.simulator.datastream"]
CHECK = """
import importlib, json, pkgutil, sys
package = importlib.import_module(sys.argv[1])
found = {}
for info in pkgutil.iter_modules(package.__path__, sys.argv[1] + "."):
    importlib.import_module(info.name)
    found[info.name] = "django" in sys.modules
print(json.dumps(found))
"""


@pytest.mark.parametrize("package", PACKAGES)
def test_every_module_imports_without_django(package):
    # given a fresh interpreter
    # when every module of the package is imported, one after another
    out = subprocess.run(
        [sys.executable, "-c", CHECK, package],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    found = json.loads(out.stdout)
    # then all were imported and none brought Django along
    expected = {f"{package}.{m.name}" for m in pkgutil.iter_modules([str(ROOT / package.replace(".", "/"))])}
    assert set(found) == expected
    assert not any(found.values()), found
