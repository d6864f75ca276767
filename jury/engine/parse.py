"""Judge answers: one JSON object {"score": 1-5, "explanation": "..."} or a coded rejection.

A rejected answer is never turned into a score: there is no default and no guessing a number
from prose. The reason code tells reports why a judgement is missing.

Score rule: the score must denote a whole number from 1 to 5. 4, 4.0 and "4" are accepted (a
model quoting a number means the same number); 4.5, "4.5", "four" and true are not.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from llm.engine.structured import InvalidOutput, UnusableJson, extract_json_object

REASON_CODES = (
    "empty",
    "refusal",
    "no_json",
    "multiple_json",
    "json_array",
    "duplicate_key",
    "malformed_json",
    "missing_field",
    "non_integer",
    "out_of_range",
)

# A refusal declines the task itself ("I can't help with that"), which is different from prose
# that merely contains "I cannot find ..." while judging.
_REFUSAL = re.compile(
    r"\bI(?:\s+can(?:no|')t|\s+won't|\s+will\s+not|'m\s+unable\s+to|\s+am\s+unable\s+to"
    r"|'m\s+not\s+able\s+to|\s+am\s+not\s+able\s+to)\s+(?:help|assist|comply|provide|do\s+that"
    r"|evaluate|score|rate|complete|fulfill?|participate)\b|\bI\s+must\s+decline\b",
    re.IGNORECASE,
)


class InvalidJudgeAnswer(InvalidOutput):
    """An unusable judge answer. It is an InvalidOutput, so request_json feeds the message back
    to the judge for repair."""

    def __init__(self, reason_code: str, message: str):
        super().__init__(message)
        self.reason_code = reason_code
        self.message = message


@dataclass(frozen=True)
class JudgeVerdict:
    score: int
    explanation: str


def parse_judge_answer(text: str | None) -> JudgeVerdict:
    """Parse raw judge text into a verdict or raise InvalidJudgeAnswer with a reason code."""
    if not (text or "").strip():
        raise InvalidJudgeAnswer("empty", "The answer was empty; reply with one JSON object.")
    try:
        data = extract_json_object(text)
    except UnusableJson as error:
        raise _unparsable(text, error) from error
    return _verdict_from(data)


# What a judge answers, as a JSON schema for providers that hold an answer to one (the prompt
# asks for the same; validate_judge_answer checks it either way).
JUDGE_ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 1, "maximum": 5},
        "explanation": {"type": "string"},
    },
    "required": ["score", "explanation"],
    "additionalProperties": False,
}


def validate_judge_answer(data: dict[str, Any]) -> dict[str, Any]:
    """Validator for structured.request_json: returns {"score", "explanation"} normalised."""
    verdict = _verdict_from(data)
    return {"score": verdict.score, "explanation": verdict.explanation}


def _verdict_from(data: dict[str, Any]) -> JudgeVerdict:
    if "score" not in data:
        raise InvalidJudgeAnswer("missing_field", 'The JSON object has no "score" field.')
    score = _whole_number(data["score"])
    if score not in range(1, 6):
        raise InvalidJudgeAnswer(
            "out_of_range", f"The score was {score}; it must be an integer from 1 to 5."
        )
    explanation = data.get("explanation")
    if not isinstance(explanation, str) or not explanation.strip():
        raise InvalidJudgeAnswer(
            "missing_field",
            'The JSON object needs an "explanation" field with 2-3 sentences of text.',
        )
    return JudgeVerdict(score=score, explanation=explanation.strip())


def _whole_number(value: Any) -> int:
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number) or not number.is_integer():
        raise InvalidJudgeAnswer(
            "non_integer",
            f"The score was {json.dumps(value)}; it must be a whole number from 1 to 5.",
        )
    return int(number)


def _unparsable(text: str, error: UnusableJson) -> InvalidJudgeAnswer:
    # A refusal has no JSON at all; any JSON, however broken, means the judge tried to score.
    if error.code == "no_json" and _REFUSAL.search(_straighten_quotes(text)):
        return InvalidJudgeAnswer(
            "refusal", "The answer declined the task; score the conversation with one JSON object."
        )
    return InvalidJudgeAnswer(error.code, str(error))


def _straighten_quotes(text: str) -> str:
    return text.replace("\u2019", "'")
