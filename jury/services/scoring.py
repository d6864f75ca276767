"""Scoring a run with a jury: one judge call per (conversation, rubric, judge), then merging.

Launching pins the current rubric versions (or the versions asked for) and creates every
JudgeScore row as pending, so progress is a count of rows. A job may be restricted to some of
the run's conversations and carry its own judge prompt: that is how a clinician study's
conversations are re-scored by another jury configuration (alignment.services.rescoring).

Executing a row is idempotent: a valid row is never judged again, and a pending, invalid or
errored row can be retried by relaunching. A judge failure never re-runs the conversation.
Judges see the profile, the scenario and the trace, never the model under evaluation: nothing
from RunAgent reaches the prompt or the offline judge's hints.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache, partial

from django.db import transaction
from django.db.models import Case, Count, DecimalField, F, Q, QuerySet, Sum, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from audit.services import audit_record
from benchmark.models import Conversation, ModelCall, Run
from jobs.models import JobStatus
from jobs.services import accounting, finish, watch
from jobs.services.cost_limits import (
    CostLimitError,
    cost_limit_reached,
    cost_limit_refusal,
    job_resume,
    spent_of,
)
from jobs.services.leases import (
    Heartbeat,
    LeasedTask,
    connection_checked,
    lease_claim,
    lease_dispatch_groups,
    lease_extender,
    lease_release_fields,
)
from jobs.services.retries import retries_added, retry_fields, retry_summary
from jobs.services.starts import job_start
from jury.engine.aggregate import (
    incomplete_rubrics,
    judge_aggregates,
    jury_aggregate,
    merge_judges,
    weighted_aggregate,
)
from jury.engine.calibration import Calibration
from jury.engine.example_prompt import render_examples_block, with_examples
from jury.engine.outcomes import outcome_checks
from jury.engine.parse import (
    JUDGE_ANSWER_SCHEMA,
    InvalidJudgeAnswer,
    parse_judge_answer,
    validate_judge_answer,
)
from jury.engine.prompt import (
    JUDGE_TEMPLATE_PATH,
    ConversationText,
    JudgeTemplate,
    PromptTemplateError,
    case_user_prefix,
    load_judge_template,
    normalise_template_text,
    parse_judge_template,
    prompt_hash,
    render_conversation,
    render_judge_prompt_for,
    stable_user_prefix,
)
from jury.engine.rubrics import Rubric
from jury.models import (
    ConversationResult,
    JudgeScore,
    Jury,
    MergeMode,
    RubricResult,
    RubricVersion,
    ScoreStatus,
    ScoringJob,
)
from jury.services.judge_examples import (
    JudgeExample,
    MissingExampleError,
    job_examples,
    missing_examples,
    missing_examples_message,
)
from jury.services.judge_inputs import (  # scenario_of, trace_of: the rubric lab's too
    JudgeInputs,
    judge_inputs,
    scenario_of,  # noqa: F401
    trace_of,  # noqa: F401
)
from jury.services.rubrics import current_versions, rubric_of
from llm.clients import model_router
from llm.engine.chat import ChatRequest, ChatResponse, Message, ProviderError
from llm.engine.providers.client import batch_capable
from llm.engine.providers.redaction import failure_text
from llm.engine.structured import StructuredFailure, request_json
from llm.services import prices

logger = logging.getLogger(__name__)

# One repair turn: enough for a judge that forgot the format, bounded so a judge that cannot
# answer in JSON costs at most two calls per score.
JUDGE_REPAIRS = 1
RETRIED = (ScoreStatus.INVALID, ScoreStatus.ERROR)
MAX_CONCURRENCY = 1024
# The most judge calls one message carries: a conversation's rubrics x judges (6 x 3) fit.
# A group's claim, read, merge and the dispatch after it are paid once for all its calls
# (issue 34: per-call bookkeeping cost as much CPU as inspect-ai's whole call).
GROUP_LARGEST = 24


class ScoringError(ValueError):
    """A scoring job cannot be launched as asked; the message says why."""


# --- launching ---------------------------------------------------------------------------


@transaction.atomic
def scoring_launch(
    *,
    run: Run,
    jury: Jury,
    use_cache: bool = True,
    concurrency: int = 64,
    user=None,
    rubric_versions: Sequence[RubricVersion] | None = None,
    conversations: Sequence[Conversation] | None = None,
    judge_template: str = "",
    cost_limit_usd: Decimal | None = None,
    batch: bool = False,
    batch_resend_live: bool = False,
) -> ScoringJob:
    """Pin the rubric versions (default: the current judged ones) and create every judge task
    as pending. `conversations` restricts the job to some of the run's conversations;
    `judge_template` is a judge prompt variant (blank or the shipped text: the shipped one);
    `cost_limit_usd` pauses the job once its judges spent that much (every judge priced);
    `batch` sends the judge calls through the providers' batch APIs
    (jury.services.scoring_batches), `batch_resend_live` calls live what a batch left
    unanswered."""
    refusal = cost_limit_refusal(models=jury.judges, cost_limit_usd=cost_limit_usd)
    if refusal:
        raise ScoringError(refusal)
    versions = _versions_check(
        current_versions(judged_only=True) if rubric_versions is None else rubric_versions, jury
    )
    template = judge_template_check(judge_template)
    if not run.conversations.scorable().exists():
        raise ScoringError(f"Run {run.name!r} has no finished conversation to score yet.")
    if conversations is not None:
        _conversations_check(run, conversations)
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ScoringError(f"Concurrency must lie between 1 and {MAX_CONCURRENCY}.")
    if missing := missing_examples(jury):
        raise ScoringError(missing_examples_message(jury, missing))
    if batch and (no_batch := [judge for judge in jury.judges if not batch_capable(judge)]):
        raise ScoringError(
            f"Batch mode needs judges with a batch API (openai/, anthropic/ or offline/): "
            f"{', '.join(no_batch)} has none."
        )
    job = ScoringJob.objects.create(
        run=run,
        jury=jury,
        use_cache=use_cache,
        concurrency=concurrency,
        status=JobStatus.RUNNING,
        created_by=user,
        judge_template=template,
        cost_limit_usd=cost_limit_usd,
        batch=batch,
        batch_resend_live=batch and batch_resend_live,
    )
    job.rubric_versions.set(versions)
    if conversations is not None:
        job.conversations.set(conversations)
    scores_create_missing(job)
    audit_record(
        actor=user,
        action="scoring.launched",
        target=job,
        after={
            "run": run.pk,
            "jury": jury.name,
            "judges": jury.judges,
            "rubric_versions": [v.pk for v in versions],
            "use_cache": use_cache,
            "conversations": len(conversations) if conversations is not None else "all",
            "prompt_variant": bool(template),
            "cost_limit_usd": None if cost_limit_usd is None else str(cost_limit_usd),
            "batch": batch,
            "batch_resend_live": job.batch_resend_live,
        },
    )
    return job


def _versions_check(versions: Sequence[RubricVersion], jury: Jury) -> list[RubricVersion]:
    """Judged versions, at most one per rubric, each weighted by the jury, one weight > 0."""
    versions = list(versions)
    if not versions:
        raise ScoringError("Pick at least one rubric version to score.")
    clinician_only = [str(v) for v in versions if v.kind != "dimension"]
    if clinician_only:
        raise ScoringError(f"Judges do not score {', '.join(clinician_only)}: clinicians only.")
    rubric_ids = [v.rubric_id for v in versions]
    twice = sorted({r for r in rubric_ids if rubric_ids.count(r) > 1})
    if twice:
        raise ScoringError(f"Pick one version per rubric ({', '.join(twice)} twice).")
    unweighted = sorted(set(rubric_ids) - set(jury.weights))
    if unweighted:
        raise ScoringError(
            f"Jury {jury.name!r} has no weight for {', '.join(unweighted)}; create a new jury."
        )
    if not any(jury.weights[r] > 0 for r in rubric_ids):
        raise ScoringError(
            f"Jury {jury.name!r} gives every chosen rubric weight 0: no aggregate is possible."
        )
    return sorted(versions, key=lambda v: (v.order, v.rubric_id))


def _conversations_check(run: Run, conversations: Sequence[Conversation]) -> None:
    if not conversations:
        raise ScoringError("The job is restricted to no conversation: nothing would be scored.")
    ids = {conversation.pk for conversation in conversations}
    scorable = set(run.conversations.scorable().filter(pk__in=ids).values_list("pk", flat=True))
    if ids - scorable:
        raise ScoringError(
            f"{len(ids - scorable)} of the {len(ids)} conversations are not finished "
            f"conversations of run {run.name!r}."
        )


def judge_template_check(text: str) -> str:
    """The template text to store: "" for the shipped template (so an unchanged copy is the
    same configuration, whatever line endings or trailing spaces a browser sent), else the
    validated variant, normalised the same way (two browsers posting one edit store one
    configuration)."""
    if not text.strip():
        return ""
    text = normalise_template_text(text)
    if text == normalise_template_text(shipped_judge_template_text()):
        return ""
    try:
        parse_judge_template(text)
    except PromptTemplateError as error:
        raise ScoringError(f"Judge prompt: {error}.") from error
    return text


def shipped_judge_template_text() -> str:
    return JUDGE_TEMPLATE_PATH.read_text(encoding="utf-8")


def job_judge_template(job: ScoringJob) -> JudgeTemplate:
    return _template(job.judge_template) if job.judge_template else load_judge_template()


@lru_cache(maxsize=16)
def _template(text: str) -> JudgeTemplate:
    return parse_judge_template(text)


def job_conversations(job: ScoringJob) -> QuerySet[Conversation]:
    """The conversations the job scores: the run's, or the ones it is restricted to."""
    conversations = job.run.conversations.all()
    if job.conversations.exists():
        conversations = conversations.filter(restricted_scoring_jobs=job)
    return conversations


