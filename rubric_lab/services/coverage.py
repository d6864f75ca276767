"""Coverage (CIA) of expert criteria by generated instance rubrics.

Expert criteria belong to a conversation (a HealthBench import gives each its physicians'
criteria, rubric_lab.services.imports) or to a case, every reply to one benchmark entry; a
conversation's own criteria win over its case's. They are uploaded per benchmark set as CSV or
JSON: `case` (the entry's index in the set) or `conversation` (a conversation's public id),
`criterion` = text, optional integer `weight` in [-10, 10] and `axis`; every bad row is named
and nothing is saved unless the whole file is good. An upload replaces the criteria of every
case and conversation it names. A coverage run judges each instance rubric of a generation job
whose conversation has expert criteria: decompose (one call), entail (one call), then recall /
precision / F1, overall and per axis (both sides' axes put into HealthBench's names,
rubric_lab.engine.axes), each with a conversation bootstrap interval. The decomposition's
sample names the conversation, not the run, so with the response cache every arm judged against
the same criteria gets the same constraints and two runs compare constraint by constraint
(`coverage_compare`: McNemar's test adjusted for the conversations the constraints share, and
the difference in recall with its interval; rubric_lab.engine.coverage_stats).
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

from benchmark.models import BenchmarkSet, Conversation
from common import json_text
from jobs.services.leases import LeasedTask
from llm.engine.chat import ProviderError
from llm.engine.providers.model_strings import check_model_string
from llm.engine.structured import request_json
from rubric_lab.engine import coverage, coverage_stats
from rubric_lab.engine.axes import common_axis
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
from rubric_lab.services import budgets, exports, study_batches
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
        benchmark_set=benchmark_set,
        filename=filename[:200],
        criterion_count=len(checked),
        created_by=user,
    )
    ExpertCriterion.objects.bulk_create(
        ExpertCriterion(
            entry_id=c.entry,
            conversation_id=c.conversation,
            upload=upload,
            text=c.text,
            weight=c.weight,
            axis=c.axis,
        )
        for c in checked
    )
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
    batch: bool = False,
    batch_resend_live: bool = False,
    user=None,
) -> CoverageRun:
    """A running coverage run with one pending case per rubric with expert criteria; `batch`
    sends the judge's calls through the providers' batch APIs (study_batches)."""
    try:
        check_model_string(judge_model, purpose="coverage_entail")
    except ProviderError as error:
        raise CoverageError(str(error)) from None
    if batch:
        study_batches.models_check([judge_model], CoverageError)
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
        name=name.strip() or f"Coverage of {generation_job.name}",
        generation_job=generation_job,
        judge_model=judge_model,
        use_cache=use_cache,
        concurrency=concurrency,
        cost_limit_usd=cost_limit_usd,
        batch=batch,
        batch_resend_live=batch and batch_resend_live,
        created_by=user,
    )
    if refusal := budgets.launch_refusal(run):
        raise CoverageError(refusal)
    run.save()
    CoverageCase.objects.bulk_create(CoverageCase(coverage_run=run, rubric=r) for r in rubrics)
    return run


def _cases(run: CoverageRun):
    return run.cases.all()


def coverage_dispatch(run: CoverageRun, send: Callable[[list[LeasedTask]], None]):
    """The dispatch of every run: a batch run's poll, or the live window."""
    if run.batch:
        study_batches.batch_poll(BATCHES, run)
        return []
    return work.work_dispatch(CoverageRun, run, _cases, send)


def coverage_run_id_of(case_id: int) -> int | None:
    return CoverageCase.objects.filter(pk=case_id).values_list("coverage_run_id", flat=True).first()


def running_coverage_ids() -> list[int]:
    return work.running_ids(CoverageRun)


def coverage_case_execute(case_id: int, token: str | None = None, *, client=None) -> bool:
    """Run one pending case if this message may take it; `client` replaces the provider
    router (a batch run's replay)."""
    ran = work.work_execute(
        CoverageCase,
        case_id,
        token,
        _perform,
        use_cache=lambda row: row.coverage_run.use_cache,
        client=client,
    )
    run = CoverageRun.objects.filter(pk=coverage_run_id_of(case_id)).first()
    if run is not None:
        work.job_finish_if_done(CoverageRun, run, _cases)
    return ran


# A case's judge decomposes the expert criteria, then decides what the rubric entails.
BATCHES = study_batches.StudyBatchKind(
    kind="coverage",
    job_model=CoverageRun,
    unit_model=CoverageCase,
    units_of=_cases,
    execute=coverage_case_execute,
    stage_of=lambda purpose: purpose.removeprefix("coverage_"),
)


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
        "status": WorkStatus.DONE,
        "expert_criteria": texts,
        "expert_axes": [criterion.axis for criterion in expert],
        "constraints": decomposition,
        "judgements": judgements,
        "constraint_count": counts.constraints,
        "entailed": counts.entailed,
        "generated": counts.generated,
        "matched": counts.matched,
    }


