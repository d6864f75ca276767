"""Critique-then-refine studies: for each instance rubric of a generation job, its conversation
is refined by three arms - critique with the rubric; the self-critique control with no rubric
(the lower control); and, where the conversation has expert criteria, critique with those
criteria (the oracle, the upper control) - and an independent judge (the six case-agnostic
rubrics, a judge model of its own) scores the original and each refined copy. With a criteria
judge set, the original and each refined copy are also scored against the expert criteria (one
call per criterion, normalised, overall and per axis): the source's independent criteria.
Edits breaking the editor's rules are rejected and listed.

In batch mode the refinements are replayed from their batch answers (rubric_lab.services.
study_batches) instead of being sent to the workers."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import numpy as np
import pandas as pd
from django.db import transaction

from jobs.services.leases import LeasedTask
from jury.models import Jury
from jury.services.rubrics import current_weights
from llm.engine.chat import ProviderError
from llm.engine.providers.model_strings import check_model_string
from llm.engine.providers.redaction import failure_text
from llm.engine.structured import (
    InvalidOutput,
    StructuredFailure,
    extract_json_object,
    request_json,
)
from rubric_lab.engine import refine, sensitivity
from rubric_lab.engine.perturb import trace_diff
from rubric_lab.engine.rubric import axis_scores
from rubric_lab.models import (
    GenerationJob,
    InstanceRubric,
    RefineArm,
    Refinement,
    RefineStudy,
    WorkStatus,
)
from rubric_lab.services import budgets, coverage, exports, study_batches, trace_judging
from rubric_lab.services import evaluation_work as work
from rubric_lab.services.instance_scoring import JudgedCriterion

MAX_CASES = 200
EDIT_REPAIRS = 1


class RefineError(ValueError):
    """A refine study cannot be launched as asked; the message says why."""


@transaction.atomic
def refine_launch(
    *,
    generation_job: GenerationJob,
    evaluator_model: str,
    editor_model: str,
    judge_model: str,
    criteria_judge_model: str = "",
    name: str = "",
    max_cases: int = 20,
    use_cache: bool = True,
    concurrency: int = 8,
    cost_limit_usd: Decimal | None = None,
    batch: bool = False,
    batch_resend_live: bool = False,
    user=None,
) -> RefineStudy:
    """A running refine study with one pending refinement per rubric and arm; `batch` sends
    its calls through the providers' batch APIs (study_batches)."""
    try:
        check_model_string(evaluator_model, purpose="refine_critique")
        check_model_string(editor_model, purpose="refine_edit")
        check_model_string(judge_model, purpose="judge")
        if criteria_judge_model:
            check_model_string(criteria_judge_model, purpose="rubric_judge")
    except ProviderError as error:
        raise RefineError(str(error)) from None
    if batch:
        called = [evaluator_model, editor_model, judge_model, criteria_judge_model]
        study_batches.models_check(called, RefineError)
    if not 1 <= max_cases <= MAX_CASES:
        raise RefineError(f"Cases must number between 1 and {MAX_CASES}.")
    rubrics = list(
        InstanceRubric.objects.filter(generation__job=generation_job).order_by("pk")[:max_cases]
    )
    if not rubrics:
        raise RefineError(f"{generation_job.name!r} has produced no instance rubric yet.")
    study = RefineStudy(
        name=name.strip() or f"Refine with {generation_job.name}",
        generation_job=generation_job,
        evaluator_model=evaluator_model,
        editor_model=editor_model,
        judge_model=judge_model,
        criteria_judge_model=criteria_judge_model,
        max_cases=max_cases,
        use_cache=use_cache,
        concurrency=concurrency,
        cost_limit_usd=cost_limit_usd,
        batch=batch,
        batch_resend_live=batch and batch_resend_live,
        created_by=user,
    )
    if refusal := budgets.launch_refusal(study):
        raise RefineError(refusal)
    study.save()
    chosen = InstanceRubric.objects.filter(pk__in=[rubric.pk for rubric in rubrics])
    with_criteria = set(chosen.filter(coverage.with_expert_criteria()).values_list("pk", flat=True))
    Refinement.objects.bulk_create(
        Refinement(study=study, rubric=rubric, arm=arm)
        for rubric in rubrics
        for arm in RefineArm
        if arm != RefineArm.ORACLE or rubric.pk in with_criteria
    )
    return study


def _rows(study: RefineStudy):
    return study.refinements.all()