def scores_create_missing(job: ScoringJob) -> None:
    """A pending row for every task of every scorable conversation that has none yet (a run
    still in progress gains conversations after the job was launched)."""
    conversation_ids = list(job_conversations(job).scorable().values_list("id", flat=True))
    versions = list(job.rubric_versions.all())
    JudgeScore.objects.bulk_create(
        (
            JudgeScore(
                job=job,
                conversation_id=conversation_id,
                rubric_version=version,
                judge_index=index,
                judge_model=judge,
            )
            for conversation_id in conversation_ids
            for version in versions
            for index, judge in enumerate(job.jury.judges)
        ),
        batch_size=2000,
        ignore_conflicts=True,
    )


@transaction.atomic
def scoring_relaunch(job: ScoringJob) -> None:
    """Retry what is not valid yet: invalid and errored rows go back to pending."""
    scores_create_missing(job)
    job.scores.filter(status__in=RETRIED).update(
        status=ScoreStatus.PENDING, invalid_reason="", error="", **lease_release_fields()
    )
    ScoringJob.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, finished_at=None, stop_reason=""
    )
    job_finish_if_done(job)  # nothing left to retry: no task would ever finish the job


def pending_score_ids(job: ScoringJob) -> list[int]:
    return list(job.scores.filter(status=ScoreStatus.PENDING).values_list("id", flat=True))


