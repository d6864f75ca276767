"""The review screen's data: blinded, track-only; the calibration reveal only where allowed."""

import pytest

from annotation.engine.blinding import Redactor, identity_words
from annotation.services import queue
from annotation.services.annotations import annotation_submit
from annotation.services.review import calibration_reveal, can_reveal, review_context
from tests.annotation.test_annotation_writes import full_draft

pytestmark = pytest.mark.django_db


def test_the_redactor_hides_model_names_vendors_and_labels_as_whole_words():
    redact = Redactor(identity_words(["openai/gpt-4o-mini", "offline/careful"],
                                     ["openai/gpt-4o-mini · baseline"]))  # fmt: skip
    text = ("I am gpt-4o-mini, made by OpenAI (claude would say otherwise); "
            "offline/careful wrote this, careful phishing advice.")  # fmt: skip
    shown = redact.text(text)
    for secret in ("gpt-4o-mini", "OpenAI", "claude", "offline/careful"):
        assert secret.lower() not in shown.lower()
    assert "careful phishing advice" in shown  # a behaviour word and "Phi" inside a word stay
    assert redact.json({"note": ["OpenAI"]}) == {"note": ["[model name hidden]"]}


def test_a_model_with_generation_settings_is_hidden_by_its_bare_name_too():
    model = "openai/gpt-5.5@effort=high"
    redact = Redactor(identity_words([model], ["openai/gpt-5.5, effort high · baseline"]))
    shown = redact.text(f"I am gpt-5.5. Ran as {model} through openai/gpt-5.5.")
    assert "gpt-5.5" not in shown and "effort=high" not in shown


def test_the_context_holds_no_model_identity_and_no_objects_to_walk_from(study, clinicians):
    assignment = queue.next_assignment(study=study, annotator=clinicians[0])
    context = review_context(assignment)
    flat = repr({k: v for k, v in context.items() if k not in ("assignment", "study")})
    for secret in ("offline/careful", "offline/careless", "baseline", "Jury"):
        assert secret not in flat
    assert [p.rubric_id for p in context["panel"]][:3] == [
        "clinical_safety", "triage_quality", "clinical_helpfulness",
    ]  # fmt: skip
    assert all(isinstance(e, dict) for e in context["events"])
    assert not any(e["kind"] == "reasoning" for e in context["events"])


def test_the_trace_marks_write_actions(study, clinicians):
    assignment = queue.next_assignment(study=study, annotator=clinicians[0])
    events = review_context(assignment)["events"]
    writes = [e for e in events if e["write"]]
    assert all(e["tool_name"] for e in writes)


def test_calibration_rounds_reveal_jury_and_peers_after_submitting(calibration, clinicians):
    first, second = clinicians[:2]
    mine = queue.next_assignment(study=calibration, annotator=first)
    assert not can_reveal(mine)
    with pytest.raises(PermissionError):
        calibration_reveal(mine)
    annotation_submit(mine, draft=full_draft(mine, 4), version=0, actor=first)
    peer = queue.next_assignment(study=calibration, annotator=second)
    assert peer.item_id == mine.item_id
    annotation_submit(peer, draft=full_draft(peer, 2), version=0, actor=second)
    mine.refresh_from_db()
    shown = calibration_reveal(mine)["rubrics"][0]
    assert shown["mine"] == 4
    peer_score = {"score": 2, "synthetic": False, "practice": False, "imported": False}
    assert shown["peers"] == [peer_score]
    assert shown["jury"] is not None and len(shown["judges"]) >= 1
    assert all(j["explanation"] for j in shown["judges"])


def test_a_target_study_never_reveals_even_after_submitting(study, clinicians):
    mine = queue.next_assignment(study=study, annotator=clinicians[0])
    annotation_submit(mine, draft=full_draft(mine), version=0, actor=clinicians[0])
    mine.refresh_from_db()
    assert not can_reveal(mine)
    with pytest.raises(PermissionError):
        calibration_reveal(mine)
