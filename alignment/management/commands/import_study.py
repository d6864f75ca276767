"""Re-create a study from its archive: `manage.py import_study <archive.zip>`.

Checks the whole archive first (format, sha256 of every member, every row) and writes it in
one transaction; the problem is named and nothing is saved when a check fails. Same service
as the "Import a study archive" page (alignment.services.archive).
"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from alignment.services.archive import ArchiveError, study_archive_import


class Command(BaseCommand):
    help = "Import a study archive (.zip) written by export_study or the Export archive button."

    def add_arguments(self, parser) -> None:
        parser.add_argument("archive")

    def handle(self, *args, archive: str, **options):
        path = Path(archive)
        if not path.is_file():
            raise CommandError(f"{path} is not a file.")
        with tqdm(total=1, unit="row", desc=path.name, dynamic_ncols=True) as bar:

            def progress(done: int, total: int) -> None:
                bar.total = total
                bar.update(done - bar.n)

            try:
                imported = study_archive_import(path, archive_name=path.name, progress=progress)
            except ArchiveError as error:
                raise CommandError(f"Nothing was imported: {error}") from None
        study = imported.study
        self.stdout.write(
            f"Imported study {study.pk} {study.name!r} in project {study.project.name!r} "
            f"(locked; {imported.rows} rows, {len(imported.people)} inactive accounts)."
        )