def pending_score_count(job: ScoringJob) -> int:
    return job.scores.filter(status=ScoreStatus.PENDING).count()


def scoring_start(job: ScoringJob) -> int:
    """Send the first window of the job's pending judge calls and watch the job (jury.tasks
    declares how); the rest follow as calls finish. Returns how many calls are pending."""
    pending = pending_score_count(job)
    if job.batch:
        # A batch job's first look builds and uploads its batches: a worker's watch does it.
        watch.watch_now("scoring", job.pk)
    else:
        job_start(job)
    return pending


def scoring_dispatch(job: ScoringJob, send: Callable[[list[LeasedTask]], None]) -> list[LeasedTask]:
    """Keep up to the job's concurrency of judge calls with the workers, as groups of one
    conversation's calls (one message and one task per group, its calls one after the other:
    judge_score_run); calls whose worker died are sent again once their lease runs out (see
    jobs.services.leases)."""
    with transaction.atomic():
        # Every finished call dispatches: lock the job so dispatchers take turns.
        job = ScoringJob.objects.select_for_update().get(pk=job.pk)
        if job.status != JobStatus.RUNNING:
            return []
        pending = job.scores.filter(status=ScoreStatus.PENDING)
        sent = lease_dispatch_groups(
            pending,
            window=job.concurrency,
            group_by="conversation_id",
            largest=GROUP_LARGEST,
            send=send,
            stop=lambda: cost_limit_reached(job, spent=lambda: scoring_spent(job)),
        )
    job_finish_if_done(job)
    return sent


def scoring_spent(job: ScoringJob) -> Decimal:
    return spent_of(job.scores.all())


def scoring_resume(job: ScoringJob, *, cost_limit_usd: Decimal | None) -> None:
    """Continue a job paused at its cost limit with a higher limit; the caller dispatches."""
    try:
        job_resume(
            job, spent=scoring_spent(job), models=job.jury.judges, cost_limit_usd=cost_limit_usd
        )
    except CostLimitError as error:
        raise ScoringError(str(error)) from None


def job_id_of(score_id: int) -> int | None:
    return JudgeScore.objects.filter(pk=score_id).values_list("job_id", flat=True).first()


def running_job_ids() -> list[int]:
    return list(ScoringJob.objects.filter(status=JobStatus.RUNNING).values_list("pk", flat=True))


# --- the judge prompt --------------------------------------------------------------------


def judge_request(
    *,
    conversation: Conversation,
    rubric: Rubric,
    judge_model: str,
    judge_index: int = 0,
    template: JudgeTemplate | None = None,
) -> ChatRequest:
    """The call one judge gets for one rubric. Built from the entry and the trace only.

    The sample names the conversation and the judge's seat on the jury: two conversations with
    identical traces, or one model sitting twice on a jury, are judged independently, while a
    re-score of the same conversation by the same seat replays the cache."""
    return _judge_request_from(
        judge_inputs(conversation),
        rubric=rubric,
        judge_model=judge_model,
        sample=f"conversation:{conversation.public_id}/judge:{judge_index}",
        template=template,
    )


