"""`manage.py token_create <username>`: a personal access token for the API, as the API
tokens page makes one (accounts.tokens.token_create: staff only, audited), printed once."""

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.models import TokenScope
from accounts.tokens import EXPIRY_DAYS, token_create


class Command(BaseCommand):
    help = "Create a personal access token for a researcher or admin and print it once."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="command line", help="What the token is for")
        parser.add_argument("--scope", choices=TokenScope.values, default=TokenScope.READ)
        parser.add_argument("--days", type=int, choices=EXPIRY_DAYS, default=30)
        parser.add_argument("--rate", type=int, help="Requests per minute (default: the site's)")

    def handle(self, *args, username, name, scope, days, rate, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.")
        try:
            token, raw = token_create(
                user=user, name=name, scope=scope, days=days, requests_per_minute=rate
            )
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from None
        self.stderr.write(
            f"Token {token.prefix}… for {username} ({scope}, until {token.expires_at:%Y-%m-%d}). "
            "It is shown only now: keep it somewhere safe."
        )
        self.stdout.write(raw)
