"""Write a shareable static report: `manage.py report_bundle <job or run ...> --out DIR
[--include-clinician-text]`.

Runs in this process with a progress bar; the same service as the "Static report" button on a
scoring job's report (alignment.services.bundle).
"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from alignment.services.bundle import BundleError, bundle_jobs, report_bundle_write
from audit.services import audit_record


class Command(BaseCommand):
    help = "Write scoring reports (several: with a leaderboard) as a folder that opens from disk."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "targets",
            nargs="+",
            help="scoring job ids (12 or job:12) or runs (run:3: its newest finished scoring job)",
        )
        parser.add_argument("--out", required=True, help="folder to write (new, or empty)")
        parser.add_argument(
            "--include-clinician-text",
            action="store_true",
            help="include the clinicians' written feedback and comments (never their names)",
        )

    def handle(self, *args, targets: list[str], out: str, include_clinician_text: bool, **options):
        try:
            jobs = bundle_jobs(targets)
            with tqdm(
                total=1, unit="conversation", desc="report bundle", dynamic_ncols=True
            ) as bar:

                def progress(done: int, total: int) -> None:
                    bar.total = total
                    bar.update(done - bar.n)

                result = report_bundle_write(
                    jobs,
                    Path(out),
                    include_clinician_text=include_clinician_text,
                    progress=progress,
                )
        except BundleError as error:
            raise CommandError(str(error)) from error
        for job in jobs:
            audit_record(
                actor=None,
                action="report.bundle_written",
                target=job,
                after={"folder": str(result.folder), "clinician_text": include_clinician_text},
                note="manage.py report_bundle",
            )
        self.stdout.write(
            f"Wrote {result.folder / 'index.html'} ({result.conversations} conversations, "
            f"{len(result.manifest['files'])} files listed in manifest.json)."
        )