def judge_request_for_trace(
    *,
    rubric: Rubric,
    judge_model: str,
    profile: dict,
    scenario: dict,
    events: list[dict],
    sample: str,
    template: JudgeTemplate | None = None,
) -> ChatRequest:
    """The judge call for any trace, stored or not (the rubric lab scores perturbed copies)."""
    inputs = {"profile": profile, "scenario": scenario, "events": events}
    conversation = render_conversation(**inputs)
    system, user = render_judge_prompt_for(rubric, conversation=conversation, template=template)
    prompt = JudgePrompt(system, user, conversation)
    return _chat_request(rubric, judge_model, prompt, inputs, sample, template)


def _judge_request_from(
    inputs: JudgeInputs,
    *,
    rubric: Rubric,
    judge_model: str,
    sample: str,
    template,
    examples: Sequence[JudgeExample] = (),
) -> ChatRequest:
    """The judge call; a calibrated jury's `examples` for the rubric join the end of the system
    part (and the offline judge's hints). Without examples the call is exactly the
    uncalibrated one, so the response cache still answers it."""
    system, user = render_judge_prompt_for(rubric, conversation=inputs.text, template=template)
    hints = {"profile": inputs.profile, "scenario": inputs.scenario, "events": list(inputs.events)}
    if examples:
        block = render_examples_block(rubric.name, [example.shown for example in examples])
        system = with_examples(system, block)
        hints["examples"] = [example.hint for example in examples]
    prompt = JudgePrompt(system, user, inputs.text)
    return _chat_request(rubric, judge_model, prompt, hints, sample, template)


@dataclass(frozen=True)
class JudgePrompt:
    """One judge call's rendered parts, and the conversation's text they were rendered from."""

    system: str
    user: str
    conversation: ConversationText


def _chat_request(
    rubric, judge_model: str, prompt: JudgePrompt, hints: dict, sample: str, template
) -> ChatRequest:
    """The call itself. The instructions (and any examples) are the system part and the rubric
    opens the user part, both the same for every conversation of the rubric; then the case
    (the patient's profile and the scenario), the same for every agent that played it; the
    trace comes last. So providers can cache the rest (Anthropic: breakpoints after the
    system part, after the rubric, `cache_prefix_chars`, and after the case,
    `cache_case_chars`; OpenAI caches a repeated prefix by itself)."""
    return ChatRequest(
        model=judge_model,
        purpose="judge",
        system=prompt.system,
        messages=(Message(role="user", content=prompt.user),),
        hints={"rubric": rubric.id, **hints},
        sample=sample,
        cache_prefix_chars=stable_user_prefix(rubric, template),
        cache_case_chars=case_user_prefix(rubric, prompt.conversation, template),
    )


# --- executing one judge task -------------------------------------------------------------


def judge_score_execute(score_id: int, token: str | None = None) -> bool:
    """Run the judge calls of a message (see judge_score_run; token None: score `score_id`
    here, unless a worker holds it); returns whether any ran. Run this way (tests, commands)
    it finishes the job when it was the last."""
    outcome = judge_score_run(score_id, token)
    job = ScoringJob.objects.filter(pk=outcome.job_id).first() if outcome.ran else None
    if job is not None:
        job_finish_if_done(job)
    return outcome.ran


@dataclass(frozen=True)
class JudgeRun:
    ran: bool
    job_id: int | None = None  # the scores' job, when they were read


# The columns a judge call's outcome writes (see _record); its spend is added as each answer
# arrives, the last one's with the outcome (_spend_added, RecordingClient's defer_last).
RECORDED = (
    "status",
    "prompt_hash",
    "score",
    "explanation",
    "raw_output",
    "invalid_reason",
    "error",
    "attempts",
    "repairs",
    "cached",
    "claimed_until",
    "lease_token",
    "updated_at",
    *retry_fields({}),
)
# Never read by a judge: the conversation's sandboxes (two compressed snapshots), its usage
# and error text, and the trace's parts in judge_inputs.
UNREAD = tuple(
    f"conversation__{name}"
    for name in ("sandbox_initial", "sandbox_final", "write_actions", "usage", "error")
)


