"""HealthBench-format JSONL imported as a run: every line checked with its problems named,
nothing saved on any error; imported conversations then used by the pipeline, instance
scoring, near-miss studies, coverage and the jury like any other."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from benchmark.models import BenchmarkSet, Conversation, Run
from benchmark.services import runs
from jury.services import juries, scoring
from rubric_lab.engine import healthbench
from rubric_lab.models import ExpertCriterion, JudgeSetup, NearMissStatus
from rubric_lab.services import coverage, imports, instance_scoring, pipeline, sensitivity
from tests.rubric_lab.healthbench_rows import (
    HEALTHBENCH_AXES,
    IDEAL_ONLY,
    MULTI_TURN,
    NO_IDEAL,
    PROMPT_ONLY,
    SINGLE_TURN,
    jsonl,
)
from tests.support.builders import shipped_agent

pytestmark = pytest.mark.django_db


def imported(*rows, **options):
    return imports.healthbench_import(filename="hb.jsonl", text=jsonl(*rows), **options)


# --- reading the file ---------------------------------------------------------------------


def test_single_and_multi_turn_rows_become_conversations_with_their_criteria():
    rows, problems = healthbench.parse(jsonl(SINGLE_TURN, "", MULTI_TURN, PROMPT_ONLY))

    assert problems == []
    single, multi, prompt_only = rows
    assert [m.role for m in single.conversation.messages] == ["user", "assistant"]
    assert [m.role for m in multi.conversation.messages] == ["user", "assistant", "user",
                                                             "assistant"]  # fmt: skip
    assert multi.conversation.instructions == "You are a helpful health assistant."
    assert multi.conversation.messages[-1].content.startswith("Keep offering fluids")
    assert (single.has_completion, prompt_only.has_completion) == (True, False)
    assert single.conversation.case == {"task_category": "emergency_referrals"}
    assert (single.line, multi.line) == (1, 3)  # blank lines are skipped, not renumbered
    assert single.criteria[0].axis == "accuracy" and single.criteria[0].points == 10
    assert single.criteria[5].points == -6 and "level:example" in single.criteria[0].tags


def test_every_problem_of_every_line_is_named_with_its_line_in_order():
    bad_points = {
        **SINGLE_TURN,
        "prompt_id": "p2",
        "rubrics": [
            {"criterion": "Says hello", "points": 0, "tags": []},
            {"criterion": "", "points": 3.5, "tags": ["axis:a", "axis:b"]},
        ],
    }
    ends_with_reply = {
        **MULTI_TURN,
        "prompt_id": "p3",
        "prompt": MULTI_TURN["prompt"][:3],
    }  # completion after a reply
    system_late = {
        **PROMPT_ONLY,
        "prompt_id": "p4",
        "prompt": [*PROMPT_ONLY["prompt"], {"role": "system", "content": "Late."}],
    }
    empty = {"prompt_id": "p8", "prompt": [], "rubrics": []}
    text = jsonl(SINGLE_TURN, "{not json", bad_points, ends_with_reply, "[1, 2]",
                 {**SINGLE_TURN}, system_late, empty)  # fmt: skip

    rows, problems = healthbench.parse(text)

    assert problems == [
        "line 2: not valid JSON (Expecting property name enclosed in double quotes, column 2)",
        "line 3: rubric 1 points must be a non-zero integer from -10 to 10, not 0",
        "line 3: rubric 2 criterion must be text of 1 to 2000 characters",
        "line 3: rubric 2 points must be a non-zero integer from -10 to 10, not 3.5",
        "line 3: rubric 2 has 2 axis: tags; give at most one",
        "line 4: a completion answers the patient's last message: the prompt must end with a "
        "user message",
        "line 5: the line must hold one JSON object",
        "line 6: prompt_id 'hb-single-1' was already used on line 1",
        "line 7: prompt message 2: a system message must come first",
        "line 8: prompt must be a non-empty list of messages {role, content}",
        "line 8: rubrics must be a non-empty list of {criterion, points, tags}",
    ]
    assert [row.line for row in rows] == [1]


def test_a_file_with_any_bad_line_saves_nothing_and_names_every_problem():
    with pytest.raises(imports.HealthBenchRefused) as refused:
        imported(SINGLE_TURN, MULTI_TURN, {**PROMPT_ONLY, "completion": ""})

    assert refused.value.problems == [
        "line 3: completion must be non-empty text or one assistant message"
    ]
    assert not BenchmarkSet.objects.filter(imported_from__startswith="HealthBench").exists()
    assert not Run.objects.filter(name="hb.jsonl").exists()
    assert not ExpertCriterion.objects.exists()


def test_binary_and_non_utf8_files_are_refused_before_reading_rows():
    with pytest.raises(imports.HealthBenchRefused, match="binary file"):
        imports.healthbench_text(b'{"prompt_id": "\x00"}', "hb.jsonl")
    with pytest.raises(imports.HealthBenchRefused, match="not UTF-8 text .* line 2"):
        imports.healthbench_text(b'{"a": 1}\n{"b": "\xff"}', "hb.jsonl")


def test_the_source_subset_keeps_rows_with_8_to_10_criteria_on_three_axes():
    result = imported(SINGLE_TURN, MULTI_TURN, PROMPT_ONLY, source_subset=True)

    assert (result.conversations, result.left_out) == (2, 1)
    assert "1 rows outside the source's subset were left out" in imports.import_summary(result)


# --- the imported run -----------------------------------------------------------------------


def test_an_import_stores_an_imported_run_with_criteria_keyed_by_conversation():
    result = imported(SINGLE_TURN, MULTI_TURN, PROMPT_ONLY, name="HealthBench pilot")

    run = result.run
    assert run.name == "HealthBench pilot" and run.imported and run.status == "finished"
    assert run.benchmark_set.distribution is None
    assert run.benchmark_set.imported_from == "HealthBench JSONL: hb.jsonl"
    (agent,) = run.agents.all()
    assert (agent.model, agent.agent_config) == ("imported/healthbench", None)
    multi = run.conversations.get(entry__seed__source_id="hb-multi-1")
    assert multi.termination_reason == "imported" and multi.sandbox_initial is None
    events = list(multi.events.order_by("seq").values_list("event_id", "turn", "kind"))
    assert events == [
        ("e0001", 1, "patient_message"), ("e0002", 1, "assistant_message"),
        ("e0003", 2, "patient_message"), ("e0004", 2, "assistant_message"),
    ]  # fmt: skip
    assert multi.entry.seed["assistant_instructions"] == "You are a helpful health assistant."
    assert multi.entry.profile == {} and multi.entry.task_category == "context_seeking"
    criteria = coverage.expert_criteria_of(multi)
    assert len(criteria) == 9 and all(c.conversation_id == multi.pk for c in criteria)
    axes = ["accuracy", "completeness", "communication_quality", "context_awareness"]
    assert [c.axis for c in criteria[:4]] == axes
    assert criteria[5].weight == -6 and criteria[0].tags == ["axis:accuracy", "level:example"]
    assert (result.with_completion, result.upload.criterion_count) == (2, 20)
    assert set(Conversation.objects.scorable().filter(run=run)) == set(run.conversations.all())


def test_no_run_can_be_launched_on_an_imported_set():
    run = imported(SINGLE_TURN).run

    with pytest.raises(runs.RunError, match="was imported"):
        runs.run_launch(
            name="again", benchmark_set=run.benchmark_set, patient_model="offline/patient",
            agents=[runs.AgentChoice("offline/careful", shipped_agent())],
        )  # fmt: skip


def test_the_jury_scores_imported_conversations_without_a_record_or_sandbox():
    run = imported(SINGLE_TURN, MULTI_TURN).run
    job = scoring.scoring_launch(run=run, jury=juries.jury_demo_ensure())

    for score_id in scoring.pending_score_ids(job):
        scoring.judge_score_execute(score_id)

    job.refresh_from_db()
    assert job.status == "finished"
    assert not job.scores.exclude(status="valid").exists()
    assert job.conversation_results.filter(complete=True).count() == 2


def test_imported_conversations_get_rubrics_scores_near_misses_and_coverage():
    run = imported(SINGLE_TURN, MULTI_TURN).run
    conversations = list(run.conversations.order_by("pk"))
    job = pipeline.generation_job_launch(
        conversations=conversations, generator_model="offline/standard", run=run
    )
    for generation_id in job.generations.values_list("pk", flat=True):
        pipeline.generation_execute(generation_id)
    assert job.generations.filter(status="finished").count() == 2

    rubric = job.generations.first().rubric
    score = instance_scoring.instance_score_run_here(
        rubric=rubric, conversation=rubric.conversation, judge="offline/standard"
    )
    assert score.status == "valid" and score.normalised is not None

    study = sensitivity.study_launch(
        run=run, setup=JudgeSetup.INSTANCE, generation_job=job, judge_model="offline/standard",
        perturber_model="offline/surgical",
    )  # fmt: skip
    for pair_id in study.pairs.values_list("pk", flat=True):
        sensitivity.near_miss_execute(pair_id)
    assert study.pairs.filter(status=NearMissStatus.SCORED).exists()
    assert not study.pairs.filter(status=NearMissStatus.FAILED).exists()

    cia = coverage.coverage_launch(generation_job=job, judge_model="offline/standard")
    for case_id in cia.cases.values_list("pk", flat=True):
        coverage.coverage_case_execute(case_id)
    results = coverage.coverage_results(cia)
    assert results["overall"].cases == 2
    axes = {row.axis for row in results["axes"] if row.constraints}
    assert {"accuracy", "completeness", "communication_quality"} <= axes


def test_a_row_without_a_completion_is_scored_on_the_physicians_ideal_completion():
    result = imported(IDEAL_ONLY, NO_IDEAL, SINGLE_TURN)

    assert imports.import_summary(result).startswith(
        "Imported 3 conversations (2 with a reply to score: 1 the row's completion, 1 the "
        "physicians' ideal completion) and 26 physician criteria"
    )
    ideal = result.run.conversations.get(entry__seed__source_id="hb-ideal-1")
    reply = ideal.events.get(kind="assistant_message").content
    assert reply == IDEAL_ONLY["ideal_completions_data"]["ideal_completion"]
    # Who wrote the reply is the conversation's agent, so reports keep the two kinds apart.
    assert ideal.run_agent.label == healthbench.IDEAL_LABEL
    own = result.run.conversations.get(entry__seed__source_id="hb-single-1")
    assert own.run_agent.model == healthbench.RESPONDER
    bare = result.run.conversations.get(entry__seed__source_id="hb-no-ideal")
    assert bare.assistant_turns == 0 and bare.run_agent.model == healthbench.RESPONDER


def test_ideal_completions_data_that_holds_no_reply_is_named():
    broken = {**IDEAL_ONLY, "ideal_completions_data": {"ideal_completions_group": "Group 1"}}

    _, problems = healthbench.parse(jsonl(broken))

    assert problems == [
        "line 1: ideal_completions_data must be null or an object whose ideal_completion is "
        "non-empty text"
    ]


def coverage_of_job(job, judge="offline/standard"):
    run = coverage.coverage_launch(generation_job=job, judge_model=judge)
    for case_id in run.cases.values_list("pk", flat=True):
        coverage.coverage_case_execute(case_id)
    return run


def generated(run, **options):
    job = pipeline.generation_job_launch(
        conversations=list(run.conversations.order_by("pk")), generator_model="offline/standard",
        run=run, **options,
    )  # fmt: skip
    for generation_id in job.generations.values_list("pk", flat=True):
        pipeline.generation_execute(generation_id)
    return job


def test_coverage_of_healthbench_rows_is_reported_on_healthbench_axes_with_intervals():
    run = imported(IDEAL_ONLY, SINGLE_TURN, MULTI_TURN).run
    cia = coverage_of_job(generated(run))

    results = coverage.coverage_results(cia)
    # The generated criteria's axes are put into HealthBench's names: each axis a generated
    # criterion sits on is one the physicians' criteria use too, with all three figures.
    axes = {row.axis: row for row in results["axes"]}
    assert set(axes) <= set(HEALTHBENCH_AXES)
    assert "communication_quality" in axes and axes["communication_quality"].generated
    for row in axes.values():
        if row.generated:
            assert row.recall is not None and row.intervals.f1 is not None
    bounds = results["overall"].intervals
    assert bounds.recall.low <= results["overall"].micro.recall <= bounds.recall.high

    table = coverage.coverage_table(cia)
    cases = table[table["rubric"] != ""]
    assert set(cases["prompt_id"]) == {"hb-ideal-1", "hb-single-1", "hb-multi-1"}
    assert set(cases["theme"]) == {"context_seeking", "emergency_referrals"}
    pooled = table[table["case"] == "all (micro)"].iloc[0]
    assert pooled["recall_low"] <= pooled["recall"] <= pooled["recall_high"]


def test_two_arms_are_compared_conversation_by_conversation_with_a_recall_difference(
    researcher_client,
):
    run = imported(IDEAL_ONLY, SINGLE_TURN, MULTI_TURN).run
    full = coverage_of_job(generated(run))
    direct = coverage_of_job(generated(run, method="direct"))

    comparison = coverage.coverage_compare(full, direct)

    overall = comparison.overall
    assert overall.test.clusters == comparison.conversations == 3
    assert overall.difference.low <= overall.difference.value <= overall.difference.high
    assert overall.difference.value == pytest.approx(overall.test.recall_a - overall.test.recall_b)
    table = coverage.comparison_table(full, direct)
    assert {"conversations", "difference", "difference_low", "difference_high"} <= set(table)
    assert table.loc[0, "test"] == "McNemar adjusted for conversations, exact sign-flip p"
    page = researcher_client.get(
        reverse("rubric_lab:coverage", args=[full.pk]), {"compare": direct.pk}
    ).content.decode()
    low, high = overall.difference.low, overall.difference.high
    assert f"[{low:.3f}, {high:.3f}]" in page and "exact sign-flip over 3 conversations" in page


def test_the_csv_upload_still_keys_by_case_and_now_also_by_conversation(played_run):
    conversation = played_run.conversations.scorable().first()
    other = (
        played_run.conversations.scorable()
        .filter(entry=conversation.entry)
        .exclude(pk=conversation.pk)
        .first()
    )
    content = (
        "case,conversation,criterion,weight,axis\n"
        f"{conversation.entry.index},,Asks about symptoms,3,context_awareness\n"
        f",{conversation.public_id},Books the visit,5,completeness\n"
    )

    coverage.expert_criteria_upload(
        benchmark_set=played_run.benchmark_set, filename="gold.csv", content=content
    )

    assert [c.text for c in coverage.expert_criteria_of(conversation)] == ["Books the visit"]
    assert [c.text for c in coverage.expert_criteria_of(other)] == ["Asks about symptoms"]
    with pytest.raises(coverage.UploadError) as refused:
        coverage.expert_criteria_upload(
            benchmark_set=played_run.benchmark_set, filename="gold.csv",
            content="case,conversation,criterion\n0,00000000-0000-0000-0000-000000000000,X\n"
            ",00000000-0000-0000-0000-000000000000,Y\n",
        )  # fmt: skip
    assert refused.value.errors == [
        "row 2: name a case or a conversation, not both",
        "row 3: conversation '00000000-0000-0000-0000-000000000000' is not a conversation of "
        "this set",
    ]


# --- the pages -----------------------------------------------------------------------------


def upload(name: str, data: bytes):
    return SimpleUploadedFile(name, data, content_type="application/jsonl")


def test_the_import_page_imports_a_good_file_and_opens_the_run(researcher_client):
    response = researcher_client.post(
        reverse("rubric_lab:import"),
        {"file": upload("hb.jsonl", jsonl(SINGLE_TURN, MULTI_TURN).encode()), "name": "Pilot"},
        follow=True,
    )

    run = Run.objects.get(name="Pilot")
    assert response.redirect_chain[-1][0] == reverse("benchmark:run", args=[run.pk])
    assert "Imported 2 conversations (2 with a reply to score) and 17 physician criteria" in (
        response.content.decode()
    )
    conversation = run.conversations.first()
    for page in (
        reverse("benchmark:set", args=[run.benchmark_set.pk]),
        reverse("benchmark:conversation", args=[conversation.public_id]),
        reverse("benchmark:entry", args=[conversation.entry.pk]),
    ):
        assert researcher_client.get(page).status_code == 200
    assert (
        "played elsewhere without a sandbox"
        in researcher_client.get(
            reverse("benchmark:conversation", args=[conversation.public_id])
        ).content.decode()
    )


def test_the_import_page_lists_every_problem_and_saves_nothing(researcher_client):
    text = jsonl(SINGLE_TURN, {**MULTI_TURN, "rubrics": []}, "nope")

    response = researcher_client.post(
        reverse("rubric_lab:import"), {"file": upload("bad.jsonl", text.encode())}
    )

    assert response.status_code == 400
    page = response.content.decode()
    assert "Nothing was saved" in page
    assert "line 2: rubrics must be a non-empty list" in page and "line 3: not valid JSON" in page
    assert not Run.objects.filter(name="bad.jsonl").exists()


def test_the_import_page_refuses_binary_and_oversized_files(researcher_client, settings):
    response = researcher_client.post(
        reverse("rubric_lab:import"), {"file": upload("hb.jsonl", b"\x00\x01binary")}
    )
    assert response.status_code == 400 and "binary file" in response.content.decode()

    settings.UPLOAD_LIMIT_MB = 0
    response = researcher_client.post(
        reverse("rubric_lab:import"), {"file": upload("hb.jsonl", json.dumps(SINGLE_TURN).encode())}
    )
    assert response.status_code == 200 and "UPLOAD_LIMIT_MB" in response.content.decode()
    assert not Run.objects.filter(name="hb.jsonl").exists()
