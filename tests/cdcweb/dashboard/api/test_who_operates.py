"""One rule says who operates streams: the pages, the API and the admin's actions all follow it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from streams.access import can_operate
from streams.models import Stream
from tests.factories.api import token_for
from tests.factories.lineage import make_lineage_stream

# user -> may operate
MATRIX = {
    "anonymous": False,
    "viewer": False,
    "staff viewer": False,
    "operator": True,
    "superuser": True,
    "granted the permission alone": True,
    "inactive operator": False,
}


def _make_user(name: str, users: dict) -> User | None:
    """Return a user of the matrix, every one of them staff so that the admin is open to them."""
    if name == "anonymous":
        return None
    base = {"viewer": "viewer", "staff viewer": "viewer", "operator": "operator", "superuser": "superuser"}
    if name in base:
        user = users[base[name]]
    else:
        user = User.objects.create_user(name.replace(" ", "-"), password="pw")
        if name == "inactive operator":
            user.groups.set(users["operator"].groups.all())
            user.is_active = False
        else:
            codenames = ("view_stream", "operate_stream")
            user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    user.is_staff = name != "viewer"
    user.save()
    return User.objects.get(pk=user.pk)


def _running() -> Stream:
    stream = make_lineage_stream("target", 3)
    Stream.objects.filter(pk=stream.pk).update(state=Stream.State.RUNNING)
    return stream


def _state(stream: Stream) -> str:
    return Stream.objects.get(pk=stream.pk).state


@pytest.mark.parametrize("name", list(MATRIX))
def test_the_pages_the_api_and_the_admin_agree_on_who_operates(users, name):
    user, expected = _make_user(name, users), MATRIX[name]
    assert can_operate(user) is expected
    # through the API
    stream, api = _running(), Client()
    headers = {"HTTP_AUTHORIZATION": f"Token {token_for(user)}"} if user else {}
    answer = api.post(f"/api/v1/streams/{stream.pk}/pause/", **headers)
    assert (answer.status_code == 200) is expected, answer.content
    assert (_state(stream) == Stream.State.DRAINING) is expected
    # through the stream page's action
    Stream.objects.filter(pk=stream.pk).update(state=Stream.State.RUNNING)
    web = Client()
    if user is not None:
        web.force_login(user)  # an inactive user's session is refused all the same
    answer = web.post(reverse("stream-action", args=[stream.pk, "pause"]))
    assert (_state(stream) == Stream.State.DRAINING) is expected
    assert answer.status_code in ((302,) if expected else (302, 403))
    # through the admin's action
    Stream.objects.filter(pk=stream.pk).update(state=Stream.State.RUNNING)
    web.post(
        reverse("admin:streams_stream_changelist"),
        {"action": "pause_streams", "_selected_action": [stream.pk]},
    )
    assert (_state(stream) == Stream.State.DRAINING) is expected


def test_the_admin_offers_actions_only_to_operators(users):
    _running()
    viewer = _make_user("staff viewer", users)
    client = Client()
    client.force_login(viewer)
    page = client.get(reverse("admin:streams_stream_changelist")).content.decode()
    assert "pause_streams" not in page
    client.force_login(users["operator"])
    users["operator"].is_staff = True
    users["operator"].save()
    assert "pause_streams" in client.get(reverse("admin:streams_stream_changelist")).content.decode()