def case_coverage(row: CoverageCase) -> coverage_stats.Coverage:
    return coverage_stats.Coverage(row.constraint_count, row.entailed, row.generated, row.matched)


def coverage_results(run: CoverageRun) -> dict:
    """Per-case rows (done cases), the overall figures (micro and macro) and per axis, the
    pooled ones with their conversation bootstrap intervals."""
    rows = _done_cases(run)
    return {
        "cases": [(row, case_coverage(row)) for row in rows],
        "overall": coverage_stats.overall([case_coverage(row) for row in rows]) if rows else None,
        "axes": coverage_stats.axis_coverage(*_axis_counts(rows)) if rows else [],
    }


def _done_cases(run: CoverageRun) -> list[CoverageCase]:
    return list(
        run.cases.filter(status=WorkStatus.DONE)
        .select_related("rubric__conversation__entry")
        .prefetch_related("rubric__criteria")
        .order_by("pk")
    )


def _axis_counts(rows: list[CoverageCase]):
    """(case, expert axis, entailed) per constraint and (case, generated axis, matched) per
    criterion, every axis in the common vocabulary."""
    entailed, matched = [], []
    for row in rows:
        entailed += [
            (row.pk, _constraint_axis(row, number), judgement["entailed"])
            for number, judgement in enumerate(row.judgements, start=1)
        ]
        hits = {i for j in row.judgements if j["entailed"] for i in j["criteria"]}
        criteria = sorted(row.rubric.criteria.all(), key=lambda c: c.index)
        matched += [(row.pk, common_axis(c.axis), c.index + 1 in hits) for c in criteria]
    return entailed, matched


def _constraint_axis(row: CoverageCase, number: int) -> str:
    """The axis of the expert criterion constraint `number` came from ("" if none given), in
    the common vocabulary."""
    source = row.constraints[number - 1]["criterion"]
    axes = row.expert_axes
    return common_axis(axes[source - 1]) if source <= len(axes) else ""


# --- comparing two arms on the same expert criteria ----------------------------------------


@dataclass(frozen=True)
class Comparison:
    overall: coverage_stats.ArmComparison
    axes: list[tuple[str, coverage_stats.ArmComparison]]
    conversations: int  # judged by both runs
    unpaired: int  # constraints of those conversations the two runs did not share


def coverage_compare(run_a: CoverageRun, run_b: CoverageRun) -> Comparison:
    """The difference in recall between two runs on the constraints of the conversations both
    judged, tested and bounded conversation by conversation (a conversation's constraints are
    judged against one rubric, so they are not independent): a constraint is paired when both
    runs hold it (same expert criterion, same text), whatever its position."""
    cases_b = {row.rubric.conversation_id: row for row in _done_cases(run_b)}
    pairs, clusters, axes = [], [], []  # per paired constraint
    conversations = unpaired = 0
    for row_a in _done_cases(run_a):
        conversation = row_a.rubric.conversation_id
        row_b = cases_b.get(conversation)
        if row_b is None:
            continue
        conversations += 1
        b_entailed = _entailed_by_constraint(row_b)
        for number, (key, entailed) in enumerate(_entailed_by_constraint(row_a).items(), 1):
            if key not in b_entailed:
                unpaired += 1
                continue
            pairs.append((entailed, b_entailed.pop(key)))
            clusters.append(conversation)
            axes.append(_constraint_axis(row_a, number))
        unpaired += len(b_entailed)

    def on(axis: str) -> coverage_stats.ArmComparison:
        chosen = [i for i, of in enumerate(axes) if of == axis]
        return coverage_stats.compare_arms(
            [pairs[i] for i in chosen], [clusters[i] for i in chosen]
        )

    return Comparison(
        overall=coverage_stats.compare_arms(pairs, clusters),
        axes=[(axis, on(axis)) for axis in sorted(set(axes), key=lambda a: (a == "", a))],
        conversations=conversations,
        unpaired=unpaired,
    )


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
            {
                "axis": axis or "(none)",
                "conversations": row.test.clusters,
                "constraints": row.test.pairs,
                **_estimate_columns("recall_a", row.recall_a),
                **_estimate_columns("recall_b", row.recall_b),
                **_estimate_columns("difference", row.difference),
                "both": row.test.both,
                "only_a": row.test.only_a,
                "only_b": row.test.only_b,
                "neither": row.test.neither,
                "statistic": row.test.statistic,
                "p_value": row.test.p_value,
                "test": comparison_method(row.test),
            }
            for axis, row in rows
        ]
    )


