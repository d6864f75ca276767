"""What the review screen shows, blinded on the server.

`review_context` is the only door from an assignment to its conversation for annotator pages:
it hands the template plain dicts (profile, scenario, trace events, rubric panel) with model
identity redacted, never a Conversation, Run or RunAgent object a template could walk from.
Its number of SQL queries does not depend on the length of the conversation.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotation.engine.blinding import Redactor, identity_words
from annotation.models import Assignment, AssignmentStatus, Study
from annotation.services.guides import study_guide
from annotation.services.studies import panel_versions
from benchmark.engine.sandbox.specs import WRITE_TOOLS
from benchmark.models import RunAgent, TraceEvent
from jury.engine.offline_judge import behaviour_note_removed
from jury.models import JudgeScore, RubricResult
from jury.services.rubrics import rubric_of

# Reasoning is the agent's hidden scratchpad: neither the patient nor the judges see it.
SHOWN_KINDS = ("patient_message", "assistant_message", "tool_call", "tool_result", "error")
SCENARIO_FIELDS = (
    ("Condition", "condition"),
    ("Severity", "severity"),
    ("Task", "task_category"),
    ("Request", "task_subcategory"),
    ("Age group", "age_group"),
    ("Gender identity", "gender_identity"),
    ("Care preference", "care_preference"),
    ("Personality", "personality"),
)


@dataclass(frozen=True)
class PanelRubric:
    rubric_id: str
    version: int
    name: str
    code: str
    kind: str
    task: str
    levels: tuple  # (score, label, description) rows
    sub_dimensions: tuple  # (name, (criteria...)) rows


def study_redactor(study: Study) -> Redactor:
    agents = RunAgent.objects.filter(run__scoring_jobs__studies=study).select_related(
        "agent_config"
    )
    models, labels = set(), set()
    for agent in agents:
        models.add(agent.model)
        labels.add(agent.label)
        if agent.agent_config is not None:  # none for the replies of an imported run
            labels.add(agent.agent_config.name)
    return Redactor(identity_words(models, labels))


def review_context(assignment: Assignment) -> dict:
    item = assignment.item
    study = item.study
    entry = item.conversation.entry
    redact = study_redactor(study)
    return {
        "assignment": assignment,
        "study": study,
        "profile": redact.json(entry.profile or {}),
        "story": redact.text(entry.story),
        "scenario": [(label, getattr(entry, name)) for label, name in SCENARIO_FIELDS],
        "case": {
            "request": entry.task_subcategory,
            "task": entry.task_category,
            "severity": entry.severity,
            "care_preference": entry.care_preference,
        },
        "events": trace_events(item.conversation_id, redact),
        "panel": panel_rubrics(study, assignment.track),
        "guide": study_guide(study),
    }


def trace_events(conversation_id: int, redact: Redactor) -> list[dict]:
    rows = TraceEvent.objects.filter(conversation_id=conversation_id, kind__in=SHOWN_KINDS).values(
        "event_id", "turn", "kind", "content", "tool_name", "arguments", "ok", "refused"
    )
    events = []
    for row in rows:
        row["content"] = redact.text(row["content"])
        row["arguments"] = redact.json(row["arguments"])
        # Write actions are marked so a reviewer sees every change the agent made.
        row["write"] = row["tool_name"] in WRITE_TOOLS
        events.append(row)
    return events


def panel_rubrics(study: Study, track: str) -> list[PanelRubric]:
    return [_panel_rubric(version) for version in panel_versions(study, track)]


def _panel_rubric(version) -> PanelRubric:
    rubric = rubric_of(version)
    return PanelRubric(
        rubric_id=rubric.id,
        version=rubric.version,
        name=rubric.name,
        code=rubric.code,
        kind=rubric.kind,
        task=rubric.task,
        levels=tuple((lv.score, lv.label, lv.description) for lv in rubric.levels),
        sub_dimensions=tuple((s.name, tuple(s.criteria)) for s in rubric.sub_dimensions),
    )


def _judge_words(explanation: str, redact: Redactor) -> str:
    """A judge's explanation as a clinician reads it: no model, no persona of the judge."""
    return redact.text(behaviour_note_removed(explanation))


def can_reveal(assignment: Assignment) -> bool:
    """Jury and peer scores after submitting, in calibration rounds only."""
    return assignment.item.study.is_calibration and assignment.is_submitted


def calibration_reveal(assignment: Assignment) -> dict:
    """The jury's scores with each judge's explanation (never a judge's model or persona) and the
    other annotators' scores for this item, for the rubrics of the annotator's panel; each
    peer's score says whether it is synthetic (the demo's scripted simulated clinician),
    practice or imported, as every page marks them.
    Refuses outside the rule above."""
    if not can_reveal(assignment):
        raise PermissionError("Scores are revealed only after submitting in a calibration round.")
    item = assignment.item
    rubric_ids = [p.rubric_id for p in panel_rubrics(item.study, assignment.track)]
    jobs = item.study.scoring_jobs.all()
    means = dict(
        RubricResult.objects.filter(
            job__in=jobs, conversation_id=item.conversation_id, rubric_id__in=rubric_ids
        )
        .order_by("job_id")
        .values_list("rubric_id", "mean")
    )
    judges = JudgeScore.objects.filter(
        job__in=jobs, conversation_id=item.conversation_id, rubric_version__rubric_id__in=rubric_ids
    ).values_list("rubric_version__rubric_id", "judge_index", "score", "explanation")
    peers = Assignment.objects.filter(
        item=item, status=AssignmentStatus.SUBMITTED, invalidated_at__isnull=True
    ).exclude(pk=assignment.pk)
    redact = study_redactor(item.study)
    return {
        "rubrics": [
            {
                "rubric_id": rid,
                "mine": assignment.scores.get(rid),
                "jury": means.get(rid),
                "judges": [
                    {"seat": seat + 1, "score": score, "explanation": _judge_words(text, redact)}
                    for r, seat, score, text in judges
                    if r == rid
                ],
                "peers": [
                    {
                        "score": p.scores[rid],
                        "synthetic": p.synthetic,
                        "practice": p.practice,
                        "imported": p.imported,
                    }
                    for p in peers
                    if rid in p.scores
                ],
            }
            for rid in rubric_ids
        ]
    }