def refine_dispatch(study: RefineStudy, send: Callable[[list[LeasedTask]], None]):
    """The dispatch of every study: a batch study's poll, or the live window."""
    if study.batch:
        study_batches.batch_poll(BATCHES, study)
        return []
    return work.work_dispatch(RefineStudy, study, _rows, send)


def refine_study_id_of(pk: int) -> int | None:
    return Refinement.objects.filter(pk=pk).values_list("study_id", flat=True).first()


def running_refine_ids() -> list[int]:
    return work.running_ids(RefineStudy)


def refinement_execute(pk: int, token: str | None = None, *, client=None) -> bool:
    """Run one pending refinement if this message may take it; `client` replaces the provider
    router (a batch study's replay)."""
    ran = work.work_execute(
        Refinement, pk, token, _perform, use_cache=lambda r: r.study.use_cache, client=client
    )
    study = RefineStudy.objects.filter(pk=refine_study_id_of(pk)).first()
    if study is not None:
        work.job_finish_if_done(RefineStudy, study, _rows)
    return ran


# A refinement's stages by the purpose of their calls: the critique, the edit, then the judges
# (the independent judge's six rubrics and the expert criteria's judge).
STAGES = {"refine_critique": "critique", "refine_edit": "edit"}

BATCHES = study_batches.StudyBatchKind(
    kind="refine",
    job_model=RefineStudy,
    unit_model=Refinement,
    units_of=_rows,
    execute=refinement_execute,
    stage_of=lambda purpose: STAGES.get(purpose, "judge"),
)


def independent_jury(study: RefineStudy) -> Jury:
    """A one-judge jury of the study's judge with the default rubric weights (unsaved)."""
    return Jury(
        name=f"independent judge {study.judge_model}",
        judges=[study.judge_model],
        weights=current_weights(),
    )


def _perform(row: Refinement, client) -> dict:
    study, conversation = row.study, row.rubric.conversation
    case = trace_judging.case_of(conversation)
    sample = f"refine:{study.pk}/rubric:{row.rubric_id}"
    expert = [_judged(c) for c in coverage.expert_criteria_of(conversation)]
    criteria = _critique_criteria(row, expert)
    critique = refine.critique_request(
        events=case.events,
        profile=case.profile,
        criteria=criteria,
        model=study.evaluator_model,
        sample=f"{sample}/{row.arm}",
    )
    plan = work.stage(
        "critique",
        lambda: request_json(
            client,
            critique,
            lambda data: refine.validate_plan(
                data, events=case.events, criteria=len(criteria) if criteria else None
            ),
        ),
    ).data["actions"]
    edits = _edits(client, study, case, plan, f"{sample}/{row.arm}") if plan else []
    refined = refine.apply_edits(case.events, edits)
    jury = independent_jury(study)
    judge_sample = f"refine:{study.pk}/conversation:{conversation.public_id}"
    original, _ = work.stage(
        "judge",
        lambda: trace_judging.generic_score(
            client, jury=jury, events=case.events, case=case, sample=f"{judge_sample}/original"
        ),
    )
    score, _ = work.stage(
        "judge",
        lambda: trace_judging.generic_score(
            client, jury=jury, events=refined, case=case, sample=f"{judge_sample}/{row.arm}"
        ),
    )
    fields = {
        "status": WorkStatus.DONE,
        "plan": plan,
        "edits": edits,
        "events": refined,
        "diff": trace_diff(case.events, refined),
        "original_score": original,
        "refined_score": score,
    }
    if study.criteria_judge_model and expert:
        fields.update(_expert_scores(client, study, row, case, refined, expert, judge_sample))
    return fields


def _judged(criterion) -> JudgedCriterion:
    return JudgedCriterion(criterion.text, criterion.axis, criterion.weight or 1)


def _critique_criteria(row: Refinement, expert: list[JudgedCriterion]) -> list[dict] | None:
    """What the evaluator critiques against: the instance rubric, nothing (self-critique) or
    the expert criteria (the oracle)."""
    if row.arm == RefineArm.RUBRIC:
        return list(row.rubric.criteria.order_by("index").values("text", "axis", "weight"))
    if row.arm == RefineArm.ORACLE:
        return [
            {"text": c.text, "axis": c.axis or "unspecified", "weight": c.weight} for c in expert
        ]
    return None


