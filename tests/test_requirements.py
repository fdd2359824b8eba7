"""Dependencies: the locks hold every direct pin with hashes, make reinstalls on a lock change,
and the pinned pandas is one PySpark supports."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PIN = re.compile(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^\s\\;]+)", re.M)


def pins(path: Path) -> dict[str, str]:
    """Return {normalized name: version} of a requirements file's name==version lines."""
    return {re.sub(r"[-_.]+", "-", n).lower(): v for n, v in PIN.findall(path.read_text())}


@pytest.mark.parametrize(("source", "lock"), [("requirements.in", "requirements.txt"),
                                              ("requirements-dev.in", "requirements-dev.txt")])  # fmt: skip
def test_every_direct_pin_is_locked_with_hashes(source, lock):
    wanted, locked = pins(ROOT / source), pins(ROOT / lock)
    assert wanted, source
    assert {name: locked.get(name) for name in wanted} == wanted
    entries = re.split(r"\n(?=[A-Za-z0-9])", (ROOT / lock).read_text())
    unhashed = [e.split()[0] for e in entries if PIN.match(e) and "--hash=sha256:" not in e]
    assert unhashed == []


def test_runtime_and_development_locks_agree_on_shared_packages():
    runtime, dev = pins(ROOT / "requirements.txt"), pins(ROOT / "requirements-dev.txt")
    assert {n: v for n, v in dev.items() if n in runtime and runtime[n] != v} == {}
    assert not {"pytest", "ruff", "schemathesis", "selenium"} & set(runtime)


def test_the_pinned_pandas_is_one_pyspark_supports(monkeypatch):
    import pandas
    from pyspark.sql.pandas.utils import require_minimum_pandas_version

    # given PySpark's own check, asked about the locked version
    monkeypatch.setattr(pandas, "__version__", pins(ROOT / "requirements.txt")["pandas"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # then it neither refuses it nor warns that it is not fully supported
        require_minimum_pandas_version()


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_reinstalls_the_venv_when_a_lock_changes(tmp_path):
    # given a project whose venv was installed after its locks were written
    shutil.copy(ROOT / "Makefile", tmp_path)
    for name in ("requirements.txt", "requirements-dev.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    stamp = tmp_path / ".venv" / ".installed"
    stamp.touch()

    def plan() -> str:
        return subprocess.run(["make", "-n", "venv"], cwd=tmp_path, capture_output=True, text=True).stdout

    assert "pip install" not in plan()
    # when a lock is newer than the stamp, then make installs the locks again, hashes checked
    for name in ("requirements.txt", "requirements-dev.txt"):
        newer = stamp.stat().st_mtime_ns + 1_000_000_000
        os.utime(tmp_path / name, ns=(newer, newer))
        assert "--require-hashes -r requirements.txt -r requirements-dev.txt" in plan()
        os.utime(stamp, ns=(newer + 1, newer + 1))
