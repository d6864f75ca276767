"""Importing HealthBench-format JSONL: the conversations become an imported run
(benchmark.services.imports, shared by every importer) and the physician criteria become expert
criteria of each conversation, in one transaction: a file with any bad line saves nothing.

The imported conversations are then used like any other: generate instance rubrics for the run,
score them, run near-miss studies on them and measure coverage against the criteria imported
here.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from benchmark.models import Run
from benchmark.services.imports import ImportRefused, conversations_import
from common.text_files import NotText, decode_text
from rubric_lab.engine import healthbench
from rubric_lab.models import ExpertCriteriaUpload, ExpertCriterion


class HealthBenchRefused(ValueError):
    """A file that cannot be imported; `problems` lists each one, with its line."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class HealthBenchImport:
    run: Run
    upload: ExpertCriteriaUpload
    conversations: int
    with_completion: int  # conversations with a reply to score, of either kind
    with_ideal: int  # ... whose reply is the physicians' ideal completion
    left_out: int  # rows outside the source's subset, when only that subset was imported


def healthbench_text(data: bytes, filename: str) -> str:
    """The file's bytes as text, or HealthBenchRefused saying why they are not."""
    try:
        return decode_text(data)
    except NotText as refused:
        if refused.binary:
            raise HealthBenchRefused([f"{filename} is a binary file, not JSON Lines"]) from None
        raise HealthBenchRefused(
            [f"{filename} is not UTF-8 text (first bad byte on line {refused.line})"]
        ) from None


def healthbench_import(
    *, filename: str, text: str, name: str = "", source_subset: bool = False, user=None
) -> HealthBenchImport:
    """Check every line, then store the run and its criteria; HealthBenchRefused names every
    problem of the file (with its line) and nothing is saved."""
    rows, problems = healthbench.parse(text)
    if problems:
        raise HealthBenchRefused(problems)
    chosen = healthbench.source_subset(rows) if source_subset else rows
    if not chosen:
        raise HealthBenchRefused(
            [f"none of the {len(rows)} rows has 8 to 10 criteria across three or more axes"]
        )
    source = f"{healthbench.SOURCE_LABEL}: {filename}"
    try:
        with transaction.atomic():
            imported = conversations_import(
                name=name.strip() or filename,
                source=source,
                conversations=[row.conversation for row in chosen],
                responder=healthbench.RESPONDER,
                user=user,
            )
            upload = _criteria_save(imported, chosen, filename, user)
    except ImportRefused as refused:
        raise HealthBenchRefused(refused.problems) from None
    return HealthBenchImport(
        run=imported.run,
        upload=upload,
        conversations=len(chosen),
        with_completion=sum(row.has_completion for row in chosen),
        with_ideal=sum(row.reply == healthbench.IDEAL_COMPLETION for row in chosen),
        left_out=len(rows) - len(chosen),
    )


def _criteria_save(imported, rows, filename: str, user) -> ExpertCriteriaUpload:
    upload = ExpertCriteriaUpload.objects.create(
        benchmark_set=imported.run.benchmark_set,
        filename=filename[:200],
        criterion_count=sum(len(row.criteria) for row in rows),
        created_by=user,
    )
    ExpertCriterion.objects.bulk_create(
        ExpertCriterion(
            conversation=imported.conversations[row.prompt_id],
            upload=upload,
            text=criterion.text,
            weight=criterion.points,
            axis=criterion.axis[:60],
            tags=list(criterion.tags),
        )
        for row in rows
        for criterion in row.criteria
    )
    return upload


def import_summary(imported: HealthBenchImport) -> str:
    """One sentence for the page and the command."""
    left_out = (
        f"; {imported.left_out} rows outside the source's subset were left out"
        if imported.left_out
        else ""
    )
    own = imported.with_completion - imported.with_ideal
    replies = (
        f": {own} the row's completion, {imported.with_ideal} the physicians' ideal completion"
        if imported.with_ideal
        else ""
    )
    return (
        f"Imported {imported.conversations} conversations ({imported.with_completion} with a "
        f"reply to score{replies}) and {imported.upload.criterion_count} physician criteria as "
        f"run {imported.run.name!r} (id {imported.run.pk}){left_out}."
    )
