"""Coverage (CIA) of expert criteria by generated instance rubrics.

Expert criteria are uploaded per benchmark set as CSV or JSON (`case` = the entry's index in
the set, `criterion` = text, optional integer `weight` in [-10, 10]); every bad row is named
and nothing is saved unless the whole file is good. An upload replaces the criteria of every
case it names. A coverage run judges each instance rubric of a generation job whose case has
expert criteria: decompose (one call), entail (one call), then recall / precision / F1.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pandas as pd
from django.db import transaction

from benchmark.engine.chat import ProviderError
from benchmark.engine.providers.model_strings import check_model_string
from benchmark.engine.structured import request_json
from benchmark.models import BenchmarkSet
from benchmark.services.leases import LeasedTask
from rubric_lab.engine import coverage
from rubric_lab.engine.rubric import MAX_WEIGHT, MIN_WEIGHT
from rubric_lab.models import (
    CoverageCase,
    CoverageRun,
    ExpertCriteriaUpload,
    ExpertCriterion,
    GenerationJob,
    InstanceRubric,
    WorkStatus,
)
from rubric_lab.services import budgets, exports
from rubric_lab.services import evaluation_work as work

MAX_CRITERION_CHARS = 2000
MAX_CONCURRENCY = 256
COLUMNS = ("case", "criterion", "weight")


class UploadError(ValueError):
    """An upload that cannot be saved; `errors` names every bad row."""

    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = errors


class CoverageError(ValueError):
    """A coverage run cannot be launched as asked; the message says why."""


# --- expert criteria ------------------------------------------------------------------------


def expert_rows(filename: str, content: str) -> list[dict[str, Any]]:
    """Rows of a CSV or JSON upload as dicts, each with its 1-based `row` number."""
    if filename.lower().endswith(".json"):
        try:
            data = json.loads(content)
        except json.JSONDecodeError as error:
            message = f"the file is not valid JSON ({error.msg}, line {error.lineno})"
            raise UploadError([message]) from None
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            raise UploadError(["the JSON file must hold a list of objects"])
        return [{**item, "row": number} for number, item in enumerate(data, start=1)]
    if not filename.lower().endswith(".csv"):
        raise UploadError(["the file must end in .csv or .json"])
    reader = csv.DictReader(io.StringIO(content))
    missing = [c for c in ("case", "criterion") if c not in (reader.fieldnames or [])]
    if missing:
        raise UploadError([f"the CSV header lacks the column(s): {', '.join(missing)}"])
    # Row numbers count the header, as a spreadsheet shows them.
    return [{**item, "row": number} for number, item in enumerate(reader, start=2)]


def expert_criteria_check(
    benchmark_set: BenchmarkSet, rows: list[dict[str, Any]]
) -> list[tuple[int, str, int | None]]:
    """(entry id, text, weight) per row, or UploadError naming every bad row."""
    entries = dict(benchmark_set.entries.values_list("index", "pk"))
    errors, checked = [], []
    for row in rows:
        problems, case = [], _integer(row.get("case"))
        if case is None or case not in entries:
            problems.append(f"case {row.get('case')!r} is not an entry index of this set")
        text = str(row.get("criterion") or "").strip()
        if not text or len(text) > MAX_CRITERION_CHARS:
            problems.append(f"criterion must be text of 1 to {MAX_CRITERION_CHARS} characters")
        weight = row.get("weight")
        weight = None if weight in (None, "") else _integer(weight)
        if row.get("weight") not in (None, "") and (
            weight is None or not MIN_WEIGHT <= weight <= MAX_WEIGHT or weight == 0
        ):
            problems.append(f"weight must be a non-zero integer in [{MIN_WEIGHT}, {MAX_WEIGHT}]")
        if problems:
            errors.append(f"row {row['row']}: {'; '.join(problems)}")
        else:
            checked.append((entries[case], text, weight))
    if errors or not checked:
        raise UploadError(errors or ["the file holds no criteria"])
    return checked


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        return None


@transaction.atomic
def expert_criteria_upload(
    *, benchmark_set: BenchmarkSet, filename: str, content: str, user=None
) -> ExpertCriteriaUpload:
    checked = expert_criteria_check(benchmark_set, expert_rows(filename, content))
    ExpertCriterion.objects.filter(entry_id__in={entry for entry, _, _ in checked}).delete()
    upload = ExpertCriteriaUpload.objects.create(
        benchmark_set=benchmark_set, filename=filename[:200], criterion_count=len(checked),
        created_by=user,
    )  # fmt: skip
    ExpertCriterion.objects.bulk_create(
        ExpertCriterion(entry_id=entry, upload=upload, text=text, weight=weight)
        for entry, text, weight in checked
    )
    return upload


# --- coverage runs --------------------------------------------------------------------------


@transaction.atomic
def coverage_launch(
    *,
    generation_job: GenerationJob,
    judge_model: str,
    name: str = "",
    use_cache: bool = True,
    concurrency: int = 8,
    cost_limit_usd: Decimal | None = None,
    user=None,
) -> CoverageRun:
    try:
        check_model_string(judge_model, purpose="coverage_entail")
    except ProviderError as error:
        raise CoverageError(str(error)) from None
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise CoverageError(f"Concurrency must lie between 1 and {MAX_CONCURRENCY}.")
    rubrics = list(
        InstanceRubric.objects.filter(
            generation__job=generation_job, conversation__entry__expert_criteria__isnull=False
        ).distinct()
    )
    if not rubrics:
        raise CoverageError(
            f"No rubric of {generation_job.name!r} belongs to a case with expert criteria; "
            "upload expert criteria for those cases first."
        )
    run = CoverageRun(
        name=name.strip() or f"Coverage of {generation_job.name}", generation_job=generation_job,
        judge_model=judge_model, use_cache=use_cache, concurrency=concurrency,
        cost_limit_usd=cost_limit_usd, created_by=user,
    )  # fmt: skip
    if refusal := budgets.launch_refusal(run):
        raise CoverageError(refusal)
    run.save()
    CoverageCase.objects.bulk_create(CoverageCase(coverage_run=run, rubric=r) for r in rubrics)
    return run


def _cases(run: CoverageRun):
    return run.cases.all()


def coverage_dispatch(run: CoverageRun, send: Callable[[list[LeasedTask]], None]):
    return work.work_dispatch(CoverageRun, run, _cases, send)


def coverage_run_id_of(case_id: int) -> int | None:
    return CoverageCase.objects.filter(pk=case_id).values_list("coverage_run_id", flat=True).first()


def running_coverage_ids() -> list[int]:
    return work.running_ids(CoverageRun)


def coverage_case_execute(case_id: int, token: str | None = None) -> bool:
    ran = work.work_execute(
        CoverageCase, case_id, token, _perform, use_cache=lambda row: row.coverage_run.use_cache
    )
    run = CoverageRun.objects.filter(pk=coverage_run_id_of(case_id)).first()
    if run is not None:
        work.job_finish_if_done(CoverageRun, run, _cases)
    return ran


def _perform(row: CoverageCase, client) -> dict:
    model = row.coverage_run.judge_model
    expert = list(
        ExpertCriterion.objects.filter(entry=row.rubric.conversation.entry).values_list(
            "text", flat=True
        )
    )
    generated = list(row.rubric.criteria.order_by("index").values_list("text", flat=True))
    sample = f"coverage:{row.coverage_run_id}/rubric:{row.rubric_id}"
    decomposition = work.stage(
        "decompose",
        lambda: request_json(
            client,
            coverage.decompose_request(expert, model=model, sample=sample),
            lambda data: coverage.validate_constraints(data, criteria=len(expert)),
        ),
    ).data["constraints"]
    texts = [c["text"] for c in decomposition]
    judgements = work.stage(
        "entail",
        lambda: request_json(
            client,
            coverage.entail_request(texts, generated, model=model, sample=sample),
            lambda data: coverage.validate_judgements(
                data, constraints=len(texts), generated=len(generated)
            ),
        ),
    ).data["judgements"]
    counts = coverage.coverage_of(judgements, generated=len(generated))
    return {
        "status": WorkStatus.DONE, "expert_criteria": expert, "constraints": decomposition,
        "judgements": judgements, "constraint_count": counts.constraints,
        "entailed": counts.entailed, "generated": counts.generated, "matched": counts.matched,
    }  # fmt: skip


def case_coverage(row: CoverageCase) -> coverage.Coverage:
    return coverage.Coverage(row.constraint_count, row.entailed, row.generated, row.matched)


def coverage_results(run: CoverageRun) -> dict:
    """Per-case rows (done cases) and the overall figures, micro and macro."""
    rows = list(
        run.cases.filter(status=WorkStatus.DONE).select_related("rubric__conversation__entry")
    )
    return {
        "cases": [(row, case_coverage(row)) for row in rows],
        "overall": coverage.overall([case_coverage(row) for row in rows]) if rows else None,
    }


def coverage_table(run: CoverageRun) -> pd.DataFrame:
    """One row per judged case, then the overall rows (pooled and mean of cases), for export."""
    results = coverage_results(run)
    records = [
        {"case": row.rubric.conversation.entry.index, "rubric": row.rubric_id,
         "condition": row.rubric.conversation.entry.condition, **_figures(figures)}
        for row, figures in results["cases"]
    ]  # fmt: skip
    overall = results["overall"]
    if overall is not None:
        records.append({"case": "all (micro)", "rubric": "", "condition": "",
                        **_figures(overall.micro)})  # fmt: skip
        macro = {"recall": overall.macro_recall, "precision": overall.macro_precision,
                 "f1": overall.macro_f1}  # fmt: skip
        blank = dict.fromkeys(EXPORT_COLUMNS, "")
        records.append({**blank, "case": f"mean of {overall.cases} cases (macro)", **macro})
    return pd.DataFrame.from_records(records, columns=EXPORT_COLUMNS)


EXPORT_COLUMNS = ("case", "rubric", "condition", "constraints", "entailed", "generated",
                  "matched", "recall", "precision", "f1")  # fmt: skip


def _figures(figures: coverage.Coverage) -> dict[str, Any]:
    return {
        "constraints": figures.constraints, "entailed": figures.entailed,
        "generated": figures.generated, "matched": figures.matched, "recall": figures.recall,
        "precision": figures.precision, "f1": figures.f1,
    }  # fmt: skip


def coverage_export(run: CoverageRun, suffix: str) -> str:
    caption = f"Coverage of expert criteria (CIA) per case: {run.name}"
    return exports.table_export(
        coverage_table(run), suffix, caption=caption, label=f"coverage {run.pk}"
    )
