"""The benchmark scripts' own machinery: the stand-in models of the paper-scale rehearsal and
the bench runner's per-bench timeout and verdicts."""

import json

from bench import fake_models
from bench.run_all import _verdict, timeout_of
from benchmark.engine.agents.prompts import TERMINATION_TOKEN
from tests.fakes.llm_server import RecordedRequest


def ask(model: str, messages: list[dict], system: str = "You are a patient.") -> object:
    body = {"model": model, "messages": [{"role": "system", "content": system}, *messages]}
    return fake_models.respond(RecordedRequest("/v1/chat/completions", {}, body))


def test_the_stand_in_patient_talks_five_to_eight_turns_then_drops_off():
    lengths = []
    for case in range(40):
        messages: list[dict] = [{"role": "user", "content": "Hello"}]
        for turn in range(1, 20):
            reply = ask("rehearsal-patient", messages, system=f"Patient number {case}.")
            if TERMINATION_TOKEN in reply.text:
                lengths.append(turn - 1)
                break
            messages += [{"role": "assistant", "content": reply.text},
                         {"role": "user", "content": "How can I help?"}]  # fmt: skip
    assert len(lengths) == 40
    assert set(lengths) <= {5, 6, 7, 8} and len(set(lengths)) > 1
    assert 5.5 <= sum(lengths) / len(lengths) <= 7.5


def test_the_stand_in_agent_looks_things_up_before_it_answers():
    first = ask("rehearsal-model-1", [{"role": "user", "content": "I feel ill."}])
    assert [call.name for call in first.tool_calls] == ["get_profile"]
    after_lookup = ask(
        "rehearsal-model-1",
        [{"role": "user", "content": "I feel ill."}, {"role": "tool", "content": "{}"}],
    )
    assert after_lookup.tool_calls == () and after_lookup.text
    late = ask("rehearsal-model-1", [{"role": "user", "content": "x"}] * 5)
    assert late.tool_calls == () and late.text


def test_the_stand_in_judges_answer_one_json_score_that_varies_with_the_conversation():
    answers = [
        json.loads(ask("rehearsal-judge", [{"role": "user", "content": f"Trace {n}"}]).text)
        for n in range(60)
    ]
    assert {answer["score"] for answer in answers} == {1, 2, 3, 4, 5}
    again = ask("rehearsal-judge", [{"role": "user", "content": "Trace 7"}])
    assert json.loads(again.text) == answers[7]
    assert again.delay_seconds == fake_models.PROVIDER_SECONDS


def test_a_bench_may_set_its_own_timeout_and_others_get_the_default(tmp_path):
    own = tmp_path / "bench_long.py"
    own.write_text("import os\nTIMEOUT_SECONDS = 7_200\n")
    plain = tmp_path / "bench_short.py"
    plain.write_text("TARGET = 3\n")
    assert timeout_of(own) == 7200
    assert timeout_of(plain) == 600


def test_a_figure_without_a_target_is_reported_not_judged():
    assert _verdict({"target": None, "ok": True}) == "-"
    assert _verdict({"target": 1.0, "ok": True}) == "PASS"
    assert _verdict({"target": 1.0, "ok": False}) == "FAIL"
    assert _verdict({"target": None, "ok": False}) == "FAIL"  # a crashed bench