def comparison_method(test: coverage_stats.McNemar) -> str:
    """How the p value of a comparison was found, in words (pages, exports, the command)."""
    if test.exact:
        return "McNemar adjusted for conversations, exact sign-flip p"
    return "McNemar adjusted for conversations (Durkalski), chi-square 1 df"


def _estimate_columns(name: str, estimate) -> dict[str, float | None]:
    """`name`, `name_low`, `name_high` of an Estimate (blank when undefined)."""
    if estimate is None:
        return {name: None, f"{name}_low": None, f"{name}_high": None}
    return {name: estimate.value, f"{name}_low": estimate.low, f"{name}_high": estimate.high}


def coverage_table(run: CoverageRun) -> pd.DataFrame:
    """One row per judged case, then the overall rows (pooled and mean of cases) and one row
    per axis, for export."""
    results = coverage_results(run)
    records = [
        {
            "case": row.rubric.conversation.entry.index,
            **case_description(row),
            "rubric": row.rubric_id,
            **_figures(figures),
        }
        for row, figures in results["cases"]
    ]
    overall = results["overall"]
    if overall is not None:
        records.append({"case": "all (micro)", **_figures(overall.micro, overall.intervals)})
        macro = {
            "recall": overall.macro_recall,
            "precision": overall.macro_precision,
            "f1": overall.macro_f1,
        }
        records.append({"case": f"mean of {overall.cases} cases (macro)", **macro})
    for axis in results["axes"]:
        records.append({"case": f"axis: {axis.axis or '(none)'}", **_figures(axis, axis.intervals)})
    blank = dict.fromkeys(EXPORT_COLUMNS, "")
    return pd.DataFrame.from_records([blank | record for record in records], columns=EXPORT_COLUMNS)


EXPORT_COLUMNS = (
    "case",
    "prompt_id",
    "condition",
    "theme",
    "rubric",
    "constraints",
    "entailed",
    "generated",
    "matched",
    "recall",
    "recall_low",
    "recall_high",
    "precision",
    "precision_low",
    "precision_high",
    "f1",
    "f1_low",
    "f1_high",
)


def case_description(row: CoverageCase) -> dict[str, str]:
    """What the case is: its source id (a HealthBench prompt_id), condition and theme (a
    HealthBench row's theme; a generated case's task category)."""
    entry = row.rubric.conversation.entry
    return {
        "prompt_id": entry.seed.get("source_id", ""),
        "condition": entry.condition,
        "theme": entry.task_category,
    }


def _figures(
    figures: coverage_stats.Coverage, intervals: coverage_stats.Intervals | None = None
) -> dict[str, Any]:
    row = {
        "constraints": figures.constraints,
        "entailed": figures.entailed,
        "generated": figures.generated,
        "matched": figures.matched,
        "recall": figures.recall,
        "precision": figures.precision,
        "f1": figures.f1,
    }
    for name in ("recall", "precision", "f1") if intervals else ():
        estimate = getattr(intervals, name)
        row |= {k: v for k, v in _estimate_columns(name, estimate).items() if k != name}
    return row


def comparison_export(run_a: CoverageRun, run_b: CoverageRun, suffix: str) -> str:
    caption = (
        f"Coverage recall, {run_a.name} (A) against {run_b.name} (B): McNemar's test adjusted "
        "for conversations, recalls and their difference with conversation bootstrap 95% "
        "intervals"
    )
    return exports.table_export(
        comparison_table(run_a, run_b),
        suffix,
        caption=caption,
        label=f"coverage {run_a.pk} versus {run_b.pk}",
    )


def coverage_export(run: CoverageRun, suffix: str) -> str:
    caption = (
        f"Coverage of expert criteria (CIA) per case: {run.name}; pooled figures with "
        "conversation bootstrap 95% intervals"
    )
    return exports.table_export(
        coverage_table(run), suffix, caption=caption, label=f"coverage {run.pk}"
    )


def case_records(run: CoverageRun) -> list[dict]:
    """Every case of the run: the expert criteria, their constraints and each judgement."""
    cases = run.cases.select_related("rubric__conversation__entry").order_by("pk")
    return [
        {
            "coverage_run": run.pk,
            "rubric": row.rubric_id,
            "conversation": str(row.rubric.conversation.public_id),
            "source_id": row.rubric.conversation.entry.seed.get("source_id", ""),
            "status": row.status,
            "expert_criteria": row.expert_criteria,
            "expert_axes": row.expert_axes,
            "constraints": row.constraints,
            "judgements": row.judgements,
            "constraint_count": row.constraint_count,
            "entailed": row.entailed,
            "generated": row.generated,
            "matched": row.matched,
            "failure_stage": row.failure_stage,
            "failure_reason": row.failure_reason,
        }
        for row in cases
    ]
