"""Your own conversations from JSON Lines: OpenAI chat format with tool calls and results,
optional patient record, scenario and model; every line checked with every problem listed and
nothing saved on any; pages mark the run imported; the jury scores it and a study samples it;
and a run's own JSONL export imports back to the same traces."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.services.studies import StudySpec, study_create
from benchmark.models import BenchmarkSet, Run, TraceEvent
from benchmark.services.exports import run_jsonl
from benchmark.services.imports import ImportRefused, conversations_file_import
from jury.models import ConversationResult
from jury.services import juries, rubrics, scoring
from tests.support.builders import enriched_set, launched_run, played

pytestmark = pytest.mark.django_db

TRACE = ("event_id", "turn", "kind", "content", "tool_name", "tool_call_id", "arguments", "ok",
         "model_role", "input_tokens", "output_tokens", "cached", "retries")  # fmt: skip


def chat(key: str, model: str, reply: str = "Done: the refill is requested.") -> dict:
    return {
        "id": key, "model": model, "scenario": "Wants a metformin refill before a trip.",
        "scenario_complexity": "chronic",
        "patient_record": {"first_name": "Maria", "conditions": ["Type 2 diabetes"]},
        "messages": [
            {"role": "system", "content": "You help patients of the clinic."},
            {"role": "user", "content": "Can I get my metformin refilled?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {
                    "name": "request_refill", "arguments": '{"medication_name": "Metformin"}'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": '{"status": "submitted"}'},
            {"role": "assistant", "content": reply},
            {"role": "user", "content": [{"type": "text", "text": "Thanks, bye."}]},
        ],
    }  # fmt: skip


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def test_openai_chats_with_tool_calls_become_an_imported_run_with_one_agent_per_model():
    data = jsonl(chat("a1", "agent-a"), chat("b1", "agent-b"), chat("a2", "agent-a"))
    imported = conversations_file_import(name="Pilot", filename="pilot.jsonl", data=data)
    run = imported.run
    assert sorted(run.agents.values_list("label", flat=True)) == ["agent-a", "agent-b"]
    first = imported.conversations["a1"]
    kinds = list(first.events.order_by("seq").values_list("kind", "tool_name", "turn"))
    assert kinds == [
        ("patient_message", "", 1), ("tool_call", "request_refill", 1),
        ("tool_result", "request_refill", 1), ("assistant_message", "", 1),
        ("patient_message", "", 2),
    ]  # fmt: skip
    call = first.events.get(kind="tool_call")
    assert call.arguments == {"medication_name": "Metformin"} and call.tool_call_id == "call_1"
    assert first.entry.profile["first_name"] == "Maria" and first.entry.complexity == "chronic"
    assert first.entry.story.startswith("Wants a metformin")
    assert first.entry.seed["assistant_instructions"] == "You help patients of the clinic."
    assert first.assistant_turns == 1


def test_a_malformed_file_lists_every_problem_of_every_line_and_saves_nothing():
    bad_tool = chat("c3", "m")
    bad_tool["messages"][3]["tool_call_id"] = "call_9"
    bad_arguments = chat("c4", "m")
    bad_arguments["messages"][2]["tool_calls"][0]["function"]["arguments"] = "{not json"
    opens_with_assistant = {"id": "c5", "messages": [{"role": "assistant", "content": "Hi"}]}
    data = b"".join([
        jsonl(chat("c1", "m")), b"{this is not json\n", b"[1, 2]\n", jsonl(bad_tool),
        jsonl(bad_arguments), jsonl(opens_with_assistant), jsonl(chat("c1", "m")),
        jsonl({"id": "c6"}),
    ])  # fmt: skip
    with pytest.raises(ImportRefused) as refused:
        conversations_file_import(name="Bad", filename="bad.jsonl", data=data)
    problems = refused.value.problems
    assert [p.split(":")[0].split(" (")[0] for p in problems] == [
        "line 2",
        "line 3",
        "line 4",
        "line 5",
        "line 6",
        "line 7",
        "line 8",
    ]
    assert "call_9" in problems[2] and "not JSON" in problems[3]
    assert "patient's (user) message" in problems[4] and "line 1 too" in problems[5]
    assert not BenchmarkSet.objects.exists() and not Run.objects.exists()


def test_a_binary_file_is_refused_in_words():
    with pytest.raises(ImportRefused) as refused:
        conversations_file_import(name="x", filename="x.jsonl", data=b"\x00\x01PK\x03\x04")
    assert "binary" in refused.value.problems[0]


def test_a_run_export_imports_back_to_the_same_traces():
    run = played(launched_run(enriched_set(size=2), models=("offline/careful", "offline/careless")))
    exported = "".join(run_jsonl(run)).encode()
    imported = conversations_file_import(name="Back", filename="run.jsonl", data=exported)
    for conversation in run.conversations.all():
        back = imported.conversations[str(conversation.public_id)]
        assert list(back.events.order_by("seq").values_list(*TRACE)) == list(
            conversation.events.order_by("seq").values_list(*TRACE)
        )
        assert back.run_agent.label == conversation.run_agent.label
        assert back.entry.profile == conversation.entry.profile
        assert back.assistant_turns == conversation.assistant_turns
        # Both models' conversations of one case are one case again: reports pair them.
        assert back.entry.seed["source_id"] == f"entry {conversation.entry.index}"
    assert imported.run.benchmark_set.entries.count() == run.benchmark_set.entries.count()
    assert (
        TraceEvent.objects.filter(conversation__run=imported.run).count()
        == TraceEvent.objects.filter(conversation__run=run).count()
    )


def test_the_jury_scores_an_imported_run_and_a_study_samples_it():
    data = jsonl(*(chat(f"c{i}", f"agent-{i % 2}") for i in range(6)))
    run = conversations_file_import(name="Scored", filename="s.jsonl", data=data).run
    job = scoring.scoring_launch(run=run, jury=juries.jury_demo_ensure())
    for score_id in scoring.pending_score_ids(job):
        scoring.judge_score_execute(score_id)
    job.refresh_from_db()
    assert (
        job.status == "finished"
        and ConversationResult.objects.filter(job=job, complete=True).count() == 6
    )
    spec = StudySpec(project_name="Imported", name="Imported study", kind="target", sample_size=4)
    study = study_create(spec=spec, scoring_jobs=[job], rubric_versions=rubrics.current_versions())
    assert study.items.count() == 4
    assert set(study.items.values_list("conversation__run", flat=True)) == {run.pk}


def test_the_import_page_lists_the_problems_and_the_run_page_says_imported(researcher_client):
    bad = SimpleUploadedFile("bad.jsonl", b'{"id": "x"}\n')
    refused = researcher_client.post(reverse("benchmark:run_import"), {"file": bad})
    assert refused.status_code == 400 and "line 1" in refused.content.decode()
    good = SimpleUploadedFile("mine.jsonl", jsonl(chat("c1", "agent-a")))
    response = researcher_client.post(
        reverse("benchmark:run_import"), {"file": good, "name": "Mine"}
    )
    run = Run.objects.get(name="Mine")
    assert response.status_code == 302 and response["Location"] == reverse(
        "benchmark:run", args=[run.pk]
    )
    assert "imported" in researcher_client.get(response["Location"]).content.decode().lower()


def test_the_api_imports_a_file_and_answers_every_problem(researcher_client):
    bad = SimpleUploadedFile("bad.jsonl", b"nope\n" + jsonl(chat("c1", "m")) + b"{}\n")
    refused = researcher_client.post("/api/v1/imports", {"file": bad})
    assert refused.status_code == 400
    assert [e["message"].split(":")[0] for e in refused.json()["errors"]] == ["line 1", "line 3"]
    good = SimpleUploadedFile("good.jsonl", jsonl(chat("c1", "m"), chat("c2", "m")))
    response = researcher_client.post("/api/v1/imports", {"file": good, "name": "Via API"})
    assert response.status_code == 201 and response.json()["conversations"] == 2


def test_lines_sharing_a_case_id_are_one_case_so_their_models_are_paired():
    lines = [chat(f"{model}-{case}", model) | {"case_id": case}
             for case in ("refill", 7) for model in ("agent-a", "agent-b")]  # fmt: skip
    imported = conversations_file_import(name="Paired", filename="p.jsonl", data=jsonl(*lines))

    entries = imported.run.benchmark_set.entries.order_by("index")
    assert [entry.seed["source_id"] for entry in entries] == ["refill", "7"]
    assert imported.run.benchmark_set.size == 2
    for entry in entries:
        labels = entry.conversations.values_list("run_agent__label", flat=True)
        assert sorted(labels) == ["agent-a", "agent-b"]


def test_one_model_playing_a_case_twice_plays_two_repetitions():
    lines = [chat("a1", "agent-a") | {"case_id": "c"}, chat("a2", "agent-a") | {"case_id": "c"}]
    imported = conversations_file_import(name="Twice", filename="t.jsonl", data=jsonl(*lines))
    assert imported.run.benchmark_set.entries.count() == 1
    assert [imported.conversations[k].repetition for k in ("a1", "a2")] == [0, 1]


def test_lines_of_one_case_that_describe_different_cases_are_refused_by_name():
    other = chat("b1", "agent-b") | {"case_id": "c"}
    other["patient_record"] = {"first_name": "Ana"}
    data = jsonl(chat("a1", "agent-a") | {"case_id": "c"}, other)
    with pytest.raises(ImportRefused) as refused:
        conversations_file_import(name="Clash", filename="c.jsonl", data=data)
    assert refused.value.problems == [
        "'b1': it plays case 'c' like 'a1' but differs from it on the patient record"
    ]
    assert not Run.objects.exists()
