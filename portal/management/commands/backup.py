"""`manage.py backup DEST`: the database and DATA_DIR into the new folder DEST, with a manifest
of checksums (portal.services.backups)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from portal.services.backups import BackupError, backup_write


class Command(BaseCommand):
    help = "Back up the database and DATA_DIR into a new folder, with a manifest of checksums."

    def add_arguments(self, parser) -> None:
        parser.add_argument("destination", type=Path, help="A new (or empty) folder.")

    def handle(self, *args, destination: Path, **options) -> None:
        try:
            summary = backup_write(destination, progress=self.stdout.write)
        except BackupError as error:
            raise CommandError(str(error)) from None
        for name, digest in summary.files.items():
            self.stdout.write(f"  {name}  sha256 {digest}")
