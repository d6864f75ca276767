"""Sensitivity studies: a judge setup scores reference conversations against their near-miss
copies; results per perturbation type with bootstrap intervals, a chart and exports.

Launching creates one pending NearMiss per (reference, perturbation type). Executing one makes
the copy (rubric_lab.services.perturbations) and scores both traces with the study's setup;
the reference's calls carry the same sample for every type, so with the cache on a reference
is judged once. A type that does not apply to a reference is recorded as such, not as a
failure; a model edit or a judge answer that stays unusable fails the pair with its reason.
In batch mode the pairs are replayed from their batch answers (rubric_lab.services.
study_batches) instead of being sent to the workers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal

import pandas as pd
from django.db import transaction

from benchmark import charts
from benchmark.models import Run
from jobs.services.leases import LeasedTask
from jury.models import Jury
from llm.engine.chat import ProviderError
from llm.engine.providers.model_strings import check_model_string
from rubric_lab.engine import perturb
from rubric_lab.engine import sensitivity as measures
from rubric_lab.models import (
    GenerationJob,
    InstanceRubric,
    JudgeSetup,
    NearMiss,
    NearMissStatus,
    SensitivityStudy,
)
from rubric_lab.services import budgets, exports, study_batches, trace_judging
from rubric_lab.services import evaluation_work as work
from rubric_lab.services.perturbations import near_miss_make

MAX_CASES = 500
MAX_CONCURRENCY = 256
DEFAULT_CONCURRENCY = 8
ALL_TYPES = "all"


class StudyError(ValueError):
    """A study cannot be launched as asked; the message says why."""


# --- launching -------------------------------------------------------------------------------


@transaction.atomic
def study_launch(
    *,
    run: Run,
    setup: str,
    perturber_model: str,
    perturbations: list[str] | None = None,
    name: str = "",
    judge_model: str = "",
    jury: Jury | None = None,
    generation_job: GenerationJob | None = None,
    reference_model: str = "",
    max_cases: int = 20,
    seed: int = 0,
    min_type_references: int = 5,
    min_type_share: float = 0.25,
    use_cache: bool = True,
    concurrency: int = DEFAULT_CONCURRENCY,
    cost_limit_usd: Decimal | None = None,
    batch: bool = False,
    batch_resend_live: bool = False,
    user=None,
) -> SensitivityStudy:
    """A running study with one pending near-miss pair per (reference, perturbation type).
    `batch` sends its calls through the providers' batch APIs (study_batches)."""
    kinds = list(perturbations or perturb.REGISTRY)
    study_options_check(
        setup=setup,
        perturbations=kinds,
        perturber_model=perturber_model,
        judge_model=judge_model,
        jury=jury,
        max_cases=max_cases,
        concurrency=concurrency,
    )
    if setup == JudgeSetup.INSTANCE and generation_job is None:
        raise StudyError("The instance-rubric setup needs a rubric generation job.")
    if min_type_references < 1 or not 0 <= min_type_share <= 1:
        raise StudyError(
            "A type's minimum references must be at least 1 and its share between 0 and 1."
        )
    if batch:
        judges = list(jury.judges) if setup == JudgeSetup.GENERIC and jury else [judge_model]
        study_batches.models_check([perturber_model, *judges], StudyError)
    references = reference_conversations(
        run, reference_model=reference_model, generation_job=generation_job, limit=max_cases
    )
    if not references:
        raise StudyError(_no_references(run, reference_model, generation_job))
    study = SensitivityStudy(
        name=name.strip() or f"{JudgeSetup(setup).label} on {run.name}",
        run=run,
        setup=setup,
        judge_model=judge_model,
        jury=jury,
        generation_job=generation_job,
        perturber_model=perturber_model,
        perturbations=kinds,
        reference_model=reference_model,
        max_cases=max_cases,
        seed=seed,
        min_type_references=min_type_references,
        min_type_share=min_type_share,
        use_cache=use_cache,
        concurrency=concurrency,
        cost_limit_usd=cost_limit_usd,
        batch=batch,
        batch_resend_live=batch and batch_resend_live,
        created_by=user,
    )
    if refusal := budgets.launch_refusal(study):
        raise StudyError(refusal)
    study.save()
    # Created type by type, so the window the workers get first (pairs go out in id order)
    # spans different references: a reference's calls are then answered from the cache for
    # its other types instead of being asked by several pairs at the same moment.
    NearMiss.objects.bulk_create(
        NearMiss(study=study, conversation=conversation, kind=kind)
        for kind in kinds
        for conversation in references
    )
    return study


