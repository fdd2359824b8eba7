"""Issue, list and revoke a user's API tokens (for scripts and curl); only digests are stored."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from cdcweb.accounts import tokens


class Command(BaseCommand):
    help = (
        "Print a new API token of USER (Authorization: Token <token>), valid CDC_TOKEN_DAYS days "
        "unless --days says otherwise. The token is shown once: only its digest is stored. "
        "--list shows the user's tokens, --revoke PREFIX deletes one, --revoke-all every one."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--days", type=int, help="lifetime of the new token in days (0: never expires)")
        parser.add_argument(
            "--list", dest="list_tokens", action="store_true", help="list the user's tokens, issue none"
        )
        parser.add_argument("--revoke", metavar="PREFIX", help="delete the token that starts with PREFIX")
        parser.add_argument("--revoke-all", action="store_true", help="delete every token of the user")
        parser.add_argument(
            "--rotate", action="store_true", help="delete every token of the user, then print a new one"
        )

    def handle(
        self, *args, username: str, days, list_tokens: bool, revoke, revoke_all: bool, rotate: bool, **_
    ):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        purged = tokens.purge_expired()
        if purged:
            self.stderr.write(f"deleted {purged} expired token(s)")
        if list_tokens:
            for token in tokens.of_user(user):
                expiry = token.expiry.isoformat() if token.expiry else "never"
                self.stdout.write(f"{token.token_key}  created {token.created.isoformat()}  expires {expiry}")
            return
        if revoke:
            try:
                if not tokens.revoke(user, revoke):
                    raise CommandError(f"{username} has no token starting with {revoke!r}")
            except ValueError as error:
                raise CommandError(str(error)) from None
            self.stderr.write(f"revoked {username}'s token {revoke}")
            return
        if revoke_all or rotate:
            self.stderr.write(f"revoked {tokens.revoke_all(user)} token(s) of {username}")
            if revoke_all:
                return
        self._issue(user, days)

    def _issue(self, user, days: int | None) -> None:
        if days is not None and days < 0:
            raise CommandError("--days must be 0 (never expires) or more")
        lifetime = tokens.default_lifetime() if days is None else (timedelta(days=days) if days else None)
        token, text = tokens.issue(user, lifetime)
        expiry = token.expiry.isoformat() if token.expiry else "never"
        self.stderr.write(
            f"expires: {expiry} (shown once; revoke: cdc_token {user.get_username()} --revoke ...)"
        )
        self.stdout.write(text)
