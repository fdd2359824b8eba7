"""The pure packages must never import Django: they run in Spark and in the simulator."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "partitions.changestream.records",
        "partitions.changestream.query",
        "partitions.changestream.parse",
        "partitions.changestream.decode",
        "partitions.changestream.reader",
        "partitions.simulator.server",
        "spark_tasks",
    ],
)
def test_pure_package_does_not_import_django(module):
    # given a fresh interpreter
    code = f"import sys, {module}; print('django' in sys.modules)"
    # when the module is imported
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # then Django was not imported along with it
    assert out.stdout.strip() == "False"