def reference_conversations(run: Run, *, reference_model: str, generation_job, limit: int):
    conversations = run.conversations.scorable().select_related("entry").order_by("pk")
    if reference_model:
        conversations = conversations.filter(run_agent__model=reference_model)
    if generation_job is not None:
        with_rubric = InstanceRubric.objects.filter(generation__job=generation_job)
        conversations = conversations.filter(pk__in=with_rubric.values("conversation_id"))
    return list(conversations[:limit])


def _no_references(run: Run, reference_model: str, generation_job) -> str:
    where = f" by {reference_model}" if reference_model else ""
    rubric = " with an instance rubric from that generation job" if generation_job else ""
    return f"Run {run.name!r} has no finished conversation{where}{rubric} to use as a reference."


def study_options_check(
    *,
    setup: str,
    perturbations: list[str],
    perturber_model: str,
    judge_model: str,
    jury: Jury | None = None,
    max_cases: int,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> None:
    """Refuse, with StudyError saying why, options no study can run with (an ablation checks
    its future instance-rubric studies with it before building anything)."""
    if setup not in JudgeSetup.values:
        raise StudyError(f"Judge setup must be one of {', '.join(JudgeSetup.values)}.")
    unknown = sorted(set(perturbations) - set(perturb.REGISTRY))
    if unknown or not perturbations:
        raise StudyError(
            f"Pick perturbations from {', '.join(perturb.REGISTRY)}"
            + (f"; unknown: {', '.join(unknown)}." if unknown else ".")
        )
    if setup == JudgeSetup.GENERIC and jury is None:
        raise StudyError("The six-rubric setup needs a jury.")
    if setup != JudgeSetup.GENERIC and not judge_model:
        raise StudyError("This setup needs a judge model.")
    purposes = {JudgeSetup.INSTANCE: "rubric_judge", JudgeSetup.PAIRWISE: "pairwise_judge"}
    try:
        check_model_string(perturber_model, purpose="perturb")
        if setup in purposes:
            check_model_string(judge_model, purpose=purposes[setup])
    except ProviderError as error:
        raise StudyError(str(error)) from None
    if not 1 <= max_cases <= MAX_CASES:
        raise StudyError(f"References must number between 1 and {MAX_CASES}.")
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise StudyError(f"Concurrency must lie between 1 and {MAX_CONCURRENCY}.")


# --- dispatching and executing ----------------------------------------------------------------


def _pairs(study: SensitivityStudy):
    return study.pairs.all()


def study_dispatch(study: SensitivityStudy, send: Callable[[list[LeasedTask]], None]):
    """The dispatch of every study: a batch study's poll, or the live window."""
    if study.batch:
        study_batches.batch_poll(BATCHES, study)
        return []
    return work.work_dispatch(SensitivityStudy, study, _pairs, send)


def study_id_of(pair_id: int) -> int | None:
    return NearMiss.objects.filter(pk=pair_id).values_list("study_id", flat=True).first()


def running_study_ids() -> list[int]:
    return work.running_ids(SensitivityStudy)


def near_miss_execute(pair_id: int, token: str | None = None, *, client=None) -> bool:
    """Run one pending pair if this message may take it; `client` replaces the provider
    router (a batch study's replay)."""
    ran = work.work_execute(
        NearMiss,
        pair_id,
        token,
        _perform,
        use_cache=lambda pair: pair.study.use_cache,
        client=client,
    )
    study = SensitivityStudy.objects.filter(pk=study_id_of(pair_id)).first()
    if study is not None:
        work.job_finish_if_done(SensitivityStudy, study, _pairs)
    return ran


# The editor's calls fail a pair at its perturb stage; every other call is the judge's.
BATCHES = study_batches.StudyBatchKind(
    kind="sensitivity",
    job_model=SensitivityStudy,
    unit_model=NearMiss,
    units_of=_pairs,
    execute=near_miss_execute,
    stage_of=lambda purpose: "perturb" if purpose == "perturb" else "score",
)


def _perform(pair: NearMiss, client) -> dict:
    study = pair.study
    case = trace_judging.case_of(pair.conversation)
    sample = f"sensitivity:{study.pk}/conversation:{pair.conversation.public_id}"
    copy = near_miss_make(
        case,
        pair.kind,
        client=client,
        perturber_model=study.perturber_model,
        sample=f"{sample}/perturb:{pair.kind}",
    )
    if not copy.applicable:
        return {"status": NearMissStatus.NOT_APPLICABLE, "not_applicable_reason": copy.reason}
    fields = {
        "method": copy.method,
        "events": list(copy.events),
        "description": copy.description,
        "changed": copy.changed,
        "diff": copy.diff,
    }
    try:
        scores = work.stage("score", lambda: _score(study, pair, case, copy.events, client, sample))
    except work.StageFailure as failure:
        raise work.StageFailure(failure.stage, failure.reason, **failure.fields, **fields) from None
    return {"status": NearMissStatus.SCORED, **fields, **scores}


def _score(study, pair, case, perturbed, client, sample: str) -> dict:
    reference = case.events
    if study.setup == JudgeSetup.PAIRWISE:
        first, second, verdicts = trace_judging.pairwise_shares(
            client,
            judge_model=study.judge_model,
            reference=reference,
            perturbed=perturbed,
            case=case,
            sample=f"{sample}/pair:{pair.kind}",
        )
        ref_score, pert_score = measures.pairwise_scores(first, second)
        return {
            "reference_score": ref_score,
            "perturbed_score": pert_score,
            "reference_first": first,
            "reference_second": second,
            "details": verdicts,
        }
    if study.setup == JudgeSetup.GENERIC:
        score = lambda events, tag: trace_judging.generic_score(  # noqa: E731
            client, jury=study.jury, events=events, case=case, sample=f"{sample}/{tag}"
        )
    else:
        rubric = InstanceRubric.objects.get(
            generation__job=study.generation_job, conversation=pair.conversation
        )
        score = lambda events, tag: _instance(client, study, rubric, events, case, sample, tag)  # noqa: E731
    ref_score, ref_details = score(reference, "reference")
    pert_score, pert_details = score(perturbed, f"near-miss:{pair.kind}")
    return {
        "reference_score": ref_score,
        "perturbed_score": pert_score,
        "details": {"reference": ref_details, "perturbed": pert_details},
    }


def _instance(client, study, rubric, events, case, sample: str, tag: str):
    try:
        return trace_judging.instance_score(
            client,
            rubric=rubric,
            judge_model=study.judge_model,
            events=events,
            case=case,
            sample=f"{sample}/{tag}",
        )
    except trace_judging.InstanceScoreFailure as failure:
        raise work.StageFailure(
            "score", f"instance rubric, {tag}: {failure}", raw_output=failure.raw_output
        ) from None


def study_relaunch(study: SensitivityStudy) -> None:
    """Failed pairs go back to pending; scored and not-applicable ones are kept."""
    work.work_relaunch(SensitivityStudy, study, _pairs)


def study_progress(study: SensitivityStudy) -> work.Progress:
    return work.progress(study.pairs.all())


# --- results ---------------------------------------------------------------------------------


def scored_frame(study: SensitivityStudy) -> pd.DataFrame:
    rows = study.pairs.filter(status=NearMissStatus.SCORED).values_list(
        "conversation_id",
        "kind",
        "reference_score",
        "perturbed_score",
        "reference_first",
        "reference_second",
    )
    columns = [
        "conversation",
        "kind",
        "reference",
        "perturbed",
        "reference_first",
        "reference_second",
    ]
    return pd.DataFrame(list(rows), columns=columns)


def study_results(study: SensitivityStudy) -> list[dict]:
    """One row per perturbation type (and all types pooled): counts, the four measures with
    their intervals, and position bias for pairwise studies.

    The pooled row resamples references (each with all its pairs), not pairs, and leaves out
    the types that applied to too few references (`too_few` says why on their rows): one
    type scored on most references must not stand for all types."""
    frame = scored_frame(study)
    counts = _counts(study)
    references = study.pairs.values("conversation_id").distinct().count()
    needed = type_references_needed(study, references)
    rows, pooled_kinds = [], []
    for kind in study.perturbations:
        scored = frame[frame["kind"] == kind]
        row = _result_row(study, kind, scored, counts.get(kind, {}))
        applied = scored["conversation"].nunique()
        if applied < needed:
            row["too_few"] = (
                f"Scored on {applied} of {references} references; a type needs at least "
                f"{needed} to count in the pooled figure."
            )
        else:
            pooled_kinds.append(kind)
        rows.append(row)
    pooled = frame[frame["kind"].isin(pooled_kinds)]
    total = _result_row(study, ALL_TYPES, pooled, _pooled_counts(counts, pooled_kinds))
    total["left_out"] = [row["label"] for row in rows if row.get("too_few")]
    return [*rows, total]


def type_references_needed(study: SensitivityStudy, references: int) -> int:
    """References a type must be scored on to count in the pooled figure: the study's
    minimum, or in a small study that share of its references, whichever is fewer."""
    share = math.ceil(study.min_type_share * references)
    return max(1, min(study.min_type_references, share))


def _counts(study: SensitivityStudy) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for kind, status in study.pairs.values_list("kind", "status"):
        counts.setdefault(kind, {}).setdefault(status, 0)
        counts[kind][status] += 1
    return counts


def _pooled_counts(counts: dict[str, dict[str, int]], kinds: list[str]) -> dict[str, int]:
    pooled: dict[str, int] = {}
    for kind in kinds:
        for status, number in counts.get(kind, {}).items():
            pooled[status] = pooled.get(status, 0) + number
    return pooled


def _result_row(study, kind: str, rows: pd.DataFrame, counts: dict[str, int]) -> dict:
    label = perturb.REGISTRY[kind].label if kind in perturb.REGISTRY else "All types pooled"
    result = {"kind": kind, "label": label, "counts": counts, "sensitivity": None, "bias": None}
    if rows.empty:
        return result
    # Pooled, a reference has one pair per type: resample references, each with its pairs.
    clusters = list(rows["conversation"]) if kind == ALL_TYPES else None
    result["sensitivity"] = measures.sensitivity(
        rows["reference"], rows["perturbed"], clusters=clusters, seed=study.seed
    )
    if study.setup == JudgeSetup.PAIRWISE:
        result["bias"] = measures.position_bias(
            rows["reference_first"],
            rows["reference_second"],
            clusters=clusters,
            seed=study.seed,
        )
    return result


def results_table(study: SensitivityStudy, results: list[dict]) -> pd.DataFrame:
    records = []
    for row in results:
        record = {"perturbation": row["kind"], "label": row["label"]}
        record.update({f"n_{s}": row["counts"].get(s, 0) for s in NearMissStatus.values})
        record["note"] = _note(row)
        if row["sensitivity"] is not None:
            record.update(row["sensitivity"].as_row())
        if row["bias"] is not None:
            bias = row["bias"]
            record.update(
                position_bias=bias.bias.value,
                position_bias_low=bias.bias.low,
                position_bias_high=bias.bias.high,
                first_preferred=bias.first_preferred,
            )
        records.append(record)
    return pd.DataFrame.from_records(records)


def _note(row: dict) -> str:
    if row["kind"] != ALL_TYPES:
        return row.get("too_few", "")
    note = "Intervals resample references, each with all its pairs."
    if row["left_out"]:
        note += " Left out (scored on too few references): " + ", ".join(row["left_out"]) + "."
    return note


def study_export(study: SensitivityStudy, suffix: str) -> str:
    table = results_table(study, study_results(study))
    caption = f"Near-miss sensitivity per perturbation type (95% bootstrap intervals): {study.name}"
    return exports.table_export(table, suffix, caption=caption, label=f"sensitivity {study.pk}")


def study_charts(results: list[dict]) -> list[dict]:
    """AUROC and win rate per perturbation type with their 95% intervals, against the band of
    all types pooled (server-side SVG)."""
    scored = [row for row in results if row["sensitivity"] is not None]
    pooled = next((row for row in scored if row["kind"] == ALL_TYPES), None)
    if pooled is None:
        return []
    out = []
    for measure, title in (("auroc", "AUROC (0.5 = chance)"), ("win_rate", "Win rate")):
        band = getattr(pooled["sensitivity"], measure)
        intervals = [
            charts.Interval(
                label=row["label"],
                mean=getattr(row["sensitivity"], measure).value,
                low=getattr(row["sensitivity"], measure).low,
                high=getattr(row["sensitivity"], measure).high,
                note=f"{getattr(row['sensitivity'], measure).value:.2f} (n={row['sensitivity'].n})",
            )
            for row in scored
            if row["kind"] != ALL_TYPES
        ]
        svg = charts.interval_rows(
            intervals, band=(band.low, band.high), domain=(0.0, 1.0), title=title
        )
        out.append({"title": title, "svg": svg})
    return out


def pair_records(study: SensitivityStudy) -> list[dict]:
    """Every near-miss pair of the study: what was changed, its status and both scores."""
    pairs = study.pairs.select_related("conversation__entry").order_by("pk")
    return [
        {
            "study": study.pk,
            "conversation": str(pair.conversation.public_id),
            "source_id": pair.conversation.entry.seed.get("source_id", ""),
            "kind": pair.kind,
            "status": pair.status,
            "method": pair.method,
            "description": pair.description,
            "not_applicable_reason": pair.not_applicable_reason,
            "reference_score": pair.reference_score,
            "perturbed_score": pair.perturbed_score,
            "reference_first": pair.reference_first,
            "reference_second": pair.reference_second,
            "failure_stage": pair.failure_stage,
            "failure_reason": pair.failure_reason,
        }
        for pair in pairs
    ]