def judge_score_run(score_id: int, token: str | None = None) -> JudgeRun:
    """A worker's message: the group of judge calls dispatched with `token` (one
    conversation's, scoring_dispatch), judged one after the other, then the group's
    conversations merged. Each call's outcome is stored as it ends, so a worker killed mid-group
    loses only the call in flight. Token None (tests, commands): score `score_id` alone,
    unless a worker holds it. Stops early when the job's cost limit is reached."""
    rows = JudgeScore.objects.filter(status=ScoreStatus.PENDING)
    mine = lease_claim(rows if token else rows.filter(pk=score_id), token)
    if mine is None:
        return JudgeRun(ran=False)
    held = JudgeScore.objects.filter(status=ScoreStatus.PENDING, lease_token=mine)
    with Heartbeat(lease_extender(held, mine), label=f"judge scores from {score_id}"):
        scores = list(
            held.select_related("job__jury", "rubric_version", "conversation")
            .defer(*UNREAD)
            .annotate(prices_stamp=prices.prices_stamp())
            .order_by("pk")
        )
        merged = {}
        for done, score in enumerate(scores):
            if done and _limit_reached(score.job):
                held.update(**lease_release_fields())  # the rest wait for a higher limit
                break
            inputs = judge_inputs(score.conversation)
            if _judge(score, inputs, mine):
                merged[score.conversation_id] = (score.conversation, inputs)
        for conversation, inputs in merged.values():
            conversation_merge(scores[0].job, conversation, inputs=inputs)
    return JudgeRun(ran=bool(scores), job_id=scores[0].job_id if scores else None)


def _limit_reached(job: ScoringJob) -> bool:
    # Asked between a group's calls only when the job has a limit (a sum over the job).
    return job.cost_limit_usd is not None and cost_limit_reached(
        job, spent=lambda: scoring_spent(job)
    )


def _judge(score: JudgeScore, inputs: JudgeInputs, mine: str) -> bool:
    """One judge call and its repair; returns whether its outcome was stored."""
    overrides = prices.price_overrides_as_of(score.prices_stamp)
    recorder = accounting.RecordingClient(
        model_router(score.job.use_cache, overrides=overrides),
        owner=partial(ModelCall, run_id=score.job.run_id, conversation_id=score.conversation_id),
        also=partial(_spend_added, score.pk),
        defer_last=True,
    )
    asked = time.monotonic()
    try:
        request = score_request(score, inputs)
    except MissingExampleError as error:  # deleted after the launch checked it
        return _record(
            score, recorder, mine, idle=0.0, prompt="", status=ScoreStatus.ERROR, error=str(error)
        )
    try:
        result = request_json(
            recorder,
            request,
            validate_judge_answer,
            max_repairs=JUDGE_REPAIRS,
            schema=JUDGE_ANSWER_SCHEMA,
        )
    except ProviderError as error:
        outcome = {"status": ScoreStatus.ERROR, "error": failure_text(error)}
    except StructuredFailure as failure:
        last = failure.responses[-1].text
        outcome = {
            "status": ScoreStatus.INVALID,
            "raw_output": last,
            "invalid_reason": reason_code(last) or "invalid",
        }
    except Exception as error:  # a bug must not leave the row pending forever; keep it visible
        logger.exception("judge task %s failed", score.pk)
        outcome = {"status": ScoreStatus.ERROR, "error": failure_text(error)}
    else:
        outcome = {
            "status": ScoreStatus.VALID,
            "score": result.data["score"],
            "explanation": result.data["explanation"],
            "raw_output": result.responses[-1].text,
        }
    prompt = prompt_hash(request.system, request.messages[0].content)
    idle = time.monotonic() - asked
    return _record(score, recorder, mine, idle=idle, prompt=prompt, **outcome)


def score_request(score: JudgeScore, inputs: JudgeInputs) -> ChatRequest:
    """The judge call a score makes first (its repairs follow it), live or in a batch."""
    rubric = rubric_of(score.rubric_version)
    return _judge_request_from(
        inputs,
        rubric=rubric,
        judge_model=score.judge_model,
        sample=f"conversation:{score.conversation.public_id}/judge:{score.judge_index}",
        template=job_judge_template(score.job),
        examples=job_examples(score.job).get(rubric.id, ()),
    )


def reason_code(text: str) -> str:
    """Why an answer is unusable ("" for a usable one)."""
    try:
        parse_judge_answer(text)
    except InvalidJudgeAnswer as error:
        return error.reason_code
    return ""


