"""Critique-then-refine studies: for each instance rubric of a generation job, its conversation
is refined twice - critique with the rubric, and the self-critique control with no rubric - and
an independent judge (the six case-agnostic rubrics, a judge model of its own) scores the
original and each refined copy. Edits breaking the editor's rules are rejected and listed."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import numpy as np
import pandas as pd
from django.db import transaction

from benchmark.engine.chat import ProviderError
from benchmark.engine.providers.model_strings import check_model_string
from benchmark.engine.providers.redaction import failure_text
from benchmark.engine.structured import (
    InvalidOutput,
    StructuredFailure,
    extract_json_object,
    request_json,
)
from benchmark.services.leases import LeasedTask
from jury.models import Jury
from jury.services.rubrics import current_weights
from rubric_lab.engine import refine, sensitivity
from rubric_lab.engine.perturb import trace_diff
from rubric_lab.models import (
    GenerationJob,
    InstanceRubric,
    RefineArm,
    Refinement,
    RefineStudy,
    WorkStatus,
)
from rubric_lab.services import budgets, exports, trace_judging
from rubric_lab.services import evaluation_work as work

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
    name: str = "",
    max_cases: int = 20,
    use_cache: bool = True,
    concurrency: int = 8,
    cost_limit_usd: Decimal | None = None,
    user=None,
) -> RefineStudy:
    try:
        check_model_string(evaluator_model, purpose="refine_critique")
        check_model_string(editor_model, purpose="refine_edit")
        check_model_string(judge_model, purpose="judge")
    except ProviderError as error:
        raise RefineError(str(error)) from None
    if not 1 <= max_cases <= MAX_CASES:
        raise RefineError(f"Cases must number between 1 and {MAX_CASES}.")
    rubrics = list(
        InstanceRubric.objects.filter(generation__job=generation_job).order_by("pk")[:max_cases]
    )
    if not rubrics:
        raise RefineError(f"{generation_job.name!r} has produced no instance rubric yet.")
    study = RefineStudy(
        name=name.strip() or f"Refine with {generation_job.name}", generation_job=generation_job,
        evaluator_model=evaluator_model, editor_model=editor_model, judge_model=judge_model,
        max_cases=max_cases, use_cache=use_cache, concurrency=concurrency,
        cost_limit_usd=cost_limit_usd, created_by=user,
    )  # fmt: skip
    if refusal := budgets.launch_refusal(study):
        raise RefineError(refusal)
    study.save()
    Refinement.objects.bulk_create(
        Refinement(study=study, rubric=rubric, arm=arm) for rubric in rubrics for arm in RefineArm
    )
    return study


def _rows(study: RefineStudy):
    return study.refinements.all()


def refine_dispatch(study: RefineStudy, send: Callable[[list[LeasedTask]], None]):
    return work.work_dispatch(RefineStudy, study, _rows, send)


def refine_study_id_of(pk: int) -> int | None:
    return Refinement.objects.filter(pk=pk).values_list("study_id", flat=True).first()


def running_refine_ids() -> list[int]:
    return work.running_ids(RefineStudy)


def refinement_execute(pk: int, token: str | None = None) -> bool:
    ran = work.work_execute(Refinement, pk, token, _perform, use_cache=lambda r: r.study.use_cache)
    study = RefineStudy.objects.filter(pk=refine_study_id_of(pk)).first()
    if study is not None:
        work.job_finish_if_done(RefineStudy, study, _rows)
    return ran


def independent_jury(study: RefineStudy) -> Jury:
    """A one-judge jury of the study's judge with the default rubric weights (unsaved)."""
    return Jury(name=f"independent judge {study.judge_model}", judges=[study.judge_model],
                weights=current_weights())  # fmt: skip


def _perform(row: Refinement, client) -> dict:
    study, case = row.study, trace_judging.case_of(row.rubric.conversation)
    sample = f"refine:{study.pk}/rubric:{row.rubric_id}"
    criteria = None
    if row.arm == RefineArm.RUBRIC:
        criteria = list(row.rubric.criteria.order_by("index").values("text", "axis", "weight"))
    critique = refine.critique_request(
        events=case.events, profile=case.profile, criteria=criteria,
        model=study.evaluator_model, sample=f"{sample}/{row.arm}",
    )  # fmt: skip
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
    judge_sample = f"refine:{study.pk}/conversation:{row.rubric.conversation.public_id}"
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
    return {
        "status": WorkStatus.DONE, "plan": plan, "edits": edits, "events": refined,
        "diff": trace_diff(case.events, refined), "original_score": original,
        "refined_score": score,
    }  # fmt: skip


