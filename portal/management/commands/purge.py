"""`manage.py purge --dry-run` lists what the retention periods let go; `manage.py purge`
removes it (portal.services.retention)."""

from django.core.management.base import BaseCommand, CommandError

from portal.services.retention import RetentionError, StudyPlan, purge_plan, purge_run


class Command(BaseCommand):
    help = (
        "Remove conversation text, clinicians' free text and annotators' personal data of "
        "studies past their project's retention period; scores and figures stay."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="List what would go; change nothing."
        )
        parser.add_argument(
            "--force-without-export",
            action="store_true",
            help="Purge studies of which no archive or annotations export was ever taken.",
        )

    def handle(self, *args, dry_run: bool, force_without_export: bool, **options) -> None:
        plans = purge_plan()
        if not plans:
            self.stdout.write("No study is past its project's retention period.")
            return
        for plan in plans:
            self.stdout.write(describe(plan))
        if dry_run:
            self.stdout.write("Dry run: nothing was changed.")
            return
        try:
            done = purge_run(
                plans,
                actor=None,
                force_without_export=force_without_export,
                progress=self.stdout.write,
            )
        except RetentionError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"Purged {len(done)} studies; their figures and counts are kept.")


def describe(plan: StudyPlan) -> str:
    counts = plan.counts
    export = f"exported {plan.export['at'][:10]}" if plan.export else "NEVER EXPORTED"
    return (
        f"{plan.study.project.name} / {plan.study.name} (due since {plan.due_since:%Y-%m-%d}, "
        f"{export}): text of {counts['conversations']} conversations "
        f"({counts['events_with_text']} events), free text of {counts['assignments_with_text']} "
        f"annotations and {counts['adjudications_with_text']} adjudications, "
        f"personal data of {counts['people']} annotators"
    )
