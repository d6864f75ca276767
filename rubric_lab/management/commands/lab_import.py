"""Import HealthBench-format JSONL as an imported run with its physician criteria:
`manage.py lab_import FILE [--name NAME] [--source-subset]`."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from rubric_lab.services import imports


class Command(BaseCommand):
    help = (
        "Import a HealthBench-format JSONL file (prompt, completion, rubrics, example_tags, "
        "prompt_id per line) as an imported run whose conversations carry their physicians' "
        "criteria. Every line is checked first; nothing is saved unless the file is clean."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--name", default="", help="name of the run (default: the file's)")
        parser.add_argument(
            "--source-subset",
            action="store_true",
            help="import only the rows the source evaluated on: 8 to 10 physician criteria "
            "across at least three axes",
        )

    def handle(self, *args, file: Path, name: str, source_subset: bool, **options) -> None:
        if not file.is_file():
            raise CommandError(f"There is no file {file}.")
        try:
            text = imports.healthbench_text(file.read_bytes(), file.name)
            imported = imports.healthbench_import(
                filename=file.name, text=text, name=name, source_subset=source_subset
            )
        except imports.HealthBenchRefused as refused:
            count = len(refused.problems)
            lines = "\n".join(f"  {problem}" for problem in refused.problems)
            raise CommandError(
                f"{file.name} was not imported; nothing was saved. {count} problem"
                f"{'s' if count != 1 else ''}:\n{lines}"
            ) from None
        self.stdout.write(self.style.SUCCESS(imports.import_summary(imported)))
