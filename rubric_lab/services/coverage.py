"""Coverage (CIA) of expert criteria by generated instance rubrics.

Expert criteria belong to a conversation (a HealthBench import gives each its physicians'
criteria, rubric_lab.services.imports) or to a case, every reply to one benchmark entry; a
conversation's own criteria win over its case's. They are uploaded per benchmark set as CSV or
JSON: `case` (the entry's index in the set) or `conversation` (a conversation's public id),
`criterion` = text, optional integer `weight` in [-10, 10] and `axis`; every bad row is named
and nothing is saved unless the whole file is good. An upload replaces the criteria of every
case and conversation it names. A coverage run judges each instance rubric of a generation job
whose conversation has expert criteria: decompose (one call), entail (one call), then recall /
precision / F1, overall and per axis. The decomposition's sample names the conversation, not
the run, so with the response cache every arm judged against the same criteria gets the same
constraints and two runs compare constraint by constraint (McNemar, `coverage_compare`).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pandas as pd
from django.db import transaction
from django.db.models import Q

from benchmark.engine.chat import ProviderError
from benchmark.engine.providers.model_strings import check_model_string
from benchmark.engine.structured import request_json
from benchmark.models import BenchmarkSet, Conversation
from benchmark.services.leases import LeasedTask
from common import json_text
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
MAX_AXIS_CHARS = 60
MAX_CONCURRENCY = 256


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
            data = json_text.loads(content)
        except json.JSONDecodeError as error:
            message = f"the file is not valid JSON ({error.msg}, line {error.lineno})"
            raise UploadError([message]) from None
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            raise UploadError(["the JSON file must hold a list of objects"])
        return [{**item, "row": number} for number, item in enumerate(data, start=1)]
    if not filename.lower().endswith(".csv"):
        raise UploadError(["the file must end in .csv or .json"])
    reader = csv.DictReader(io.StringIO(content))
    columns = reader.fieldnames or []
    missing = [] if "criterion" in columns else ["criterion"]
    if "case" not in columns and "conversation" not in columns:
        missing.append("case or conversation")
    if missing:
        raise UploadError([f"the CSV header lacks the column(s): {', '.join(missing)}"])
    # Row numbers count the header, as a spreadsheet shows them.
    return [{**item, "row": number} for number, item in enumerate(reader, start=2)]


@dataclass(frozen=True)
class CheckedCriterion:
    entry: int | None  # exactly one of entry and conversation
    conversation: int | None
    text: str
    weight: int | None
    axis: str


def expert_criteria_check(
    benchmark_set: BenchmarkSet, rows: list[dict[str, Any]]
) -> list[CheckedCriterion]:
    """One checked criterion per row, or UploadError naming every bad row."""
    entries = dict(benchmark_set.entries.values_list("index", "pk"))
    conversations = {
        str(public_id): pk
        for public_id, pk in Conversation.objects.filter(
            entry__benchmark_set=benchmark_set
        ).values_list("public_id", "pk")
    }
    errors, checked = [], []
    for row in rows:
        problems = []
        entry, conversation = _target(row, entries, conversations, problems)
        text = str(row.get("criterion") or "").strip()
        if not text or len(text) > MAX_CRITERION_CHARS:
            problems.append(f"criterion must be text of 1 to {MAX_CRITERION_CHARS} characters")
        weight = row.get("weight")
        weight = None if weight in (None, "") else _integer(weight)
        if row.get("weight") not in (None, "") and (
            weight is None or not MIN_WEIGHT <= weight <= MAX_WEIGHT or weight == 0
        ):
            problems.append(f"weight must be a non-zero integer in [{MIN_WEIGHT}, {MAX_WEIGHT}]")
        axis = str(row.get("axis") or "").strip()
        if len(axis) > MAX_AXIS_CHARS:
            problems.append(f"axis must be at most {MAX_AXIS_CHARS} characters")
        if problems:
            errors.append(f"row {row['row']}: {'; '.join(problems)}")
        else:
            checked.append(CheckedCriterion(entry, conversation, text, weight, axis))
    if errors or not checked:
        raise UploadError(errors or ["the file holds no criteria"])
    return checked


def _target(row, entries, conversations, problems) -> tuple[int | None, int | None]:
    """The entry or the conversation a row names (one of the two)."""
    case, public_id = row.get("case"), str(row.get("conversation") or "").strip()
    if case not in (None, "") and public_id:
        problems.append("name a case or a conversation, not both")
        return None, None
    if public_id:
        if public_id not in conversations:
            problems.append(f"conversation {public_id!r} is not a conversation of this set")
        return None, conversations.get(public_id)
    index = _integer(case)
    if index is None or index not in entries:
        problems.append(f"case {case!r} is not an entry index of this set")
        return None, None
    return entries[index], None


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
    ExpertCriterion.objects.filter(
        Q(entry_id__in={c.entry for c in checked if c.entry})
        | Q(conversation_id__in={c.conversation for c in checked if c.conversation})
    ).delete()
    upload = ExpertCriteriaUpload.objects.create(
        benchmark_set=benchmark_set, filename=filename[:200], criterion_count=len(checked),
        created_by=user,
    )  # fmt: skip
    ExpertCriterion.objects.bulk_create(
        ExpertCriterion(
            entry_id=c.entry, conversation_id=c.conversation, upload=upload, text=c.text,
            weight=c.weight, axis=c.axis,
        )
        for c in checked
    )  # fmt: skip
    return upload


def expert_criteria_of(conversation: Conversation) -> list[ExpertCriterion]:
    """The conversation's own expert criteria, else its case's (in upload order)."""
    rows = list(
        ExpertCriterion.objects.filter(
            Q(conversation_id=conversation.pk) | Q(entry_id=conversation.entry_id)
        ).order_by("id")
    )
    own = [row for row in rows if row.conversation_id == conversation.pk]
    return own or rows


def with_expert_criteria() -> Q:
    """Conversations (as `conversation__...` lookups of a rubric) with expert criteria."""
    return Q(conversation__expert_criteria__isnull=False) | Q(
        conversation__entry__expert_criteria__isnull=False
    )


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
        InstanceRubric.objects.filter(with_expert_criteria(), generation__job=generation_job)
        .distinct()
        .order_by("pk")
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
    conversation = row.rubric.conversation
    expert = expert_criteria_of(conversation)
    texts = [criterion.text for criterion in expert]
    generated = list(row.rubric.criteria.order_by("index").values_list("text", flat=True))
    # The constraints depend on the expert criteria alone: every arm judged against them
    # draws (and, cached, shares) the same decomposition.
    decomposition = work.stage(
        "decompose",
        lambda: request_json(
            client,
            coverage.decompose_request(
                texts, model=model, sample=f"coverage-decompose:{conversation.public_id}"
            ),
            lambda data: coverage.validate_constraints(data, criteria=len(texts)),
        ),
    ).data["constraints"]
    constraints = [c["text"] for c in decomposition]
    sample = f"coverage:{row.coverage_run_id}/rubric:{row.rubric_id}"
    judgements = work.stage(
        "entail",
        lambda: request_json(
            client,
            coverage.entail_request(constraints, generated, model=model, sample=sample),
            lambda data: coverage.validate_judgements(
                data, constraints=len(constraints), generated=len(generated)
            ),
        ),
    ).data["judgements"]
    counts = coverage.coverage_of(judgements, generated=len(generated))
    return {
        "status": WorkStatus.DONE, "expert_criteria": texts,
        "expert_axes": [criterion.axis for criterion in expert],
        "constraints": decomposition, "judgements": judgements,
        "constraint_count": counts.constraints, "entailed": counts.entailed,
        "generated": counts.generated, "matched": counts.matched,
    }  # fmt: skip


def case_coverage(row: CoverageCase) -> coverage.Coverage:
    return coverage.Coverage(row.constraint_count, row.entailed, row.generated, row.matched)


def coverage_results(run: CoverageRun) -> dict:
    """Per-case rows (done cases), the overall figures (micro and macro) and per axis."""
    rows = _done_cases(run)
    return {
        "cases": [(row, case_coverage(row)) for row in rows],
        "overall": coverage.overall([case_coverage(row) for row in rows]) if rows else None,
        "axes": coverage.axis_coverage(*_axis_pairs(rows)) if rows else [],
    }


def _done_cases(run: CoverageRun) -> list[CoverageCase]:
    return list(
        run.cases.filter(status=WorkStatus.DONE)
        .select_related("rubric__conversation__entry")
        .prefetch_related("rubric__criteria")
        .order_by("pk")
    )


def _axis_pairs(rows: list[CoverageCase]):
    """(expert axis, entailed) per constraint and (generated axis, matched) per criterion."""
    entailed, matched = [], []
    for row in rows:
        entailed += [
            (_constraint_axis(row, number), judgement["entailed"])
            for number, judgement in enumerate(row.judgements, start=1)
        ]
        hits = {i for j in row.judgements if j["entailed"] for i in j["criteria"]}
        criteria = sorted(row.rubric.criteria.all(), key=lambda c: c.index)
        matched += [(c.axis, c.index + 1 in hits) for c in criteria]
    return entailed, matched


def _constraint_axis(row: CoverageCase, number: int) -> str:
    """The axis of the expert criterion constraint `number` came from ("" if none given)."""
    source = row.constraints[number - 1]["criterion"]
    axes = row.expert_axes
    return axes[source - 1] if source <= len(axes) else ""


# --- comparing two arms on the same expert criteria ----------------------------------------


@dataclass(frozen=True)
class Comparison:
    overall: coverage.McNemar
    axes: list[tuple[str, coverage.McNemar]]
    conversations: int  # judged by both runs
    unpaired: int  # constraints of those conversations the two runs did not share


def coverage_compare(run_a: CoverageRun, run_b: CoverageRun) -> Comparison:
    """McNemar's test for the difference in recall between two runs, per constraint of the
    conversations both judged: a constraint is paired when both runs hold it (same expert
    criterion, same text), whatever its position."""
    cases_b = {row.rubric.conversation_id: row for row in _done_cases(run_b)}
    by_axis: dict[str, list[tuple[bool, bool]]] = {}
    conversations = unpaired = 0
    for row_a in _done_cases(run_a):
        row_b = cases_b.get(row_a.rubric.conversation_id)
        if row_b is None:
            continue
        conversations += 1
        b_entailed = _entailed_by_constraint(row_b)
        for number, (key, entailed) in enumerate(_entailed_by_constraint(row_a).items(), 1):
            if key not in b_entailed:
                unpaired += 1
                continue
            by_axis.setdefault(_constraint_axis(row_a, number), []).append(
                (entailed, b_entailed.pop(key))
            )
        unpaired += len(b_entailed)
    pairs = [pair for axis_pairs in by_axis.values() for pair in axis_pairs]
    axes = sorted(by_axis, key=lambda axis: (axis == "", axis))
    return Comparison(
        overall=coverage.mcnemar(pairs),
        axes=[(axis, coverage.mcnemar(by_axis[axis])) for axis in axes],
        conversations=conversations, unpaired=unpaired,
    )  # fmt: skip


def _entailed_by_constraint(row: CoverageCase) -> dict[tuple[int, str, int], bool]:
    """(expert criterion, text, occurrence) -> entailed, in constraint order."""
    seen: dict[tuple[int, str], int] = {}
    out = {}
    for constraint, judgement in zip(row.constraints, row.judgements, strict=True):
        key = (constraint["criterion"], constraint["text"].strip().lower())
        seen[key] = seen.get(key, 0) + 1
        out[(*key, seen[key])] = judgement["entailed"]
    return out


def comparison_table(run_a: CoverageRun, run_b: CoverageRun) -> pd.DataFrame:
    comparison = coverage_compare(run_a, run_b)
    rows = [("all", comparison.overall), *comparison.axes]
    return pd.DataFrame.from_records(
        [
            {"axis": axis or "(none)", "constraints": test.pairs, "recall_a": test.recall_a,
             "recall_b": test.recall_b, "both": test.both, "only_a": test.only_a,
             "only_b": test.only_b, "neither": test.neither, "statistic": test.statistic,
             "p_value": test.p_value, "test": "exact binomial" if test.exact else
             "chi-square, continuity corrected"}
            for axis, test in rows
        ]
    )  # fmt: skip


def coverage_table(run: CoverageRun) -> pd.DataFrame:
    """One row per judged case, then the overall rows (pooled and mean of cases) and one row
    per axis, for export."""
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
    for axis in results["axes"]:
        records.append(
            {"case": f"axis: {axis.axis or '(none)'}", "rubric": "", "condition": "",
             "constraints": axis.constraints, "entailed": axis.entailed,
             "generated": axis.generated, "matched": axis.matched, "recall": axis.recall,
             "precision": axis.precision, "f1": coverage.f1(axis.recall, axis.precision)}
        )  # fmt: skip
    return pd.DataFrame.from_records(records, columns=EXPORT_COLUMNS)


EXPORT_COLUMNS = ("case", "rubric", "condition", "constraints", "entailed", "generated",
                  "matched", "recall", "precision", "f1")  # fmt: skip


def _figures(figures: coverage.Coverage) -> dict[str, Any]:
    return {
        "constraints": figures.constraints, "entailed": figures.entailed,
        "generated": figures.generated, "matched": figures.matched, "recall": figures.recall,
        "precision": figures.precision, "f1": figures.f1,
    }  # fmt: skip


def comparison_export(run_a: CoverageRun, run_b: CoverageRun, suffix: str) -> str:
    caption = f"Coverage recall, {run_a.name} (A) against {run_b.name} (B): McNemar's test"
    return exports.table_export(
        comparison_table(run_a, run_b), suffix, caption=caption,
        label=f"coverage {run_a.pk} versus {run_b.pk}",
    )  # fmt: skip


def coverage_export(run: CoverageRun, suffix: str) -> str:
    caption = f"Coverage of expert criteria (CIA) per case: {run.name}"
    return exports.table_export(
        coverage_table(run), suffix, caption=caption, label=f"coverage {run.pk}"
    )


def case_records(run: CoverageRun) -> list[dict]:
    """Every case of the run: the expert criteria, their constraints and each judgement."""
    cases = run.cases.select_related("rubric__conversation__entry").order_by("pk")
    return [
        {"coverage_run": run.pk, "rubric": row.rubric_id,
         "conversation": str(row.rubric.conversation.public_id),
         "source_id": row.rubric.conversation.entry.seed.get("source_id", ""),
         "status": row.status, "expert_criteria": row.expert_criteria,
         "expert_axes": row.expert_axes, "constraints": row.constraints,
         "judgements": row.judgements, "constraint_count": row.constraint_count,
         "entailed": row.entailed, "generated": row.generated, "matched": row.matched,
         "failure_stage": row.failure_stage, "failure_reason": row.failure_reason}
        for row in cases
    ]  # fmt: skip