def _record(
    row: JudgeScore,
    recorder,
    mine: str,
    *,
    idle: float,
    prompt: str,
    status: str,
    **fields,
) -> bool:
    """Store this attempt's outcome; returns whether it was stored. Tokens, cost and raw
    answers add up over relaunches; every answer's spend but the last was added as it arrived
    (a killed attempt's too); the last one's, and those replayed from the cache, are added
    here, in the same transaction as the outcome.

    The row was read after this worker took its lease, so the retry counts start from what it
    held then; the UPDATE lands only while this lease still holds it and it is pending: a
    valid score stored meanwhile is never replaced, nor is the work of a worker the row was
    sent to again after this one's lease ran out."""
    responses = [response for _, response in recorder.calls]
    row.status = status
    row.prompt_hash = prompt
    row.score = fields.get("score")
    row.explanation = fields.get("explanation", "")
    row.raw_output = fields.get("raw_output", responses[-1].text if responses else "")
    row.invalid_reason = fields.get("invalid_reason", "")
    row.error = fields.get("error", "")
    row.attempts = [*row.attempts, *(attempt_record(response) for response in responses)]
    # Every answer after the first of this attempt was asked for by a repair turn.
    row.repairs += max(len(responses) - 1, 0)
    retries_added(row, recorder.retries)
    row.cached = bool(responses) and all(response.cached for response in responses)
    row.updated_at = timezone.now()
    for field, value in lease_release_fields().items():
        setattr(row, field, value)
    unwritten = [response for _, response, _ in recorder.unwritten]
    connection_checked(idle_seconds=idle)  # the call may have outlived the connection
    with transaction.atomic():
        accounting.unwritten_save(recorder)
        held = JudgeScore.objects.filter(pk=row.pk, status=ScoreStatus.PENDING, lease_token=mine)
        recorded = {name: getattr(row, name) for name in RECORDED}
        spend = spend_fields(unwritten) if _spend_changes(row, unwritten, responses) else {}
        stored = bool(held.update(**recorded, **spend))
        if not stored and unwritten:
            _spend_added(row.pk, unwritten)  # spent either way, whoever holds the row now
    return stored


def attempt_record(response: ChatResponse) -> dict:
    """One answer as a score's `attempts` list keeps it, live or from a batch."""
    return {
        "text": response.text,
        "reason_code": reason_code(response.text),
        "cached": response.cached,
    }


def _spend_added(score_id: int, responses: list[ChatResponse]) -> None:
    """Add answers' calls, tokens and cost to the score's sums, whoever holds it now: the
    money was spent either way (RecordingClient's `also`)."""
    JudgeScore.objects.filter(pk=score_id).update(**spend_fields(responses))


def _spend_changes(row: JudgeScore, unwritten: list, responses: list) -> bool:
    """Whether the outcome's UPDATE must touch the spend columns. Nothing left unwritten adds
    zero everywhere, except that a score with no call at all gets its first (zero) cost: only
    then are the eight expressions worth compiling (most calls' answers were written as they
    arrived, so the outcome skips them)."""
    return bool(unwritten) or (row.calls == 0 and not responses)


def spend_fields(responses: list[ChatResponse]) -> dict:
    """UPDATE expressions adding `responses` to a score's sums. An unknown price anywhere makes
    the cost unknown, never a smaller known number; the first answers start it (a score that
    had none holds no cost yet)."""
    sums = accounting.totals(responses)
    return {
        "calls": F("calls") + len(responses),
        "cached_calls": F("cached_calls") + sum(response.cached for response in responses),
        "input_tokens": F("input_tokens") + sums["input_tokens"],
        "output_tokens": F("output_tokens") + sums["output_tokens"],
        "cached_input_tokens": F("cached_input_tokens") + sums["cached_input_tokens"],
        "cache_write_tokens": F("cache_write_tokens") + sums["cache_write_tokens"],
        "cost_usd": _added_cost("cost_usd", sums["cost_usd"]),
        "list_cost_usd": _added_cost("list_cost_usd", sums["list_cost_usd"]),
    }


def _added_cost(field: str, new: Decimal | None):
    if new is None:
        return Value(None, output_field=DecimalField())
    return Case(
        When(calls=0, then=Value(new)),
        default=F(field) + Value(new),
        output_field=DecimalField(),
    )


# --- merging --------------------------------------------------------------------------------


def conversation_merge(
    job: ScoringJob, conversation: Conversation, *, inputs: JudgeInputs | None = None
) -> ConversationResult | None:
    """Once no task of the conversation is pending: merge each rubric whose K judges are all
    valid, and store the conversation's aggregate (only when every rubric is complete).

    Two merges of one conversation may run at once (its last two calls finish together):
    both read it with nothing pending, so both write the same rows, as upserts."""
    rows = list(
        job.scores.filter(conversation=conversation).values_list(
            "rubric_version__rubric_id", "rubric_version__order", "judge_model", "status", "score"
        )
    )
    if any(status == ScoreStatus.PENDING for *_, status, _ in rows):
        return None
    jury = job.jury
    rubric_ids = [rubric for _, rubric in sorted({(order, rubric) for rubric, order, *_ in rows})]
    by_rubric: dict[str, dict[str, float | None]] = {rubric: {} for rubric in rubric_ids}
    for rubric, _, judge, status, value in rows:
        by_rubric[rubric][judge] = value if status == ScoreStatus.VALID else None
    missing = incomplete_rubrics(by_rubric, rubric_ids=rubric_ids, judges=jury.judges)
    complete_rubrics = [rubric for rubric in rubric_ids if rubric not in missing]
    inputs = inputs or judge_inputs(conversation)
    calibration = jury.calibration_data() if jury.is_calibrated else None
    results = [
        _rubric_result(job, conversation, rubric, by_rubric[rubric], calibration)
        for rubric in complete_rubrics
    ]
    RubricResult.objects.bulk_create(
        results,
        update_conflicts=True,
        unique_fields=["job", "conversation", "rubric_id"],
        update_fields=["mean", "sd", "passed", "pass_agreement"],
    )
    fields = _conversation_fields(jury, inputs, by_rubric, missing)
    if calibration is not None and not missing:
        means = {result.rubric_id: result.mean for result in results}
        fields["aggregate"] = weighted_aggregate(means, _job_weights(jury, by_rubric))
    [result] = ConversationResult.objects.bulk_create(
        [ConversationResult(job=job, conversation=conversation, **fields)],
        update_conflicts=True,
        unique_fields=["job", "conversation"],
        update_fields=list(fields),
    )
    return result


