"""Create the viewers and operators groups and the streams.operate_stream permission."""

from django.db import migrations


def create_roles(apps, schema_editor):
    from streams.roles import ensure_roles

    ensure_roles(apps)


class Migration(migrations.Migration):
    dependencies = [
        ("streams", "0001_initial"),
        ("partitions", "0002_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_roles, migrations.RunPython.noop)]
