"""Worked examples in the judge prompt: conversations clinicians scored, shown to the judges.

A jury calibrated with the "examples" part (jury.engine.calibration) carries, per rubric, a few
clinician-scored conversations. Each judge call on that rubric gets them as a block appended to
the SYSTEM part of the prompt: the system part then depends on the rubric only, so the long
stable part comes first and the conversation being scored comes last (what providers' prompt
caches reward). The block's text is the data file jury/data/prompts/calibration_examples.md:
one part for the block (with $rubric_name and $examples) and one repeated per example (with
$number, $score, $feedback, $profile, $scenario and $trace). A rubric without examples adds
nothing, so the prompt is byte for byte the uncalibrated one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from string import Template

from jury.engine.prompt import ConversationText, PromptTemplateError

EXAMPLES_TEMPLATE_PATH = (
    Path(__file__).resolve().parent.parent / "data" / "prompts" / "calibration_examples.md"
)
BLOCK_MARKER = "<!-- block -->"
EXAMPLE_MARKER = "<!-- example -->"
BLOCK_PLACEHOLDERS = frozenset({"rubric_name", "examples"})
EXAMPLE_PLACEHOLDERS = frozenset({"number", "score", "feedback", "profile", "scenario", "trace"})
NO_FEEDBACK = "(none written)"


@dataclass(frozen=True)
class ShownExample:
    """One example as a judge reads it: the clinicians' score and words, and the conversation
    rendered the way the judge prompt renders the conversation it scores."""

    score: int
    feedback: str
    conversation: ConversationText


@dataclass(frozen=True)
class ExamplesTemplate:
    block: Template
    example: Template


def parse_examples_template(text: str) -> ExamplesTemplate:
    if text.count(BLOCK_MARKER) != 1 or text.count(EXAMPLE_MARKER) != 1:
        raise PromptTemplateError(
            f"the examples template needs exactly one {BLOCK_MARKER} and one {EXAMPLE_MARKER} line"
        )
    block, example = text.split(BLOCK_MARKER)[1].split(EXAMPLE_MARKER)
    parts = ExamplesTemplate(block=Template(block.strip()), example=Template(example.strip()))
    for part, allowed in ((parts.block, BLOCK_PLACEHOLDERS), (parts.example, EXAMPLE_PLACEHOLDERS)):
        if not part.is_valid():
            raise PromptTemplateError("the examples template has a malformed $placeholder")
        unknown = set(part.get_identifiers()) - allowed
        if unknown:
            raise PromptTemplateError(f"unknown placeholder(s): {', '.join(sorted(unknown))}")
    return parts


@lru_cache(maxsize=2)
def load_examples_template(path: Path | str = EXAMPLES_TEMPLATE_PATH) -> ExamplesTemplate:
    return parse_examples_template(Path(path).read_text(encoding="utf-8"))


def render_examples_block(
    rubric_name: str,
    examples: Sequence[ShownExample],
    template: ExamplesTemplate | None = None,
) -> str:
    """The examples block for one rubric ("" when there are none)."""
    if not examples:
        return ""
    template = template or load_examples_template()
    shown = "\n\n".join(
        template.example.substitute(
            number=number,
            score=example.score,
            feedback=example.feedback.strip() or NO_FEEDBACK,
            profile=example.conversation.profile,
            scenario=example.conversation.scenario,
            trace=example.conversation.trace,
        )
        for number, example in enumerate(examples, start=1)
    )
    return template.block.substitute(rubric_name=rubric_name, examples=shown)


def with_examples(system: str, block: str) -> str:
    """The system part with the examples block after it (unchanged when there is none)."""
    return f"{system}\n\n{block}" if block else system
