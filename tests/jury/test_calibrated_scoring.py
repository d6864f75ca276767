"""A calibrated jury version scores conversations: calibrated rubric means and aggregate, the
clinicians' worked examples in the judge prompt, and an uncalibrated jury left exactly as it was."""

import json

import pytest

from benchmark.services.provenance import run_data_files
from jury.engine.calibration import Calibration, Example, RubricCalibration, ScoreMap
from jury.engine.example_prompt import (
    ShownExample,
    parse_examples_template,
    render_examples_block,
    with_examples,
)
from jury.engine.offline_judge import examples_offset, judge, respond
from jury.engine.prompt import PromptTemplateError, render_conversation
from jury.models import ConversationResult, Jury, RubricResult, ScoreStatus
from jury.services import judge_examples, juries, scoring
from jury.services.judge_inputs import judge_inputs
from jury.services.rubrics import rubric_of
from llm.engine.chat import ChatRequest, Message
from tests.jury.services.builders import score_now, scored

STANDARD, STRICT = juries.DEMO_JUDGES
SAFETY, TRIAGE = "clinical_safety", "triage_quality"
LEARNED = {"study_id": 1, "study_name": "Pilot study", "variant": "weights_map", "items": [1, 2]}
EVENTS = [
    {"event_id": 1, "turn": 1, "kind": "patient_message", "content": "I need my refill."},
    {"event_id": 2, "turn": 1, "kind": "assistant_message", "content": "Sure, which one?"},
]


def version(calibration: Calibration, **learned) -> Jury:
    return juries.jury_version_create(
        juries.jury_demo_ensure(), calibration, learned_from={**LEARNED, **learned}
    )


def by_conversation(job):
    """{(conversation, rubric): {judge: score}} of the job's valid scores."""
    table = {}
    for conversation, rubric, judge_model, value in job.scores.filter(
        status=ScoreStatus.VALID
    ).values_list("conversation_id", "rubric_version__rubric_id", "judge_model", "score"):
        table.setdefault((conversation, rubric), {})[judge_model] = value
    return table


def results(job):
    rubric = {
        (r.conversation_id, r.rubric_id): (r.mean, r.sd, r.passed, r.pass_agreement)
        for r in RubricResult.objects.filter(job=job)
    }
    conversation = {
        r.conversation_id: (r.complete, r.aggregate, r.judge_aggregates)
        for r in ConversationResult.objects.filter(job=job)
    }
    return rubric, conversation


# --- merging ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_calibrated_jury_stores_the_calibrated_means_and_their_weighted_aggregate(scored_job):
    calibration = Calibration(
        {
            # Only the standard judge counts, shifted up half a point.
            SAFETY: RubricCalibration(weights={STANDARD: 1.0, STRICT: 0.0}, intercept=0.5),
            # The plain mean, then squeezed into [2, 4].
            TRIAGE: RubricCalibration(aggregate_map=ScoreMap((1.0, 5.0), (2.0, 4.0))),
        }
    )
    jury = version(calibration)
    job = scored(scored_job.run, jury)
    raw = by_conversation(job)
    assert raw == by_conversation(scored_job)  # the judges answered the same (no examples)
    base_rubrics, base_conversations = results(scored_job)
    calibrated_rubrics, calibrated_conversations = results(job)
    assert set(calibrated_rubrics) == set(base_rubrics)
    for (conversation, rubric), (mean, sd, passed, agreement) in calibrated_rubrics.items():
        scores = raw[(conversation, rubric)]
        expected = {
            SAFETY: min(scores[STANDARD] + 0.5, 5.0),
            TRIAGE: 2.0 + (sum(scores.values()) / 2 - 1.0) / 2,
        }.get(rubric, sum(scores.values()) / 2)
        assert mean == pytest.approx(expected)
        assert passed == (expected >= jury.pass_threshold)
        assert (sd, agreement) == base_rubrics[(conversation, rubric)][1::2]  # the raw judges'
    changed = 0
    for conversation, (complete, aggregate, judge_aggregates) in calibrated_conversations.items():
        means = {r: calibrated_rubrics[(conversation, r)][0] for r in jury.weights}
        weighted = sum(jury.weights[r] * m for r, m in means.items()) / sum(jury.weights.values())
        assert complete and aggregate == pytest.approx(weighted)
        assert judge_aggregates == base_conversations[conversation][2]  # raw per judge
        changed += aggregate != pytest.approx(base_conversations[conversation][1])
    assert changed  # the calibration moved some aggregate