def _expert_scores(client, study, row, case, refined, expert, judge_sample) -> dict:
    """Original and refined conversation scored against the expert criteria: normalised,
    overall and per axis."""

    def scored(events, tag):
        return work.stage(
            "judge",
            lambda: trace_judging.criteria_score(
                client,
                criteria=expert,
                judge_model=study.criteria_judge_model,
                events=events,
                case=case,
                sample=f"{judge_sample}/expert/{tag}",
            ),
        )

    before, after = scored(case.events, "original"), scored(refined, row.arm)
    axes_before, axes_after = axis_scores(expert, before.met), axis_scores(expert, after.met)
    return {
        "original_expert_score": before.normalised,
        "refined_expert_score": after.normalised,
        "expert_axes": {
            axis or "(none)": {"original": axes_before[axis], "refined": axes_after[axis]}
            for axis in axes_before
        },
    }


def _edits(client, study, case, plan, sample: str) -> list[dict]:
    request = refine.edit_request(
        events=case.events,
        profile=case.profile,
        plan=plan,
        model=study.editor_model,
        sample=sample,
    )
    validate = lambda data: refine.validate_edits(  # noqa: E731
        data, events=case.events, profile=case.profile, plan=plan
    )
    try:
        return request_json(client, request, validate, max_repairs=EDIT_REPAIRS).data["edits"]
    except StructuredFailure as failure:
        violations = _violations(failure, case, plan)
        raw = failure.responses[-1].text if failure.responses else ""
        if not violations:
            raise work.StageFailure("edit", failure.reason, raw_output=raw) from None
        raise work.StageFailure(
            "edit",
            "the editor broke its rules: " + "; ".join(violations),
            status=WorkStatus.REJECTED,
            violations=violations,
            plan=plan,
            raw_output=raw,
        ) from None
    except ProviderError as error:
        raise work.StageFailure("edit", failure_text(error)) from None


def _violations(failure: StructuredFailure, case, plan) -> list[str]:
    """The rule violations in the editor's last answer (empty when it failed otherwise)."""
    try:
        refine.validate_edits(
            extract_json_object(failure.responses[-1].text),
            events=case.events,
            profile=case.profile,
            plan=plan,
        )
    except refine.EditViolation as violation:
        return violation.problems
    except (InvalidOutput, IndexError):
        return []
    return []


# measure -> (score before, score after); MEASURES names them in tables.
GAINS = {
    "judge": ("original_score", "refined_score"),
    "expert": ("original_expert_score", "refined_expert_score"),
}
MEASURES = {"judge": "independent judge", "expert": "expert criteria"}
# Paired differences reported: the rubric against each control.
DIFFERENCES = (
    (RefineArm.RUBRIC, RefineArm.SELF),
    (RefineArm.RUBRIC, RefineArm.ORACLE),
    (RefineArm.ORACLE, RefineArm.SELF),
)


def refine_results(study: RefineStudy) -> dict:
    """Per arm: mean gain (refined - original) with its bootstrap interval, by the independent
    judge and against the expert criteria (overall and per axis), and the counts; then the
    paired differences between arms on the cases both refined."""
    rows = list(
        study.refinements.filter(status=WorkStatus.DONE).values(
            "rubric_id", "arm", *(f for pair in GAINS.values() for f in pair), "expert_axes"
        )
    )
    statuses = list(study.refinements.values_list("arm", "status"))
    gains = {measure: _gains(rows, *fields) for measure, fields in GAINS.items()}
    arms = {}
    for arm in RefineArm:
        done = [status for a, status in statuses if a == arm]
        arms[arm.value] = {
            "label": arm.label,
            "gain": _mean_interval(list(gains["judge"][arm].values()), study.pk),
            "expert_gain": _mean_interval(list(gains["expert"][arm].values()), study.pk),
            "axes": _axis_gains([r for r in rows if r["arm"] == arm], study.pk),
            "done": done.count(WorkStatus.DONE),
            "rejected": done.count(WorkStatus.REJECTED),
            "failed": done.count(WorkStatus.FAILED),
        }
    differences = [
        {
            "label": f"{RefineArm(a).label} - {RefineArm(b).label}",
            "arms": (a, b),
            **{measure: _paired(gains[measure], a, b, study.pk) for measure in GAINS},
        }
        for a, b in DIFFERENCES
    ]
    return {"arms": arms, "differences": differences, "difference": differences[0]["judge"]}


def _gains(rows, before: str, after: str) -> dict[str, dict[int, float]]:
    gains: dict[str, dict[int, float]] = {arm: {} for arm in RefineArm.values}
    for row in rows:
        if row[before] is not None and row[after] is not None:
            gains[row["arm"]][row["rubric_id"]] = row[after] - row[before]
    return gains