def _rubric_result(
    job, conversation, rubric: str, scores: dict[str, float], calibration: Calibration | None
) -> RubricResult:
    """One rubric's merged result. A calibrated jury's mean is its calibration's combination of
    the judges' scores (jury.engine.calibration), and in mean mode it passes when that score
    reaches the threshold; the spread, the judges' pass agreement and the majority rule stay
    the raw judges' (a majority of judges passing is a statement about the judges' own
    verdicts, which calibration does not change)."""
    jury = job.jury
    merged = merge_judges(list(scores.values()), threshold=jury.pass_threshold)
    mean, passed = merged.mean, merged.passed(jury.merge_mode)
    if calibration is not None:
        mean = calibration.combine(rubric, scores)
        if jury.merge_mode == MergeMode.MEAN:
            passed = mean >= jury.pass_threshold
    return RubricResult(
        job=job,
        conversation=conversation,
        rubric_id=rubric,
        mean=mean,
        sd=merged.sd,
        passed=passed,
        pass_agreement=merged.pass_agreement,
    )


def _conversation_fields(jury: Jury, inputs: JudgeInputs, by_rubric: dict, missing) -> dict:
    by_judge = {
        judge: {rubric: scores[judge] for rubric, scores in by_rubric.items()}
        for judge in jury.judges
    }
    weights = _job_weights(jury, by_rubric)
    weighted = [rubric for rubric, weight in weights.items() if weight > 0]
    judged_fully = {
        judge: scores
        for judge, scores in by_judge.items()
        if all(scores.get(rubric) is not None for rubric in weighted)
    }
    checks = outcome_checks(
        write_actions=inputs.write_actions,
        events=list(inputs.events),
        care_preference=inputs.care_preference,
    )
    return {
        "complete": not missing,
        "missing": missing,
        "aggregate": None if missing else jury_aggregate(by_judge, weights),
        "judge_aggregates": judge_aggregates(judged_fully, weights),
        "booked": checks.booked,
        "booked_type_matches": checks.booked_type_matches,
        "fabricated_claims": list(checks.fabricated),
        "fabricated_count": checks.fabricated_count,
    }


def _job_weights(jury: Jury, rubrics_scored) -> dict[str, float]:
    # A re-score may judge some rubrics only: its aggregate is over those (the launch refused
    # a choice with no positive weight).
    return {rubric: weight for rubric, weight in jury.weights.items() if rubric in rubrics_scored}


def job_finish_if_done(job: ScoringJob) -> None:
    """Once no judge call is pending: finished, or failed, with the reason, when not one call
    gave a valid score (a job whose every call failed has nothing to report)."""

    def failure() -> str:
        merge_unmerged(job)
        return "" if job.scores.filter(status=ScoreStatus.VALID).exists() else _failure_reason(job)

    finish.job_finish_if_done(
        job, pending=job.scores.filter(status=ScoreStatus.PENDING), failure=failure
    )


def merge_unmerged(job: ScoringJob) -> None:
    """Merge every scored conversation that has no result yet. A judge task that stored the
    last score of a conversation and then lost the database (a restart) never merged it; the
    job's watch finishes the job, and must not leave that conversation out of the report."""
    merged = ConversationResult.objects.filter(job=job).values("conversation_id")
    unmerged = Conversation.objects.filter(judge_scores__job=job).exclude(pk__in=merged)
    for conversation in unmerged.defer(*(name.split("__")[1] for name in UNREAD)).distinct():
        conversation_merge(job, conversation)


def _failure_reason(job: ScoringJob, *, causes_shown: int = 3) -> str:
    """The commonest causes of the job's failed judge calls, with counts ("" for none); the
    job page lists every failed call."""
    causes = list(
        job.scores.filter(status__in=RETRIED)
        .values_list("status", "error", "invalid_reason")
        .annotate(n=Count("id"))
        .order_by("-n")
    )
    if not causes:
        return ""
    shown = "; ".join(
        f"{_cause(status, error, reason)} (x{n})"
        for status, error, reason, n in causes[:causes_shown]
    )
    others = len(causes) - causes_shown
    total = sum(n for *_, n in causes)
    more = f"; {others} other causes" if others > 0 else ""
    return f"All {total} judge calls failed: {shown}{more}."


