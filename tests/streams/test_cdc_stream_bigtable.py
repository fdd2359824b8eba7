"""cdc_stream and Bigtable: its flags create a stream, its help names the endpoint variable."""

from __future__ import annotations

import pytest
from django.core.management import CommandError

from cdcweb.dashboard.management.commands.cdc_stream import Command
from streams.models import Stream
from tests.streams.test_cdc_stream import run

pytestmark = pytest.mark.django_db
BIGTABLE = ["--kind", "bigtable", "--project", "my-project", "--instance", "my-instance", "--table", "events"]


def test_create_takes_the_bigtable_flags():
    printed = run("create", "bt", *BIGTABLE, "--app-profile", "cdc", "--start", "-5m", "--end", "now")
    assert "table events via app profile cdc" in printed
    stream = Stream.objects.get(name="bt")
    assert stream.source_kind == "bigtable"
    assert stream.connection == {
        "project": "my-project", "instance": "my-instance", "table": "events", "app_profile": "cdc",
        "retention_hours": 24,
    }  # fmt: skip


def test_a_missing_app_profile_is_one_line_naming_the_flag():
    with pytest.raises(CommandError) as refused:
        run("create", "bt", *BIGTABLE)
    assert str(refused.value) == "--app-profile: this setting is required"
    assert not Stream.objects.exists()


def test_help_says_where_bigtable_is_reached():
    parser = Command().create_parser("manage.py", "cdc_stream")
    create = parser._subparsers._group_actions[0].choices["create"]
    text = create.format_help()
    assert "bigtable: --project --instance --table --app-profile [--retention-hours]" in text
    assert "BIGTABLE_EMULATOR_HOST=host:port" in text