def _paired(gains, a: str, b: str, seed: int) -> sensitivity.Estimate | None:
    both = sorted(set(gains[a]) & set(gains[b]))
    return _mean_interval([gains[a][k] - gains[b][k] for k in both], seed)


def _axis_gains(rows: list[dict], seed: int) -> dict[str, sensitivity.Estimate | None]:
    by_axis: dict[str, list[float]] = {}
    for row in rows:
        for axis, scores in (row["expert_axes"] or {}).items():
            if scores["original"] is not None and scores["refined"] is not None:
                by_axis.setdefault(axis, []).append(scores["refined"] - scores["original"])
    return {axis: _mean_interval(values, seed) for axis, values in sorted(by_axis.items())}


def _mean_interval(values: list[float], seed: int) -> sensitivity.Estimate | None:
    if not values:
        return None
    data = np.asarray(values, dtype=float)
    draws = data[sensitivity.resample_indices(len(data), seed=seed)].mean(axis=1)
    low, high = sensitivity.percentile_interval(draws)
    return sensitivity.Estimate(float(data.mean()), low, high)


def refine_table(study: RefineStudy) -> pd.DataFrame:
    """Each arm's mean gains with their intervals and counts (by the independent judge, then
    against the expert criteria overall and per axis), then the paired differences. An arm
    the study did not run (no oracle without expert criteria) and a measure nothing was
    scored on are left out."""
    results = refine_results(study)
    ran = {
        key for key, arm in results["arms"].items() if arm["done"] + arm["rejected"] + arm["failed"]
    }
    measures = [
        m for m in GAINS if m == "judge" or any(results["arms"][key]["expert_gain"] for key in ran)
    ]
    records = []
    for key in [key for key in results["arms"] if key in ran]:
        arm = results["arms"][key]
        counts = {"done": arm["done"], "rejected": arm["rejected"], "failed": arm["failed"]}
        gains = {"judge": arm["gain"], "expert": arm["expert_gain"]}
        for measure in measures:
            records.append(
                {
                    "arm": key,
                    "label": arm["label"],
                    "measure": MEASURES[measure],
                    **_interval(gains[measure]),
                    **counts,
                }
            )
        for axis, estimate in arm["axes"].items():
            records.append(
                {
                    "arm": key,
                    "label": arm["label"],
                    "measure": f"expert criteria, axis {axis}",
                    **_interval(estimate),
                    **counts,
                }
            )
    blank = {"done": "", "rejected": "", "failed": ""}
    for difference in results["differences"]:
        if not set(difference["arms"]) <= ran:
            continue
        for measure in measures:
            records.append(
                {
                    "arm": " - ".join(difference["arms"]),
                    "label": difference["label"],
                    "measure": f"paired difference, {MEASURES[measure]}",
                    **_interval(difference[measure]),
                    **blank,
                }
            )
    return pd.DataFrame.from_records(records, columns=EXPORT_COLUMNS)


EXPORT_COLUMNS = (
    "arm",
    "label",
    "measure",
    "mean_gain",
    "mean_gain_low",
    "mean_gain_high",
    "done",
    "rejected",
    "failed",
)


def _interval(estimate: sensitivity.Estimate | None) -> dict[str, float | None]:
    if estimate is None:
        return {"mean_gain": None, "mean_gain_low": None, "mean_gain_high": None}
    return {
        "mean_gain": estimate.value,
        "mean_gain_low": estimate.low,
        "mean_gain_high": estimate.high,
    }


def refine_export(study: RefineStudy, suffix: str) -> str:
    caption = f"Critique-then-refine, gains per arm: {study.name}"
    return exports.table_export(
        refine_table(study), suffix, caption=caption, label=f"refine {study.pk}"
    )


def refinement_records(study: RefineStudy) -> list[dict]:
    """Every refinement: the arm, its plan and edits, violations and the scores."""
    rows = study.refinements.select_related("rubric__conversation").order_by("pk")
    return [
        {
            "study": study.pk,
            "rubric": row.rubric_id,
            "conversation": str(row.rubric.conversation.public_id),
            "arm": row.arm,
            "status": row.status,
            "plan": row.plan,
            "edits": row.edits,
            "violations": row.violations,
            "original_score": row.original_score,
            "refined_score": row.refined_score,
            "original_expert_score": row.original_expert_score,
            "refined_expert_score": row.refined_expert_score,
            "expert_axes": row.expert_axes,
            "failure_stage": row.failure_stage,
            "failure_reason": row.failure_reason,
        }
        for row in rows
    ]
