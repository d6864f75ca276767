"""Scoring in batch mode: the job's judge calls go through the providers' batch APIs (about
half the price, answers within 24 hours) instead of one live call per worker task.

The job's watch (jobs.services.watch, every half lease) is the periodic poll: under the job's
poll lease it looks at every open batch, records the answers of those that ended, then sends
the pending judge calls that are in no open batch: those the response cache answers at once,
the rest in new batches, one model at a time. A call a batch gave no answer (errored, expired,
cancelled) goes out again in a later batch, up to BATCH_ATTEMPTS batches, then its score is an
error (a relaunch tries it again). Each answer is recorded in one transaction with its
accounting row, keyed by batch and request (jobs.services.batches.answer_key): a poller killed
at any point loses nothing and pays nothing twice. A batch answer is validated as a live one
is; an unusable one is not repaired (that would take another batch): the score is invalid.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Mapping
from functools import partial

from django.db import transaction
from django.utils import timezone

from benchmark.models import ModelCall
from jobs.models import JobStatus, ProviderBatch
from jobs.services import accounting, batches
from jobs.services.cost_limits import cost_limit_reached
from jobs.services.leases import LeasedTask
from jury.engine.parse import JUDGE_ANSWER_SCHEMA, validate_judge_answer
from jury.engine.prompt import prompt_hash
from jury.models import JudgeScore, ScoreStatus, ScoringJob
from jury.services import scoring
from jury.services.judge_inputs import judge_inputs

# Private helpers of the live path, shared so a batch call is the very call a live one makes
# and its outcome is stored in the same columns.
from jury.services.scoring import (
    _attempt,
    _merge_unmerged,
    _score_request,
    _spend_fields,
)
from llm.clients import model_router
from llm.engine.chat import ChatRequest, ChatResponse, ProviderError
from llm.engine.providers.batches import BatchResult
from llm.engine.providers.redaction import failure_text
from llm.engine.structured import InvalidOutput, extract_json_object, json_request
from llm.services import prices

KIND = "scoring"  # the job kind jury.tasks declares
# Batches a judge call may go out in before its score is an error.
BATCH_ATTEMPTS = 3


def scoring_job_dispatch(job: ScoringJob, send: Callable[[list[LeasedTask]], None]) -> None:
    """The dispatch of every scoring job: a batch job's poll, or the live window."""
    if job.batch:
        scoring_batch_poll(job)
    else:
        scoring.scoring_dispatch(job, send)


def scoring_batch_poll(job: ScoringJob) -> None:
    """Record what the job's batches answered, send what is pending in new batches, and
    finish the job once nothing is pending. Does nothing while another poller holds it."""
    token = batches.poll_lease_claim(KIND, job.pk)
    if token is None:
        return
    try:
        router = model_router(job.use_cache, overrides=prices.price_overrides())
        for batch in batches.open_batches(KIND, job.pk):
            # Recording a large batch takes a while: the lease is renewed batch by batch.
            if not batches.poll_lease_extend(KIND, job.pk, token):
                return
            _batch_poll(job, batch, router)
        _merge_unmerged(job)
        job.refresh_from_db(fields=["status"])
        held = batches.poll_lease_extend(KIND, job.pk, token)
        if held and job.status == JobStatus.RUNNING and not _limit_reached(job):
            _pending_send(job, router)
    finally:
        batches.poll_lease_release(KIND, job.pk, token)
    scoring.job_finish_if_done(job)


def _batch_poll(job: ScoringJob, batch: ProviderBatch, router) -> None:
    try:
        client = router.client_for(batch.model)
    except ProviderError as error:  # its key was removed since: looked at again later
        batch.error = failure_text(error)
        batch.save(update_fields=["error"])
        return
    batches.batch_poll(
        batch,
        client,
        requests_of=partial(_requests_of, job),
        record=partial(_result_record, job),
    )


def _limit_reached(job: ScoringJob) -> bool:
    return cost_limit_reached(job, spent=lambda: scoring.scoring_spent(job))


# --- sending ----------------------------------------------------------------------------------


def _pending_send(job: ScoringJob, router) -> None:
    waiting = batches.units_in_flight(KIND, job.pk)
    attempts = batches.unit_attempts(KIND, job.pk)
    pending = _scores(job).filter(status=ScoreStatus.PENDING).exclude(pk__in=waiting)
    by_model: dict[str, list[tuple[str, int, ChatRequest]]] = defaultdict(list)
    inputs_of: dict[int, object] = {}
    for score in pending.order_by("pk").iterator(chunk_size=500):
        if attempts[score.pk] >= BATCH_ATTEMPTS:
            _given_up(score)
            continue
        try:
            client = router.client_for(score.judge_model)
        except ProviderError as error:  # no key, a model string it cannot call: said so
            _failed(score, failure_text(error))
            continue
        request = _request(score, inputs_of)
        cached = client.cached_answer(request)
        if cached is not None:
            _answer_store(
                score.pk, cached, key=_cached_key(score), prompt=_prompt(request), merge_job=job
            )
            continue
        custom_id = f"s{score.pk}-a{attempts[score.pk] + 1}"
        queued = by_model[score.judge_model]
        queued.append((custom_id, score.pk, request))
        # Sent as soon as a batch is full: a large job never holds all its prompts at once.
        if len(queued) == batches.MAX_BATCH_REQUESTS:
            _batch_send(job, client, by_model.pop(score.judge_model))
    for model, requests in by_model.items():
        _batch_send(job, router.client_for(model), requests)


