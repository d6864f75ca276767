"""Judges never learn which model or agent configuration they are scoring."""

import json
import re

import pytest

from jury.services import scoring
from jury.services.rubrics import current_versions, rubric_of

pytestmark = pytest.mark.django_db


def identities(run) -> set[str]:
    names = set()
    for agent in run.agents.select_related("agent_config"):
        names |= {agent.model, agent.label, agent.agent_config.name}
        names.add(agent.model.split("/", 1)[1])  # "careful" without its provider
    return names


def mentions(text: str, name: str) -> bool:
    # Whole words only: the rubric text may say "carefully" without naming offline/careful.
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE) is not None


def test_no_judge_prompt_or_hint_names_the_model_or_agent_under_evaluation(played_run):
    forbidden = identities(played_run)
    assert {"offline/careful", "careless", "Baseline assistant"} <= forbidden
    rubrics = [rubric_of(version) for version in current_versions(judged_only=True)]
    conversations = played_run.conversations.scorable().select_related("entry")
    assert conversations.count() == 8
    for conversation in conversations:
        for rubric in rubrics:
            request = scoring.judge_request(
                conversation=conversation, rubric=rubric, judge_model="offline/standard"
            )
            seen = " ".join([request.system, request.messages[0].content,
                             json.dumps(request.hints, default=str)])  # fmt: skip
            leaked = {name for name in forbidden if mentions(seen, name)}
            assert not leaked, f"{rubric.id} prompt names {leaked}"


def test_the_judge_sees_the_profile_scenario_and_the_whole_trace(played_run):
    conversation = played_run.conversations.scorable().select_related("entry").first()
    rubric = rubric_of(current_versions(judged_only=True)[0])
    request = scoring.judge_request(
        conversation=conversation, rubric=rubric, judge_model="offline/standard"
    )
    user = request.messages[0].content
    assert conversation.entry.profile["last_name"] in user
    assert conversation.entry.story.split()[0] in user
    assert conversation.entry.task_subcategory in user
    shown = [e for e in conversation.events.values("event_id", "kind") if e["kind"] != "reasoning"]
    assert all(f"#{event['event_id']} " in user for event in shown)
    assert set(request.hints) == {"rubric", "events", "profile", "scenario"}
    assert request.purpose == "judge"
