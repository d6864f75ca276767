"""The clinician-scored examples a calibrated jury shows its judges, loaded once per job.

A jury whose calibration has examples (jury.engine.calibration) puts, in every judge call on a
rubric, the same few conversations with the clinicians' scores and feedback. Loading and
rendering them per call would add a dozen queries to every call, so each process keeps the
examples of the last few jobs it served (`job_examples`), keyed by the job's id and creation
time (a test database rolled back may reuse an id, never with the same creation time).

Blinding: examples reach judge prompts only. Nothing here is shown on an annotator page.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from benchmark.models import Conversation
from jury.engine.calibration import Calibration
from jury.engine.example_prompt import ShownExample
from jury.models import Jury, ScoringJob
from jury.services.judge_inputs import JudgeInputs, judge_inputs

# Jobs whose examples a process keeps: a worker serves a handful of jobs at a time.
CACHED_JOBS = 8


class MissingExampleError(ValueError):
    """An example conversation of the jury's calibration no longer exists."""


@dataclass(frozen=True)
class JudgeExample:
    score: int
    feedback: str
    inputs: JudgeInputs

    @property
    def shown(self) -> ShownExample:
        return ShownExample(score=self.score, feedback=self.feedback, conversation=self.inputs.text)

    @property
    def hint(self) -> dict:
        """What the offline scripted judge reads of the example (jury.engine.offline_judge)."""
        inputs = self.inputs
        return {
            "score": self.score,
            "profile": inputs.profile,
            "scenario": inputs.scenario,
            "events": list(inputs.events),
        }


RubricExamples = Mapping[str, tuple[JudgeExample, ...]]


def missing_examples(jury: Jury) -> list[int]:
    """Ids of the jury's example conversations that no longer exist (sorted)."""
    wanted = jury.calibration_data().example_conversations()
    found = set(Conversation.objects.filter(pk__in=wanted).values_list("pk", flat=True))
    return sorted(wanted - found)


def missing_examples_message(jury: Jury, missing: list[int]) -> str:
    shown = ", ".join(str(pk) for pk in missing[:10])
    more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
    return (
        f"Jury {jury.name!r} shows its judges clinician-scored example conversations, and "
        f"{len(missing)} of them no longer exist (ids {shown}{more}). Promote a new version "
        "from the study, or score with a jury whose examples exist."
    )


def job_examples(job: ScoringJob) -> RubricExamples:
    """Per rubric, the examples the job's jury shows its judges (empty for most juries)."""
    if not job.jury.calibration_data().example_conversations():
        return {}
    return _job_examples(job.pk, job.created_at)


@lru_cache(maxsize=CACHED_JOBS)
def _job_examples(job_id: int, created_at) -> RubricExamples:
    jury = ScoringJob.objects.select_related("jury").get(pk=job_id).jury
    return examples_of(jury.calibration_data(), jury=jury)


def examples_of(calibration: Calibration, *, jury: Jury) -> RubricExamples:
    """Load every example conversation of the calibration once; MissingExampleError when one
    is gone."""
    wanted = calibration.example_conversations()
    conversations = Conversation.objects.only("pk", "public_id", "attempts", "finished_at").in_bulk(
        wanted
    )
    missing = sorted(wanted - set(conversations))
    if missing:
        raise MissingExampleError(missing_examples_message(jury, missing))
    inputs = {pk: judge_inputs(conversation) for pk, conversation in conversations.items()}
    return {
        rubric_id: tuple(
            JudgeExample(example.score, example.feedback, inputs[example.conversation_id])
            for example in rubric.examples
        )
        for rubric_id, rubric in calibration.rubrics.items()
        if rubric.examples
    }


job_examples.cache_clear = _job_examples.cache_clear  # tests
