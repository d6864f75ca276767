"""The coverage judge through a real SDK against the local fake server: each decomposition and
each entailment is answered as the offline coverage script (rubric_lab.engine.coverage_script)
answers the same prompt, live or in a batch.

The wire carries the prompts, not the hints the script reads, so `coverage_reply` (the fake
server's responder) knows a stage by its system prompt, reads the numbered lists back out of
its user prompt (the stage's template with each value as a pattern; the lists must render
back to that very prompt) and asks the script. Any other request is refused with a 400 saying
why.

The script's token counts are rounded up to a multiple of 200: at the judges' prices (and at
their batch halves) so many tokens cost a whole number of millionths of a dollar, the cost
columns' precision, so a case's batch cost is exactly half its live cost, not half rounded.
Pure Python: no Django.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from llm.engine.chat import ChatRequest, ChatResponse, Message
from rubric_lab.engine import coverage_script
from rubric_lab.engine.prompts import render_evaluation_prompt
from tests.fakes.llm_server import FakeReply, RecordedRequest, bad_request
from tests.rubric_lab.stage_server import body_strings

TOKEN_STEP = 200


@dataclass(frozen=True)
class _Stage:
    purpose: str  # the request's purpose, and its evaluation prompt's name
    script: Callable[[ChatRequest, str], ChatResponse]
    system: str
    user: re.Pattern[str]  # one group per list the script reads from its hints


def _stage(purpose: str, script, *lists: str) -> _Stage:
    marks = {name: f"\x00{name}\x00" for name in lists}
    system, user = render_evaluation_prompt(purpose, **marks)
    parts = re.split(r"\x00(\w+)\x00", user)  # literal, name, literal, ...
    pattern = "".join(
        re.escape(part) if index % 2 == 0 else f"(?P<{part}>.*?)"
        for index, part in enumerate(parts)
    )
    return _Stage(purpose, script, system, re.compile(pattern, re.DOTALL))


STAGES = (
    _stage("coverage_decompose", coverage_script.decompose, "criteria"),
    _stage("coverage_entail", coverage_script.entail, "constraints", "rubric"),
)


def coverage_reply(request: RecordedRequest) -> FakeReply:
    """The offline script's answer to a coverage stage's request, in either wire format."""
    sent = list(body_strings(request.body))
    for stage in STAGES:
        if stage.system not in sent:
            continue
        found = next((m for text in sent if (m := stage.user.fullmatch(text))), None)
        if found is None:
            return bad_request(f"a {stage.purpose} request without its user prompt")
        hints = {name: numbered_items(block) for name, block in found.groupdict().items()}
        numbered = {name: numbered_text(items) for name, items in hints.items()}
        if render_evaluation_prompt(stage.purpose, **numbered)[1] != found.group(0):
            return bad_request(f"a {stage.purpose} request whose lists do not read back")
        asked = ChatRequest(
            model=str(request.body.get("model", "")),
            purpose=stage.purpose,
            system=stage.system,
            messages=(Message(role="user", content=found.group(0)),),
            hints=hints,
        )
        response = stage.script(asked, "standard")
        return FakeReply(
            text=response.text,
            input_tokens=rounded_up(response.usage.input_tokens),
            output_tokens=rounded_up(response.usage.output_tokens),
        )
    return bad_request("not a coverage request: no coverage stage's system prompt")


def numbered_items(block: str) -> list[str]:
    """The items of a list as the coverage prompts number it ("1. text" a line)."""
    return re.findall(r"^\d+\. (.*)$", block, re.MULTILINE)


def numbered_text(items: list[str]) -> str:
    return "\n".join(f"{number}. {text}" for number, text in enumerate(items, start=1))


def rounded_up(tokens: int) -> int:
    return max(1, -(-tokens // TOKEN_STEP)) * TOKEN_STEP