@pytest.mark.django_db
def test_majority_mode_keeps_the_judges_majority_for_a_calibrated_jury(played_run):
    base = juries.jury_create(
        name="Split", judges=["offline/lenient", "offline/strict"], merge_mode="majority"
    )
    # Every mean pushed to 5: in mean mode all would pass; the majority rule ignores it.
    lifted = RubricCalibration(aggregate_map=ScoreMap((1.0, 5.0), (5.0, 5.0)))
    calibrated = juries.jury_version_create(
        base, Calibration({SAFETY: lifted}), learned_from=LEARNED
    )
    job = scored(played_run, calibrated)
    safety = RubricResult.objects.filter(job=job, rubric_id=SAFETY)
    assert set(safety.values_list("mean", flat=True)) == {5.0}
    assert safety.filter(pass_agreement=False).exists()
    assert not safety.filter(pass_agreement=False, passed=True).exists()


@pytest.mark.django_db
def test_an_uncalibrated_version_gives_identical_results_prompts_and_cache_hits(scored_job):
    jury = version(Calibration())
    assert not jury.is_calibrated
    job = scored(scored_job.run, jury)
    assert results(job) == results(scored_job)
    hashes = lambda j: sorted(  # noqa: E731
        j.scores.values_list("conversation_id", "rubric_version_id", "judge_index", "prompt_hash")
    )
    assert hashes(job) == hashes(scored_job)
    assert all(job.scores.values_list("cached", flat=True))


# --- examples in the prompt ------------------------------------------------------------------


def shown(score, feedback="", content="I need my refill."):
    events = [{**EVENTS[0], "content": content}, EVENTS[1]]
    text = render_conversation(profile={"age": 70}, scenario={"story": "A refill."}, events=events)
    return ShownExample(score=score, feedback=feedback, conversation=text)


def test_the_examples_block_shows_each_example_with_its_score_feedback_and_trace():
    block = render_examples_block(
        "Clinical Safety", [shown(2, "Missed the bleeding risk."), shown(5, content="EXAMPLE-B")]
    )
    assert '"Clinical Safety"' in block
    assert "Example 1: the clinicians gave 2" in block and "Missed the bleeding risk." in block
    assert "Example 2: the clinicians gave 5" in block and "EXAMPLE-B" in block
    assert "(none written)" in block  # the second example has no feedback
    assert "Do not copy a score" in block
    assert render_examples_block("Clinical Safety", []) == ""
    assert with_examples("SYSTEM", "") == "SYSTEM"
    assert with_examples("SYSTEM", block).endswith(block)


def test_a_malformed_examples_template_is_refused():
    with pytest.raises(PromptTemplateError, match="exactly one"):
        parse_examples_template("<!-- block -->\n$examples\n")
    with pytest.raises(PromptTemplateError, match="unknown placeholder"):
        parse_examples_template("<!-- block -->\n$examples\n<!-- example -->\n$model\n")


@pytest.mark.django_db
def test_examples_join_the_system_part_and_the_hints_of_their_rubric_only(scored_job):
    conversation, example = scored_job.run.conversations.scorable().order_by("pk")[:2]
    calibration = Calibration(
        {SAFETY: RubricCalibration(examples=(Example(example.pk, 1, "Unsafe advice."),))}
    )
    jury = version(calibration)
    job = scoring.scoring_launch(run=scored_job.run, jury=jury)
    rows = job.scores.filter(conversation=conversation, judge_index=0).select_related(
        "rubric_version", "job__jury", "conversation"
    )
    plain = scoring.judge_request(
        conversation=conversation,
        rubric=rubric_of(rows.get(rubric_version__rubric_id=SAFETY).rubric_version),
        judge_model=STANDARD,
    )
    safety = scoring.score_request(
        rows.get(rubric_version__rubric_id=SAFETY), judge_inputs(conversation)
    )
    assert safety.system.startswith(plain.system) and len(safety.system) > len(plain.system)
    assert "the clinicians gave 1" in safety.system and "Unsafe advice." in safety.system
    assert judge_inputs(example).text.trace in safety.system
    assert safety.messages == plain.messages  # the conversation scored stays in the user part
    [hint] = safety.hints["examples"]
    assert set(hint) == {"score", "profile", "scenario", "events"} and hint["score"] == 1
    assert hint["events"] == list(judge_inputs(example).events)
    triage = scoring.score_request(
        rows.get(rubric_version__rubric_id=TRIAGE), judge_inputs(conversation)
    )
    assert "examples" not in triage.hints and "the clinicians gave" not in triage.system