def _edits(client, study, case, plan, sample: str) -> list[dict]:
    request = refine.edit_request(
        events=case.events, profile=case.profile, plan=plan, model=study.editor_model,
        sample=sample,
    )  # fmt: skip
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
            "edit", "the editor broke its rules: " + "; ".join(violations),
            status=WorkStatus.REJECTED, violations=violations, plan=plan, raw_output=raw,
        ) from None  # fmt: skip
    except ProviderError as error:
        raise work.StageFailure("edit", failure_text(error)) from None


def _violations(failure: StructuredFailure, case, plan) -> list[str]:
    """The rule violations in the editor's last answer (empty when it failed otherwise)."""
    try:
        refine.validate_edits(
            extract_json_object(failure.responses[-1].text),
            events=case.events, profile=case.profile, plan=plan,
        )  # fmt: skip
    except refine.EditViolation as violation:
        return violation.problems
    except (InvalidOutput, IndexError):
        return []
    return []


def refine_results(study: RefineStudy) -> dict:
    """Per arm: mean gain (refined - original) with its bootstrap interval, rejections; and
    the paired difference rubric - self on the cases both arms refined."""
    rows = list(study.refinements.values("rubric_id", "arm", "status", "original_score",
                                         "refined_score"))  # fmt: skip
    arms = {}
    gains: dict[str, dict[int, float]] = {arm: {} for arm in RefineArm.values}
    for row in rows:
        if row["status"] == WorkStatus.DONE:
            gains[row["arm"]][row["rubric_id"]] = row["refined_score"] - row["original_score"]
    for arm in RefineArm:
        statuses = [row["status"] for row in rows if row["arm"] == arm]
        arms[arm.value] = {
            "label": arm.label,
            "gain": _mean_interval(list(gains[arm].values()), study.pk),
            "done": statuses.count(WorkStatus.DONE),
            "rejected": statuses.count(WorkStatus.REJECTED),
            "failed": statuses.count(WorkStatus.FAILED),
        }
    both = sorted(set(gains["rubric"]) & set(gains["self"]))
    difference = [gains["rubric"][k] - gains["self"][k] for k in both]
    return {"arms": arms, "difference": _mean_interval(difference, study.pk)}


def _mean_interval(values: list[float], seed: int) -> sensitivity.Estimate | None:
    if not values:
        return None
    data = np.asarray(values, dtype=float)
    draws = data[sensitivity.resample_indices(len(data), seed=seed)].mean(axis=1)
    low, high = sensitivity.percentile_interval(draws)
    return sensitivity.Estimate(float(data.mean()), low, high)


def refine_table(study: RefineStudy) -> pd.DataFrame:
    """Each arm's mean gain with its interval and counts, then the paired difference."""
    results = refine_results(study)
    records = [
        {"arm": key, "label": arm["label"], **_interval(arm["gain"]), "done": arm["done"],
         "rejected": arm["rejected"], "failed": arm["failed"]}
        for key, arm in results["arms"].items()
    ]  # fmt: skip
    records.append({"arm": "rubric - self", "label": "Paired difference of the gains",
                    **_interval(results["difference"]), "done": "", "rejected": "",
                    "failed": ""})  # fmt: skip
    return pd.DataFrame.from_records(records, columns=EXPORT_COLUMNS)


EXPORT_COLUMNS = ("arm", "label", "mean_gain", "mean_gain_low", "mean_gain_high", "done",
                  "rejected", "failed")  # fmt: skip


def _interval(estimate: sensitivity.Estimate | None) -> dict[str, float | None]:
    if estimate is None:
        return {"mean_gain": None, "mean_gain_low": None, "mean_gain_high": None}
    return {"mean_gain": estimate.value, "mean_gain_low": estimate.low,
            "mean_gain_high": estimate.high}  # fmt: skip


def refine_export(study: RefineStudy, suffix: str) -> str:
    caption = f"Critique-then-refine, gains per arm: {study.name}"
    return exports.table_export(
        refine_table(study), suffix, caption=caption, label=f"refine {study.pk}"
    )
