"""Fidelity review jobs: launch a reviewer over a run's scorable conversations, one leased
unit per conversation (jobs.services.leases), store its findings, report progress.

A unit claims its row with the message's token, asks the reviewer through request_json (the
answer validated against the error kinds and the conversation's patient messages, repaired
once), and stores findings or the failure; what every call cost is added to the row as each
answer arrives (jobs.services.accounting), so a worker killed mid-call loses no money's worth
of accounting, and the watch sends the unit again once its lease runs out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from decimal import Decimal

from django.db import transaction
from django.db.models import Count, Q, Sum
from django.urls import reverse
from django.utils import timezone

from benchmark.engine.agents.personalities import PersonalityError, default_personalities
from benchmark.models import Conversation, Run
from benchmark.services.trace_marks import TraceMark
from fidelity.engine.kinds import default_kinds, kind_labels
from fidelity.engine.parse import REVIEW_ANSWER_SCHEMA, review_validator
from fidelity.engine.review_prompt import PURPOSE, ReviewCase, review_prompt, review_request
from fidelity.models import ConversationReview, FidelityReview, ReviewStatus
from jobs.models import JobStatus
from jobs.services import accounting, finish
from jobs.services.cost_limits import cost_limit_reached, cost_limit_refusal, spent_of
from jobs.services.leases import (
    Heartbeat,
    LeasedTask,
    lease_claim,
    lease_dispatch,
    lease_extender,
    lease_release_fields,
)
from llm.clients import model_router
from llm.engine.chat import ProviderError
from llm.engine.providers.model_strings import check_model_string
from llm.engine.providers.redaction import failure_text
from llm.engine.structured import StructuredFailure, request_json

logger = logging.getLogger(__name__)
REVIEW_REPAIRS = 1
TRACE_FIELDS = ("event_id", "kind", "content", "tool_name", "arguments")


class ReviewError(ValueError):
    """A review cannot be launched as asked; the message says why."""


@transaction.atomic
def review_launch(
    *,
    run: Run,
    reviewer_model: str,
    conversations: list[Conversation] | None = None,
    concurrency: int = 8,
    use_cache: bool = True,
    cost_limit_usd: Decimal | None = None,
    user=None,
) -> FidelityReview:
    """A review of the run's scorable conversations (or of `conversations`), running; start
    it with jobs.services.starts.job_start once committed."""
    try:
        check_model_string(reviewer_model, purpose=PURPOSE)
    except ProviderError as error:
        raise ReviewError(str(error)) from None
    if refusal := cost_limit_refusal(models=[reviewer_model], cost_limit_usd=cost_limit_usd):
        raise ReviewError(refusal)
    chosen = run.conversations.scorable()
    if conversations is not None:
        chosen = chosen.filter(pk__in=[c.pk for c in conversations])
    ids = list(chosen.order_by("pk").values_list("pk", flat=True))
    if not ids:
        raise ReviewError(f"Run {run.name!r} has no finished conversation to review yet.")
    review = FidelityReview(
        run=run,
        reviewer_model=reviewer_model,
        prompt_version=review_prompt().version,
        concurrency=concurrency,
        use_cache=use_cache,
        cost_limit_usd=cost_limit_usd,
        status=JobStatus.RUNNING,
        created_by=user,
    )
    review.full_clean()
    review.save()
    ConversationReview.objects.bulk_create(
        ConversationReview(review=review, conversation_id=pk) for pk in ids
    )
    return review


# --- the job's units, for jobs.tasks.leased_job_tasks -------------------------------------------


def running_review_ids() -> list[int]:
    return list(
        FidelityReview.objects.filter(status=JobStatus.RUNNING).values_list("pk", flat=True)
    )


def review_id_of(pk: int) -> int | None:
    return ConversationReview.objects.filter(pk=pk).values_list("review_id", flat=True).first()


def _pending(review: FidelityReview):
    return review.conversation_reviews.filter(status=ReviewStatus.PENDING)


def review_dispatch(
    review: FidelityReview, send: Callable[[list[LeasedTask]], None]
) -> list[LeasedTask]:
    """Keep up to the review's concurrency of pending units with the workers."""
    with transaction.atomic():
        review = FidelityReview.objects.select_for_update().get(pk=review.pk)
        if review.status != JobStatus.RUNNING:
            return []
        sent = lease_dispatch(
            _pending(review),
            window=review.concurrency,
            send=send,
            stop=lambda: cost_limit_reached(review, spent=lambda: review_spent(review)),
        )
    review_finish_if_done(review)
    return sent


def review_finish_if_done(review: FidelityReview) -> None:
    """Finished once nothing is pending; failed, with the commonest reason, when every
    conversation's review failed."""
    units = review.conversation_reviews.all()

    def failure() -> str:
        if units.exclude(status=ReviewStatus.FAILED).exists():
            return ""
        common = units.values_list("failure_reason").annotate(n=Count("id")).order_by("-n")
        return f"All {units.count()} reviews failed; commonest reason: {common[0][0]}"

    finish.job_finish_if_done(review, pending=_pending(review), failure=failure)


