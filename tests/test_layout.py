"""tests/ mirrors the code's folders: every folder of tests has its counterpart in an app.

tests/partitions/sources/bigtable/ tests partitions/sources/bigtable/, tests/cdcweb/ the
modules at cdcweb's root. A test folder with no such counterpart fails here, so that the
mirror holds as folders are added, moved or removed.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]
APPS = ("cdcweb", "partitions", "spark_tasks", "streams")
# The folders of tests/ that mirror no code, and why.
NOT_MIRRORS = {
    "factories": "shared test support (rows through the ORM, fixtures, wait_for), no tests",
    "partitions/sources/throwaway": "the kind the new-kind test registers: the folder a new kind adds",
}


def folders(tests: Path) -> list[PurePosixPath]:
    """Return every folder under tests, relative to it, caches left out."""
    found = (PurePosixPath(p.relative_to(tests).as_posix()) for p in tests.rglob("*") if p.is_dir())
    return sorted(f for f in found if not any(part.startswith((".", "__pycache__")) for part in f.parts))


def unmirrored(root: Path) -> list[str]:
    """Return the folders of root/tests with no counterpart folder in an app of root."""
    excepted = {PurePosixPath(name) for name in NOT_MIRRORS}
    return [
        str(folder)
        for folder in folders(root / "tests")
        if not excepted & {folder, *folder.parents}
        and not (folder.parts[0] in APPS and (root / folder).is_dir())
    ]


def test_every_test_folder_has_its_counterpart_in_the_code():
    assert unmirrored(ROOT) == [], "move these tests beside the code they test, or say why in NOT_MIRRORS"


def test_the_exceptions_are_folders_of_tests_that_mirror_nothing():
    for name in NOT_MIRRORS:
        assert (ROOT / "tests" / name).is_dir(), f"tests/{name} is gone: drop it from NOT_MIRRORS"
        assert not (ROOT / name).is_dir(), f"{name} exists in the code now: drop it from NOT_MIRRORS"


def test_a_folder_without_counterpart_or_outside_the_apps_is_named(tmp_path):
    for folder in ("cdcweb/alerts", "streams"):
        (tmp_path / folder).mkdir(parents=True)
    for folder in ("cdcweb/alerts/api", "streams", "web", "factories/x", "partitions/sources/throwaway"):
        (tmp_path / "tests" / folder).mkdir(parents=True)
    (tmp_path / "web").mkdir()  # a folder of the repository, but no app's
    (tmp_path / "tests" / "streams" / "__pycache__").mkdir()

    assert unmirrored(tmp_path) == ["cdcweb/alerts/api", "partitions", "partitions/sources", "web"]
