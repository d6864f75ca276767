"""Making near-miss copies of stored conversations: deterministic where the trace allows, a
model edit (request_json with repair, validated as one surgical edit) where not."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchmark.models import Conversation
from llm.engine.structured import request_json
from rubric_lab.engine import perturb
from rubric_lab.services.evaluation_work import stage
from rubric_lab.services.trace_judging import case_of

# Model edits get two repair turns: an editor that rewrote too much usually narrows its edit
# once told the similarity it reached.
EDIT_REPAIRS = 2


@dataclass(frozen=True)
class NearMissCopy:
    """A made copy (`events` set) or why none applies (`reason` set)."""

    kind: str
    method: str = ""
    events: tuple[dict[str, Any], ...] = ()
    description: str = ""
    reason: str = ""
    changed: dict[str, list[str]] = field(default_factory=dict)
    diff: str = ""

    @property
    def applicable(self) -> bool:
        return bool(self.events)


def near_miss_make(
    case: perturb.Case, kind: str, *, client=None, perturber_model: str = "", sample: str = ""
) -> NearMissCopy:
    """The near-miss copy of `case` for perturbation `kind`. With no `client`, only the
    deterministic edit is tried. A model answer that stays invalid raises StageFailure."""
    rule = perturb.perturbation(kind)
    edit = rule.deterministic(case)
    method = "deterministic"
    if edit is None and client is not None and perturber_model:
        request = perturb.model_edit_request(case, kind, model=perturber_model, sample=sample)
        answer = stage(
            "perturb",
            lambda: request_json(
                client,
                request,
                lambda data: perturb.validate_model_edit(data, case),
                max_repairs=EDIT_REPAIRS,
            ),
        ).data
        if not answer["applicable"]:
            return NearMissCopy(kind, reason=f"The editor model: {answer['reason']}")
        edit, method = perturb.apply_model_edit(case, answer), "model"
    if edit is None:
        reason = f"The rule found nothing to change in the trace (it looks for {rule.element})."
        return NearMissCopy(kind, reason=reason)
    changed = perturb.changed_events(case.events, edit.events)
    return NearMissCopy(
        kind=kind,
        method=method,
        events=edit.events,
        description=edit.description,
        changed={
            "modified": list(changed.modified),
            "removed": list(changed.removed),
            "added": list(changed.added),
        },
        diff=perturb.trace_diff(case.events, edit.events),
    )


def perturbation_preview(conversation: Conversation) -> list[NearMissCopy]:
    """Every registered perturbation's deterministic copy of a conversation (no model calls)."""
    case = case_of(conversation)
    return [near_miss_make(case, kind) for kind in perturb.REGISTRY]
