"""`manage.py forget_person USERNAME`: an annotator's request to be forgotten; their
annotations stay as pseudonymous rows (portal.services.retention.person_forget)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from portal.services.retention import RetentionError, person_forget


class Command(BaseCommand):
    help = "Anonymise one annotator's account; their annotations stay, under a pseudonym."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")

    def handle(self, *args, username: str, **options) -> None:
        person = get_user_model().objects.filter(username=username).first()
        if person is None:
            raise CommandError(f"No account is named {username!r}.")
        try:
            person_forget(person, actor=None)
        except RetentionError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"{username} is now {person.username}; their annotations are kept.")