def _cause(status: str, error: str, invalid_reason: str) -> str:
    if status == ScoreStatus.ERROR:
        return error[:200]
    return f"invalid answer: {invalid_reason or 'invalid'}"


# --- progress -------------------------------------------------------------------------------


def scoring_progress(job: ScoringJob) -> dict:
    """Task counts by status, tokens and cost (None when some price is unknown)."""
    sums = job.scores.aggregate(
        total=Count("id"),
        valid=Count("id", filter=Q(status=ScoreStatus.VALID)),
        invalid=Count("id", filter=Q(status=ScoreStatus.INVALID)),
        error=Count("id", filter=Q(status=ScoreStatus.ERROR)),
        pending=Count("id", filter=Q(status=ScoreStatus.PENDING)),
        cached=Count("id", filter=Q(cached=True)),
        calls=Sum("calls"),
        cached_calls=Sum("cached_calls"),
        input_tokens=Sum("input_tokens"),
        output_tokens=Sum("output_tokens"),
        cost=Sum("cost_usd"),
        unpriced=Count("id", filter=Q(cost_usd__isnull=True) & ~Q(status=ScoreStatus.PENDING)),
    )
    total = sums["total"]
    done = total - sums["pending"]
    return {
        **sums,
        "calls": sums["calls"] or 0,
        "cached_calls": sums["cached_calls"] or 0,
        "input_tokens": sums["input_tokens"] or 0,
        "output_tokens": sums["output_tokens"] or 0,
        "cost": None if sums["unpriced"] else sums["cost"] or Decimal(0),
        "done": done,
        "percent": round(100 * done / total, 1) if total else 100.0,
        "running": job.status == JobStatus.RUNNING and sums["pending"] > 0,
        "failed": sums["invalid"] + sums["error"],
        "retries": retry_summary(job.scores.all()),
    }


def scoring_jobs_counts(jobs) -> dict[int, dict]:
    """Each job's judge scores by status (scoring_progress's counts), in one query for them
    all: what a list shows per row."""
    rows = (
        JudgeScore.objects.filter(job__in=[job.pk for job in jobs])
        .values("job_id")
        .annotate(
            total=Count("id"),
            valid=Count("id", filter=Q(status=ScoreStatus.VALID)),
            invalid=Count("id", filter=Q(status=ScoreStatus.INVALID)),
            error=Count("id", filter=Q(status=ScoreStatus.ERROR)),
            pending=Count("id", filter=Q(status=ScoreStatus.PENDING)),
        )
        .order_by()
    )
    found = {row.pop("job_id"): row for row in rows}
    empty = {"total": 0, "valid": 0, "invalid": 0, "error": 0, "pending": 0}
    counts = {}
    for job in jobs:
        sums = found.get(job.pk, empty)
        done = sums["total"] - sums["pending"]
        percent = round(100 * done / sums["total"], 1) if sums["total"] else 100.0
        counts[job.pk] = {**sums, "done": done, "percent": percent}
    return counts


def judge_costs(job: ScoringJob) -> list[dict]:
    """Per judge model: scores judged, model calls (repairs and retries included), calls the
    cache answered, repair turns (answers asked for again because the last did not fit),
    tokens and cost (None when some call of the model had no price)."""
    rows = (
        job.scores.filter(calls__gt=0)
        .values("judge_model")
        .annotate(
            scores=Count("id"),
            calls=Sum("calls"),
            cached=Sum("cached_calls"),
            repairs=Sum("repairs"),
            input_tokens=Sum("input_tokens"),
            output_tokens=Sum("output_tokens"),
            cached_input_tokens=Sum("cached_input_tokens"),
            cache_write_tokens=Sum("cache_write_tokens"),
            cost=Sum("cost_usd"),
            list_cost=Sum(Coalesce("list_cost_usd", "cost_usd")),
            unpriced=Count("id", filter=Q(cost_usd__isnull=True)),
        )
        .order_by("judge_model")
    )
    return [
        {
            **row,
            "model": row["judge_model"],
            "cost": None if row["unpriced"] else row["cost"] or Decimal(0),
            "list_cost": None if row["unpriced"] else row["list_cost"] or Decimal(0),
        }
        for row in rows
    ]


def unusable_answers(job: ScoringJob):
    """Invalid and errored judge answers, for the job page."""
    return (
        job.scores.filter(status__in=RETRIED)
        .select_related("conversation", "rubric_version")
        .order_by("status", "conversation_id", "rubric_version__order", "judge_index")
    )
