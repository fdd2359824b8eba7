"""The two roles of cdcweb as Django groups: viewers read, operators also change and act."""

from __future__ import annotations

VIEWERS = "viewers"
OPERATORS = "operators"
OPERATE = ("operate_stream", "Can start, pause, resume and recover a stream")
# (app_label, model) pairs whose rows every role may read.
READABLE = (
    ("streams", "stream"),
    ("streams", "streamtransition"),
    ("streams", "streamerror"),
    ("partitions", "partition"),
    ("partitions", "partitionedge"),
    ("partitions", "lagsample"),
)
OPERATOR_CODENAMES = ("add_stream", "change_stream", "delete_stream", OPERATE[0])


def ensure_roles(apps) -> None:
    """Create (or complete) the viewers and operators groups; safe to run any number of times.

    `apps` is a migration's historical registry or django.apps.apps, so the same
    code serves the data migration and the cdc_roles command.
    """
    from django.contrib.auth.management import create_permissions

    for label in ("streams", "partitions"):
        config = apps.get_app_config(label)
        config.models_module = getattr(config, "models_module", None) or True  # else skipped
        create_permissions(config, apps=apps, verbosity=0)
    content_type = apps.get_model("contenttypes", "ContentType")
    permission = apps.get_model("auth", "Permission")
    group = apps.get_model("auth", "Group")
    stream_type, _ = content_type.objects.get_or_create(app_label="streams", model="stream")
    permission.objects.get_or_create(
        content_type=stream_type, codename=OPERATE[0], defaults={"name": OPERATE[1]}
    )
    readable = [
        permission.objects.get(content_type__app_label=app, codename=f"view_{model}")
        for app, model in READABLE
    ]
    operate = list(permission.objects.filter(content_type=stream_type, codename__in=OPERATOR_CODENAMES))
    group.objects.get_or_create(name=VIEWERS)[0].permissions.add(*readable)
    group.objects.get_or_create(name=OPERATORS)[0].permissions.add(*readable, *operate)
