"""Create or complete the viewers and operators groups (the migration does it once too)."""

from __future__ import annotations

from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError

from streams.roles import OPERATORS, VIEWERS, ensure_roles


class Command(BaseCommand):
    help = "Create the viewers and operators groups; optionally put users in one of them."

    def add_arguments(self, parser):
        parser.add_argument(
            "--viewer", action="append", default=[], metavar="USER", help="add USER to viewers"
        )
        parser.add_argument(
            "--operator", action="append", default=[], metavar="USER", help="add USER to operators"
        )

    def handle(self, *args, **options):
        ensure_roles(apps)
        for group_name, names in ((VIEWERS, options["viewer"]), (OPERATORS, options["operator"])):
            group = Group.objects.get(name=group_name)
            for name in names:
                user = get_user_model().objects.filter(username=name).first()
                if user is None:
                    raise CommandError(f"no user named {name!r}")
                user.groups.add(group)
                self.stdout.write(f"{name} is now in {group_name}")
        self.stdout.write(f"groups {VIEWERS} and {OPERATORS} are ready")
