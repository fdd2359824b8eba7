"""A throwaway kind, as a maintainer would add one: this folder, and one register() line.

It reads nothing (its Source refuses); it exists to show that create (API, admin, CLI),
the pages and the API schema accept a new kind with no other change
(tests/cdcweb/dashboard/api/test_api_new_kind.py).
"""

from __future__ import annotations

from typing import Any

from partitions.sources.base import PermanentSourceError, Setting, SettingsError
from partitions.sources.kinds import OwnTokens, ReadKind


class ThrowawayKind(OwnTokens, ReadKind):
    """Files of change records in a bucket (pretend): fixed partitions, one per file prefix."""

    name = "throwaway_files"
    label = "Throwaway files"
    read_method = "throwaway-files"
    lineage = False
    windows = False
    settings = (
        Setting("bucket", "Bucket", help="where the files are", cli="--bucket"),
        Setting("prefixes", "Prefixes", type="list", required=False, default=(), help="one partition each"),
    )

    def clean(self, values: dict[str, Any]) -> dict[str, Any]:
        """Return the bucket and prefixes, or refuse a bucket that is not lowercase letters and dashes."""
        bucket = str(values.get("bucket") or "").strip()
        if not bucket or not bucket.replace("-", "").isalpha() or not bucket.islower():
            raise SettingsError({"bucket": "a bucket is lowercase letters and dashes"})
        prefixes = values.get("prefixes") or []
        if isinstance(prefixes, str):
            prefixes = [p.strip() for p in prefixes.split(",") if p.strip()]
        return {"bucket": bucket, "prefixes": list(prefixes)}

    def describe(self, values: dict[str, Any]) -> str:
        """Return the bucket and its prefixes in one line."""
        return f"gs://{values.get('bucket')} ({len(values.get('prefixes') or [])} prefixes)"

    def connect(self, values: dict[str, Any]):
        """Refuse: the throwaway kind reads nothing."""
        raise PermanentSourceError("the throwaway kind reads nothing", code="THROWAWAY")


KIND = ThrowawayKind()
