"""Scoring in batch mode: the job's judge calls go through the providers' batch APIs (about
half the price, answers within 24 hours) instead of one live call per worker task.

The shared poll (jobs.services.batch_jobs) does the work from the job's watch; this module
says what a scoring job supplies: its pending judge calls and the call each makes (the very
call the live path makes first, jury.services.scoring.score_request), and how answers are
recorded: a chunk at a time (batch_jobs.answers_store), each answer in the same transaction
as its accounting row, keyed by batch and request
(jobs.services.batches.answer_key), in the columns the live path writes. A poller killed at
any point loses nothing and pays nothing twice. An unusable batch answer is not repaired
(that would take another batch): the score is invalid. A call resent live takes the live
path whole, repairs included.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from functools import partial

from django.utils import timezone

from benchmark.models import ModelCall
from jobs.models import ProviderBatch
from jobs.services import accounting, batch_jobs, batches
from jobs.services.cost_limits import cost_limit_reached
from jobs.services.leases import LeasedTask
from jury.engine.parse import JUDGE_ANSWER_SCHEMA, validate_judge_answer
from jury.engine.prompt import prompt_hash
from jury.models import JudgeScore, ScoreStatus, ScoringJob
from jury.services import scoring
from jury.services.judge_inputs import judge_inputs
from llm.clients import model_router
from llm.engine.chat import ChatRequest, ChatResponse
from llm.engine.providers.batches import BatchReceipt, BatchResult
from llm.engine.structured import InvalidOutput, extract_json_object, json_request
from llm.services import prices

KIND = "scoring"  # the job kind jury.tasks declares


def scoring_job_dispatch(job: ScoringJob, send: Callable[[list[LeasedTask]], None]) -> None:
    """The dispatch of every scoring job: a batch job's poll, or the live window."""
    if job.batch:
        scoring_batch_poll(job)
    else:
        scoring.scoring_dispatch(job, send)


def scoring_batch_poll(job: ScoringJob) -> None:
    """Record what the job's batches answered, send what is pending in new batches (or live),
    and finish the job once nothing is pending. Does nothing while another poller holds it."""
    if batch_jobs.batch_job_poll(job, _work(job)):
        scoring.job_finish_if_done(job)


def _work(job: ScoringJob) -> batch_jobs.BatchWork:
    return batch_jobs.BatchWork(
        kind=KIND,
        router=lambda: model_router(job.use_cache, overrides=prices.price_overrides()),
        pending=partial(_pending, job),
        requests_of=partial(_requests_of, job),
        record_chunk=partial(_results_record, job),
        note=_prompt,
        cached=partial(_cached_record, job),
        failed=_failed,
        live=scoring.judge_score_execute,
        limit_reached=lambda: cost_limit_reached(job, spent=lambda: scoring.scoring_spent(job)),
        recorded=partial(scoring.merge_unmerged, job),
    )


# --- sending ----------------------------------------------------------------------------------


def _pending(job: ScoringJob, skip: set[int]) -> Iterator[batch_jobs.Unit]:
    pending = _scores(job).filter(status=ScoreStatus.PENDING).exclude(pk__in=skip)
    inputs_of: dict[int, object] = {}
    for score in pending.order_by("pk").iterator(chunk_size=500):
        yield batch_jobs.Unit(
            pk=score.pk,
            model=score.judge_model,
            request=partial(_request, score, inputs_of),
            last_error=score.error,
        )


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
    request = scoring.score_request(score, inputs_of[score.conversation_id])
    return json_request(request, JUDGE_ANSWER_SCHEMA)


def _requests_of(job: ScoringJob, batch: ProviderBatch) -> Mapping[str, ChatRequest]:
    """The requests behind a batch's custom ids, built again as they were sent (only for the
    offline scripts, and batches sent before receipts were kept: BatchReceipt)."""
    scores = {score.pk: score for score in _scores(job).filter(pk__in=batch.requests.values())}
    inputs_of: dict = {}
    return {
        custom_id: _request(scores[pk], inputs_of)
        for custom_id, pk in batch.requests.items()
        if pk in scores
    }