def conversation_review_execute(pk: int, token: str | None = None) -> bool:
    """Claim pending unit `pk` with the message's token, review its conversation and store the
    outcome; returns whether it ran here."""
    rows = ConversationReview.objects.filter(pk=pk, status=ReviewStatus.PENDING)
    mine = lease_claim(rows, token)
    if mine is None:
        return False
    unit = ConversationReview.objects.select_related("review").get(pk=pk)
    recorder = accounting.RecordingClient(
        model_router(unit.review.use_cache),
        also=accounting.spend_ledger(ConversationReview, pk),
    )
    with Heartbeat(lease_extender(rows, mine), label=f"fidelity review {pk}"):
        outcome = _outcome(unit, recorder)
    with transaction.atomic():
        calls = [(purpose, response) for purpose, response, _ in recorder.unwritten]
        accounting.spend_added(ConversationReview, pk, calls)
        fields = {**outcome, "finished_at": timezone.now(), **lease_release_fields()}
        # Only the worker holding the lease stores: a duplicate that lost it changes nothing.
        rows.filter(lease_token=mine).update(**fields)
    review_finish_if_done(unit.review)
    return True


def _outcome(unit: ConversationReview, client) -> dict:
    try:
        case = review_case(unit.conversation)
        request = review_request(
            case,
            model=unit.review.reviewer_model,
            sample=f"fidelity:{unit.review_id}/conversation:{unit.conversation.public_id}",
        )
        validate = review_validator(
            kinds={kind.id for kind in default_kinds()}, patient_events=case.patient_event_ids
        )
        result = request_json(
            client, request, validate, max_repairs=REVIEW_REPAIRS, schema=REVIEW_ANSWER_SCHEMA
        )
    except StructuredFailure as failure:
        raw = failure.responses[-1].text if failure.responses else ""
        return {"status": ReviewStatus.FAILED, "failure_reason": failure.reason, "raw_output": raw}
    except ProviderError as error:
        return {"status": ReviewStatus.FAILED, "failure_reason": failure_text(error)}
    except Exception as error:  # a bug must not leave the unit pending forever
        logger.exception("fidelity review %s failed", unit.pk)
        return {"status": ReviewStatus.FAILED, "failure_reason": failure_text(error)}
    findings = result.data["findings"]
    return {
        "status": ReviewStatus.DONE,
        "findings": findings,
        "flagged": bool(findings),
        "raw_output": result.responses[-1].text,
    }


def review_case(conversation: Conversation) -> ReviewCase:
    """What the reviewer reads: the record, story, seed and personality the patient was
    given, and the trace's content (no model names, tokens or costs)."""
    entry = conversation.entry
    seed = entry.seed or {}
    try:
        personality = default_personalities().get(entry.personality)
        persona, traits = personality.render(), {t.dimension: t.level for t in personality.traits}
    except PersonalityError:  # a type since removed from the catalog: judged without it
        persona, traits = "", {}
    return ReviewCase(
        profile=entry.profile or {},
        story=entry.story,
        seed={
            **seed,
            "task_category": entry.task_category,
            "task_subcategory": entry.task_subcategory,
        },
        personality=persona,
        traits=traits,
        events=list(conversation.events.order_by("seq").values(*TRACE_FIELDS)),
        termination_reason=conversation.termination_reason,
    )


# --- what the pages read ---------------------------------------------------------------------


def review_spent(review: FidelityReview) -> Decimal:
    return spent_of(review.conversation_reviews.all())


def review_progress(review: FidelityReview) -> dict:
    units = review.conversation_reviews.all()
    summary = units.aggregate(
        total=Count("id"),
        pending=Count("id", filter=Q(status=ReviewStatus.PENDING)),
        done=Count("id", filter=Q(status=ReviewStatus.DONE)),
        failed=Count("id", filter=Q(status=ReviewStatus.FAILED)),
        flagged=Count("id", filter=Q(status=ReviewStatus.DONE, flagged=True)),
        input_tokens=Sum("input_tokens"),
        output_tokens=Sum("output_tokens"),
        cost=Sum("cost_usd"),
        unknown=Count("id", filter=Q(cost_known=False)),
    )
    total = summary["total"]
    finished = total - summary["pending"]
    return {
        **summary,
        "finished": finished,
        "percent": round(100 * finished / total) if total else 100,
        "cost": None if summary["unknown"] else (summary["cost"] or Decimal(0)),
        "live": review.status == JobStatus.RUNNING,
    }


def review_relaunch(review: FidelityReview) -> int:
    """Failed units go back to pending and the review runs again; returns how many."""
    with transaction.atomic():
        count = review.conversation_reviews.filter(status=ReviewStatus.FAILED).update(
            status=ReviewStatus.PENDING, failure_reason="", raw_output="", **lease_release_fields()
        )
        FidelityReview.objects.filter(pk=review.pk).update(
            status=JobStatus.RUNNING, finished_at=None, failure_reason="", stop_reason=""
        )
    review.refresh_from_db()
    review_finish_if_done(review)
    return count


def conversation_marks(conversation: Conversation) -> dict[str, list[TraceMark]]:
    """The findings of every finished review of the conversation, by the event they point at
    (benchmark.services.trace_marks)."""
    labels = kind_labels()
    marks: dict[str, list[TraceMark]] = {}
    done = conversation.fidelity_reviews.filter(status=ReviewStatus.DONE, flagged=True)
    for unit in done.select_related("review").order_by("review_id"):
        link = reverse("fidelity:review", args=[unit.review_id])
        source = f"fidelity review {unit.review_id} ({unit.review.reviewer_model})"
        for finding in unit.findings:
            mark = TraceMark(
                label=labels.get(finding["kind"], finding["kind"]),
                text=finding["explanation"],
                source=source,
                link=link,
            )
            marks.setdefault(finding["event"], []).append(mark)
    return marks
