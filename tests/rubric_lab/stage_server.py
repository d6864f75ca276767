"""The rubric pipeline through a real SDK against the local fake server: each request is
answered with what the offline script answers for the same stage of the same case.

`scripted_answers` plays the pipeline once with the offline provider and keeps each stage's
answer; `StageServer` replays them, picking the stage by the opening of its system prompt and
the case by a text only that case's prompts hold (its patient's first words), so the dual
track's two calls, or several cases at once, may arrive in any order. Used by the SDK tests,
the worker crash tests and bench/bench_rubric_lab.py. Pure Python: no Django.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from llm.engine.providers.offline import OfflineProvider, scripts_register
from rubric_lab.apps import OFFLINE_SCRIPTS
from rubric_lab.engine.pipeline import Case, PipelineOptions, run_pipeline
from rubric_lab.engine.retrieval import Retriever
from tests.fakes.llm_server import FakeLLMServer, FakeReply, RecordedRequest, answer

OPENINGS = {
    "routing": "You plan the evidence search",
    "evidence": "You consolidate retrieved",
    "facts": "You build the reference board",
    "intent": "You read what a patient needs",
    "synthesis": "You write an instance-specific rubric",
    "audit": "You audit a draft",
}


class _Recorder:
    def __init__(self):
        self.offline = OfflineProvider("standard")
        self.answers: dict[str, str] = {}

    def chat(self, request):
        response = self.offline.chat(request)
        self.answers[request.purpose.removeprefix("rubric_")] = response.text
        return response


def scripted_answers(case: Case, retriever: Retriever) -> dict[str, str]:
    """Each model stage's offline answer for `case`, by stage name."""
    # The lab registers its scripts when Django starts it; the rubric-lab bench runs without.
    scripts_register(OFFLINE_SCRIPTS)
    recorder = _Recorder()
    outcome = run_pipeline(recorder, case, retriever, PipelineOptions(model="offline/standard"))
    if not outcome.ok:
        raise AssertionError(f"the offline pipeline failed at {outcome.failed_stage}")
    return recorder.answers


def case_marker(case: Case) -> str:
    """A text the prompts of this case hold and another case's do not (its first words)."""
    return case.patient_messages[0] if case.patient_messages else case.key


class StageServer(FakeLLMServer):
    """Answers every stage of every known case with its scripted answer, after `delay`."""

    def __init__(self, answers: Mapping[str, Mapping[str, str]], *, delay_seconds: float = 0.0):
        super().__init__()
        self.answers = answers  # case marker -> stage -> answer
        self.delay_seconds = delay_seconds

    def _next_reply(self, request: RecordedRequest) -> FakeReply:
        super()._next_reply(request)
        sent = " ".join(body_strings(request.body))
        stage = next(name for name, opening in OPENINGS.items() if opening in sent)
        case = next(marker for marker in self.answers if marker in sent)
        return answer(self.answers[case][stage], delay_seconds=self.delay_seconds)


def body_strings(value: Any) -> Iterator[str]:
    """Every text in a request body, whatever the wire format nests it in."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from body_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from body_strings(item)
