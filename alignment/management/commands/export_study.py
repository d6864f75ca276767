"""Write a study archive: `manage.py export_study <study id> [--out PATH] [--with-usernames]`.

Runs in this process (no worker needed) with a progress bar; the same service as the
"Export archive" button (alignment.services.archive).
"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from alignment.services.archive import study_archive_write
from alignment.services.archive.export import archive_file_name
from annotation.models import Study
from audit.services import audit_record


class Command(BaseCommand):
    help = "Export a clinician study, whole, as one archive file (.zip)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("study_id", type=int)
        parser.add_argument("--out", help="file to write (default: study-<name>-<time>.zip here)")
        parser.add_argument(
            "--with-usernames",
            action="store_true",
            help="write usernames (default: pseudonyms A1, A2, ... and S1, ... for staff)",
        )

    def handle(self, *args, study_id: int, out: str | None, with_usernames: bool, **options):
        study = Study.objects.filter(pk=study_id).first()
        if study is None:
            raise CommandError(f"There is no study {study_id}.")
        path = Path(out or archive_file_name(study))
        if path.is_dir():
            path = path / archive_file_name(study)
        if not path.parent.is_dir():
            raise CommandError(f"{path.parent} is not a folder.")
        with tqdm(total=1, unit="row", desc=f"study {study.pk}", dynamic_ncols=True) as bar:

            def progress(done: int, total: int) -> None:
                bar.total = total
                bar.update(done - bar.n)

            manifest = study_archive_write(
                study, path, with_usernames=with_usernames, progress=progress
            )
        audit_record(
            actor=None,
            action="study.archive_exported",
            target=study,
            after={"file": str(path), "with_usernames": with_usernames},
            note="manage.py export_study",
        )
        rows = sum(manifest.counts.values())
        self.stdout.write(f"Wrote {path} ({path.stat().st_size / 1e6:.1f} MB, {rows} rows).")
