"""Export a rubric-lab job's results from the command line:
`manage.py lab_export KIND ID [--format csv|md|tex|jsonl] [--units] [--against ID] [--out PATH]`.

The result table (per perturbation type, per case and axis, per arm) as CSV, Markdown or
LaTeX - the same files the job pages offer - or every unit of work (pairs, coverage cases,
refinements, rubrics) as JSON Lines or CSV. Recorded in the audit trail (`lab.exported`).
"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from audit.services import audit_record
from rubric_lab.management.lab_cli import object_or_error
from rubric_lab.models import CoverageRun, GenerationJob, RefineStudy, SensitivityStudy
from rubric_lab.services import coverage, exports, pipeline, refine, sensitivity

# kind -> (model, label, result table writer or None, unit records)
KINDS = {
    "sensitivity": (
        SensitivityStudy,
        "sensitivity study",
        sensitivity.study_export,
        sensitivity.pair_records,
    ),
    "coverage": (CoverageRun, "coverage run", coverage.coverage_export, coverage.case_records),
    "refine": (RefineStudy, "refine study", refine.refine_export, refine.refinement_records),
    "rubrics": (GenerationJob, "generation job", None, pipeline.rubric_records),
}
TABLE_FORMATS = tuple(exports.FORMATS)


class Command(BaseCommand):
    help = (
        "Export a sensitivity study, coverage run or refine study's result table (csv, md, "
        "tex), or its units of work (--units, or --format jsonl), or a generation job's "
        "rubrics (kind rubrics: jsonl or csv); `coverage ID --against ID` exports the "
        "McNemar comparison of two coverage runs."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("kind", choices=list(KINDS))
        parser.add_argument("id", type=int)
        parser.add_argument(
            "--format",
            choices=[*TABLE_FORMATS, "jsonl"],
            default="csv",
            help="csv, md or tex for the result table; jsonl (or csv with --units) for units",
        )
        parser.add_argument("--units", action="store_true", help="one row per unit of work")
        parser.add_argument(
            "--against",
            type=int,
            default=None,
            metavar="COVERAGE_RUN_ID",
            help="coverage only: the McNemar comparison with this run instead",
        )
        parser.add_argument(
            "--out", type=Path, default=None, help="file to write (default: stdout)"
        )

    def handle(self, *args, kind: str, id: int, **opts) -> None:
        model, label, table, records = KINDS[kind]
        job = object_or_error(model, id, label)
        suffix = opts["format"]
        if opts["against"] is not None:
            if kind != "coverage" or suffix not in TABLE_FORMATS:
                raise CommandError("--against compares two coverage runs as csv, md or tex.")
            other = object_or_error(CoverageRun, opts["against"], "coverage run")
            text = coverage.comparison_export(job, other, suffix)
        elif opts["units"] or suffix == "jsonl" or table is None:
            if suffix not in exports.RECORD_FORMATS:
                raise CommandError(f"Units are written as jsonl or csv, not {suffix}.")
            text = exports.records_export(records(job), suffix)
        else:
            text = table(job, suffix)
        self._write(text, opts["out"])
        audit_record(
            actor=None,
            action="lab.exported",
            target=job,
            note=f"{kind} {id} as {suffix}"
            + (" (units)" if opts["units"] else "")
            + (f" against {opts['against']}" if opts["against"] else "")
            + (f" to {opts['out']}" if opts["out"] else " to standard output"),
        )

    def _write(self, text: str, out: Path | None) -> None:
        if out is None:
            self.stdout.write(text, ending="")
            return
        out.write_text(text, encoding="utf-8", newline="")
        self.stderr.write(f"Wrote {out}.")
