"""`manage.py restore SRC`: put a backup folder written by `manage.py backup` back, after
checking its checksums; refuses a database that already holds data unless --force."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from portal.services.backups import BackupError, backup_restore


class Command(BaseCommand):
    help = "Restore the database and DATA_DIR from a backup folder (see manage.py backup)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("source", type=Path, help="A folder written by manage.py backup.")
        parser.add_argument(
            "--force",
            action="store_true",
            help="Replace a database that already holds data (everything in it is lost).",
        )

    def handle(self, *args, source: Path, force: bool, **options) -> None:
        try:
            backup_restore(source, force=force, progress=self.stdout.write)
        except BackupError as error:
            raise CommandError(str(error)) from None