def _batch_send(job: ScoringJob, client, requests: list[tuple[str, int, ChatRequest]]) -> None:
    batches.batch_submit(kind=KIND, job_id=job.pk, client=client, requests=requests)


def _scores(job: ScoringJob):
    # Without the columns no judge reads (a conversation's two sandbox snapshots above all):
    # thousands of scores are read at once here.
    return (
        JudgeScore.objects.filter(job=job)
        .select_related("job__jury", "rubric_version", "conversation")
        .defer(*scoring.UNREAD)
    )


def _request(score: JudgeScore, inputs_of: dict) -> ChatRequest:
    """The judge call the live path would make first, asking for the judge's JSON answer."""
    if score.conversation_id not in inputs_of:
        # Scores come in primary-key order, a conversation's together: only its inputs are
        # kept, so a job of thousands of conversations never holds all their traces.
        inputs_of.clear()
        inputs_of[score.conversation_id] = judge_inputs(score.conversation)
    request = _score_request(score, inputs_of[score.conversation_id])
    return json_request(request, JUDGE_ANSWER_SCHEMA)


def _requests_of(job: ScoringJob, batch: ProviderBatch) -> Mapping[str, ChatRequest]:
    """The requests behind a batch's custom ids, built again as they were sent."""
    scores = {score.pk: score for score in _scores(job).filter(pk__in=batch.requests.values())}
    inputs_of: dict = {}
    return {
        custom_id: _request(scores[pk], inputs_of)
        for custom_id, pk in batch.requests.items()
        if pk in scores
    }


def _cached_key(score: JudgeScore) -> str:
    # One per score and attempt: a relaunched score answered from the cache again is a new call.
    text = f"cache:{score.pk}:{len(score.attempts)}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _given_up(score: JudgeScore) -> None:
    _failed(score, f"no answer after {BATCH_ATTEMPTS} batches: {score.error or 'no answer'}")


def _failed(score: JudgeScore, error: str) -> None:
    JudgeScore.objects.filter(pk=score.pk, status=ScoreStatus.PENDING).update(
        status=ScoreStatus.ERROR, error=error[:2000], updated_at=timezone.now()
    )


# --- recording --------------------------------------------------------------------------------


def _result_record(
    job: ScoringJob, batch: ProviderBatch, result: BatchResult, request: ChatRequest
) -> None:
    score_id = batch.requests.get(result.custom_id)
    if score_id is None:
        return
    if result.response is None:
        # Sent again in a later batch; the reason stays on the row for the page.
        JudgeScore.objects.filter(pk=score_id, status=ScoreStatus.PENDING).update(
            error=f"batch request {result.error_kind}: {result.error}"[:2000]
        )
        return
    key = batches.answer_key(batch, result.custom_id)
    _answer_store(score_id, result.response, key=key, prompt=_prompt(request))


def _answer_store(
    score_id: int,
    response: ChatResponse,
    *,
    key: str,
    prompt: str,
    merge_job: ScoringJob | None = None,
) -> None:
    """Record one answer once: its accounting row and the score's spend whatever the score's
    state (the call was paid either way), its outcome only while the score is pending."""
    with transaction.atomic():
        score = JudgeScore.objects.select_for_update().select_related("job").get(pk=score_id)
        owner = partial(ModelCall, run_id=score.job.run_id, conversation_id=score.conversation_id)
        if not accounting.answer_record(owner, "judge", response, key):
            return  # recorded by an earlier poll
        JudgeScore.objects.filter(pk=score_id).update(**_spend_fields([response]))
        JudgeScore.objects.filter(pk=score_id, status=ScoreStatus.PENDING).update(
            **_outcome(response),
            attempts=[*score.attempts, _attempt(response)],
            prompt_hash=prompt,
            cached=response.cached,
            updated_at=timezone.now(),
        )
    if merge_job is not None:
        scoring.conversation_merge(merge_job, score.conversation)


def _outcome(response: ChatResponse) -> dict:
    """The score's columns for one judge answer, judged as the live path judges it."""
    text = response.text
    fields = {"raw_output": text, "error": "", "invalid_reason": "", "score": None}
    if response.refusal:
        return {**fields, "status": ScoreStatus.INVALID, "invalid_reason": "refused"}
    try:
        data = validate_judge_answer(extract_json_object(text))
    except InvalidOutput:
        reason = scoring.reason_code(text) or "invalid"
        return {**fields, "status": ScoreStatus.INVALID, "invalid_reason": reason}
    return {
        **fields,
        "status": ScoreStatus.VALID,
        "score": data["score"],
        "explanation": data["explanation"],
    }


def batch_progress(job: ScoringJob) -> list[dict]:
    """The job's batches, for its page and the API."""
    return batches.batch_rows(KIND, job.pk)


def _prompt(request: ChatRequest) -> str:
    return prompt_hash(request.system, request.messages[0].content)