def _cached_record(
    job: ScoringJob, unit: batch_jobs.Unit, receipt: BatchReceipt, response: ChatResponse
) -> None:
    attempts = JudgeScore.objects.filter(pk=unit.pk).values_list("attempts", flat=True).first()
    # One key per score and attempt: a relaunched score answered from the cache again is a
    # new call.
    key = hashlib.sha256(f"cache:{unit.pk}:{len(attempts or [])}".encode()).hexdigest()[:32]
    stored = _answers_store(job, [batch_jobs.Answer(unit.pk, response, receipt, key)])
    for score in stored:
        scoring.conversation_merge(job, score.conversation)


def _failed(score_id: int, error: str) -> None:
    JudgeScore.objects.filter(pk=score_id, status=ScoreStatus.PENDING).update(
        status=ScoreStatus.ERROR, error=error[:2000], updated_at=timezone.now()
    )


# --- recording --------------------------------------------------------------------------------


def _results_record(
    job: ScoringJob, batch: ProviderBatch, chunk: list[tuple[BatchResult, BatchReceipt]]
) -> None:
    answers, unanswered = batch_jobs.results_split(batch, chunk)
    # Sent again in a later batch; the reason stays on the row for the page.
    pending = JudgeScore.objects.filter(status=ScoreStatus.PENDING)
    batch_jobs.unanswered_note(pending, "error", unanswered)
    _answers_store(job, answers)


def _answers_store(job: ScoringJob, answers: list[batch_jobs.Answer]) -> list[JudgeScore]:
    """Record answers once each (batch_jobs.answers_store): their accounting rows and the
    scores' spend whatever the scores' state (the calls were paid either way), their outcome
    only while pending. Returns the scores changed."""
    run_id = job.run_id

    def row(score: JudgeScore, answer: batch_jobs.Answer):
        owner = partial(ModelCall, run_id=run_id, conversation_id=score.conversation_id)
        return accounting.answer_row(owner, "judge", answer.response, answer.key)

    return batch_jobs.answers_store(
        JudgeScore.objects.filter(job=job), answers, row=row, apply=_answer_apply
    )


def _answer_apply(score: JudgeScore, answer: batch_jobs.Answer) -> list[str]:
    """Set one answer's spend and, while the score is pending (it is locked: that cannot
    change meanwhile), its outcome on the score; returns the fields set."""
    spent = _spend_set(score, answer.response)
    if score.status != ScoreStatus.PENDING:
        return spent
    # The prompt's hash, kept when the batch was sent (BatchReceipt.note).
    outcome = _outcome_fields(score, answer.response, answer.receipt.note)
    for name, value in outcome.items():
        setattr(score, name, value)
    return [*spent, *outcome]


def _spend_set(score: JudgeScore, response: ChatResponse) -> list[str]:
    """Add one answer to the score's sums, as scoring.spend_fields does in SQL: an unknown
    price anywhere makes the cost unknown, and the first answer starts it."""
    usage = response.usage
    first = score.calls == 0
    for name in ("cost_usd", "list_cost_usd"):
        old, new = getattr(score, name), getattr(response, name)
        setattr(score, name, new if first else (None if old is None or new is None else old + new))
    score.calls += 1
    score.cached_calls += int(response.cached)
    score.input_tokens += usage.input_tokens
    score.output_tokens += usage.output_tokens
    score.cached_input_tokens += usage.cached_input_tokens
    score.cache_write_tokens += usage.cache_write_tokens
    return list(SPEND)


SPEND = (
    "calls",
    "cached_calls",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "cost_usd",
    "list_cost_usd",
)


def _outcome_fields(score: JudgeScore, response: ChatResponse, prompt: str) -> dict:
    return {
        **_outcome(response),
        "attempts": [*score.attempts, scoring.attempt_record(response)],
        "prompt_hash": prompt,
        "cached": response.cached,
        "updated_at": timezone.now(),
    }


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
    """What a judge call keeps of its request to record its answer: the prompt's hash."""
    return prompt_hash(request.system, request.messages[0].content)
