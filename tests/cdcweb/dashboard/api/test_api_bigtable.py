"""A Bigtable stream through the API and the admin's create form: the same fields as the CLI."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from streams.models import Stream

BODY = {
    "name": "bt",
    "source_kind": "bigtable",
    "project": "my-project",
    "instance": "my-instance",
    "table": "events",
    "app_profile": "cdc",
    "heartbeat_ms": 2000,
    "start_at": "2026-01-01T00:00:00Z",
}


def test_the_api_creates_a_bigtable_stream_and_shows_its_settings(operator):
    created = operator.post("/api/v1/streams/", BODY, format="json")
    assert created.status_code == 201, created.content
    stream = Stream.objects.get(name="bt")
    assert stream.connection == {
        "project": "my-project", "instance": "my-instance", "table": "events", "app_profile": "cdc",
        "retention_hours": 24,
    }  # fmt: skip
    shown = operator.get(f"/api/v1/streams/{stream.pk}/").json()
    assert (shown["table"], shown["app_profile"]) == ("events", "cdc")


def test_the_api_names_each_bad_bigtable_setting(operator):
    blank = operator.post("/api/v1/streams/", {**BODY, "app_profile": ""}, format="json")
    assert blank.status_code == 400
    assert "blank" in str(blank.json()["app_profile"])
    too_long = operator.post("/api/v1/streams/", {**BODY, "retention_hours": 200}, format="json")
    assert too_long.status_code == 400
    assert "24 to 168" in str(too_long.json()["retention_hours"])
    bad = operator.post("/api/v1/streams/", {**BODY, "instance": "Bad_Instance"}, format="json")
    assert bad.status_code == 400
    assert "an instance id is 6-33 lowercase letters" in str(bad.json()["instance"])
    assert not Stream.objects.exists()


@pytest.mark.django_db
def test_the_admin_create_form_takes_the_bigtable_settings(client):
    client.force_login(User.objects.create_superuser("root", password="pw"))
    form = client.get("/admin/streams/stream/add/?source_kind=bigtable").content.decode()
    assert "App profile" in form
    assert "app profile to read through; it must use single-cluster routing" in form