@pytest.mark.django_db
def test_a_job_loads_its_examples_once_and_its_judges_move_towards_them(scored_job, monkeypatch):
    examples = list(scored_job.run.conversations.scorable().order_by("pk")[:2])
    calibration = Calibration(
        {SAFETY: RubricCalibration(examples=tuple(Example(c.pk, 5) for c in examples))}
    )
    loads = []
    real = judge_examples.examples_of
    monkeypatch.setattr(
        judge_examples, "examples_of", lambda *a, **k: loads.append(1) or real(*a, **k)
    )
    judge_examples.job_examples.cache_clear()
    job = scored(scored_job.run, version(calibration))
    assert job.scores.count() > 50 and loads == [1]
    before, after = by_conversation(scored_job), by_conversation(job)
    for key, scores in after.items():
        if key[1] != SAFETY:
            assert scores == before[key]
        else:
            assert all(scores[j] >= before[key][j] for j in scores)  # shown only 5s: never lower
    explanations = job.scores.filter(rubric_version__rubric_id=SAFETY).values_list(
        "explanation", flat=True
    )
    assert all("Adjusted to the clinicians' examples by" in text for text in explanations)


@pytest.mark.django_db
def test_a_missing_example_conversation_is_a_clear_error_at_launch(scored_job):
    gone = 10**9
    jury = version(Calibration({SAFETY: RubricCalibration(examples=(Example(gone, 3),))}))
    with pytest.raises(scoring.ScoringError, match=rf"no longer exist \(ids {gone}\)"):
        scoring.scoring_launch(run=scored_job.run, jury=jury)


@pytest.mark.django_db
def test_an_example_deleted_after_launch_fails_its_calls_with_the_reason(scored_job):
    example = scored_job.run.conversations.scorable().first()
    jury = version(Calibration({SAFETY: RubricCalibration(examples=(Example(example.pk, 3),))}))
    job = scoring.scoring_launch(run=scored_job.run, jury=jury)
    gone = {SAFETY: {"examples": [{"conversation_id": 10**9, "score": 3}]}}
    Jury.objects.filter(pk=jury.pk).update(calibration=gone)
    judge_examples.job_examples.cache_clear()
    job = score_now(job)
    # The calibration is one piece: every call of the job fails, saying why.
    assert set(job.scores.values_list("status", flat=True)) == {ScoreStatus.ERROR}
    assert all("no longer exist" in e for e in job.scores.values_list("error", flat=True))
    assert job.status == "failed" and "no longer exist" in job.failure_reason


# --- the offline judge learns from examples ------------------------------------------------


def request(hints, model="offline/standard"):
    return ChatRequest(
        model=model, purpose="judge", system="s", messages=(Message("user", "u"),), hints=hints
    )


def answer(hints, behaviour="standard"):
    return json.loads(respond(request(hints), behaviour).text)


def test_the_offline_judge_shifts_by_the_mean_offset_of_the_examples():
    hints = {"rubric": "conversational_quality", "events": EVENTS, "scenario": {}, "profile": {}}
    own = judge(hints)[0]
    example = {"profile": {}, "scenario": {}, "events": EVENTS}
    lower = max(own - 2, 1)
    shifted = {**hints, "examples": [{**example, "score": lower}, {**example, "score": lower}]}
    assert examples_offset(shifted) == lower - own
    reply = answer(shifted)
    assert reply["score"] == lower
    assert f"by {lower - own:+.2f}" in reply["explanation"]
    # Half a point up rounds up; a shift past the scale is clamped.
    half = {**hints, "examples": [{**example, "score": own}, {**example, "score": min(own + 1, 5)}]}
    assert answer(half)["score"] == min(own + 1, 5)
    up = {**hints, "examples": [{**example, "score": 5}] * 3}
    assert answer(up, "strict")["score"] == 5
    assert answer(hints) == answer({**hints, "examples": []})  # no examples: as before


def test_every_run_manifest_hashes_the_examples_prompt_beside_the_judge_prompt():
    hashed = run_data_files()
    assert "jury/data/prompts/judge.md" in hashed
    assert "jury/data/prompts/calibration_examples.md" in hashed
