"""Request bodies checked against the SDKs' own request parameter types, as the real APIs
check them: an unknown field, a missing required one or a value of the wrong type is refused.

The types are the TypedDicts the openai and anthropic packages publish for a non-streaming
request (`CompletionCreateParamsNonStreaming`, `MessageCreateParamsNonStreaming`) and for
making a batch (each SDK's `BatchCreateParams`), read
through their annotations: TypedDicts (Required / NotRequired keys), unions, literals, lists,
mappings and the JSON scalars. An OpenAI-compatible server such as vLLM takes a few fields
beyond OpenAI's (`VLLM_FIELDS`, and the reasoning an assistant turn carries back).
"""

from __future__ import annotations

import collections.abc
import functools
import re
import types
import typing
from typing import Any, Literal, Union

import typing_extensions
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from anthropic.types.messages.batch_create_params import BatchCreateParams as AnthropicBatch
from openai.types.batch_create_params import BatchCreateParams as OpenAIBatch
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

DIALECTS = (
    "openai",
    "openai-compatible",
    "anthropic",
    "openai-responses",
    "openai-batch",
    "anthropic-batch",
)
# vLLM's own request fields beside OpenAI's (its documented "extra parameters").
VLLM_FIELDS = frozenset(
    {
        "chat_template_kwargs",
        "top_k",
        "min_p",
        "repetition_penalty",
        "min_tokens",
        "skip_special_tokens",
    }
)
# An assistant turn sent back to vLLM with the reasoning it came with (GPT-OSS, Qwen3).
VLLM_MESSAGE_FIELDS = frozenset({"reasoning_content", "reasoning"})
_MESSAGE_PATH = re.compile(r"^body\.messages\[\d+\]$")
_WRAPPERS = {
    typing.Required,
    typing.NotRequired,
    typing_extensions.Required,
    typing_extensions.NotRequired,
}
_LISTS = {list, collections.abc.Iterable, collections.abc.Sequence, tuple}
_MAPPINGS = {dict, collections.abc.Mapping}
MAX_PROBLEMS = 5


def request_problems(body: Any, dialect: str) -> list[str]:
    """What the provider would refuse in `body` (none: it is a valid request)."""
    if dialect == "anthropic":
        root = MessageCreateParamsNonStreaming
    elif dialect in ("openai", "openai-compatible"):
        root = CompletionCreateParamsNonStreaming
    elif dialect == "openai-responses":
        root = ResponseCreateParamsNonStreaming
    elif dialect == "openai-batch":
        root = OpenAIBatch
    elif dialect == "anthropic-batch":
        root = AnthropicBatch
    else:
        raise ValueError(f"dialect {dialect!r} is none of {', '.join(DIALECTS)}")
    return _problems(body, root, "body", dialect)[:MAX_PROBLEMS]


def _problems(value: Any, annotation: Any, path: str, dialect: str) -> list[str]:
    annotation = _unwrapped(annotation)
    origin = typing.get_origin(annotation)
    if annotation in (Any, object):
        return []
    if annotation is None or annotation is type(None):
        return [] if value is None else [f"{path}: must be null"]
    if origin is Union or origin is types.UnionType:
        return _union_problems(value, typing.get_args(annotation), path, dialect)
    if origin is Literal:
        allowed = typing.get_args(annotation)
        return [] if value in allowed else [f"{path}: {value!r} is none of {list(allowed)}"]
    if typing_extensions.is_typeddict(annotation):
        return _typeddict_problems(value, annotation, path, dialect)
    if origin in _LISTS or _is_sequence_not_str(annotation):
        return _list_problems(value, annotation, path, dialect)
    if origin in _MAPPINGS or annotation in _MAPPINGS:
        return _mapping_problems(value, annotation, path, dialect)
    return _scalar_problems(value, annotation, path)


def _unwrapped(annotation: Any) -> Any:
    """The type inside Required[...], NotRequired[...] and Annotated[...]."""
    while True:
        origin = typing.get_origin(annotation)
        if origin in _WRAPPERS:
            annotation = typing.get_args(annotation)[0]
        elif origin is typing.Annotated or hasattr(annotation, "__metadata__"):
            annotation = annotation.__origin__
        else:
            return annotation


def _union_problems(value: Any, options: tuple, path: str, dialect: str) -> list[str]:
    found = [_problems(value, option, path, dialect) for option in options]
    if any(not problems for problems in found):
        return []

    # The closest option explains best what is wrong: one of the same shape (a list for a
    # list) with the fewest problems, rather than "is not a string" from the other shapes.
    def distance(problems: list[str]) -> tuple[bool, int]:
        wrong_shape = all(problem.startswith(f"{path}: ") for problem in problems)
        return wrong_shape, len(problems)

    return min(found, key=distance)


def _typeddict_problems(value: Any, typeddict: Any, path: str, dialect: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: must be an object"]
    fields, required = _fields(typeddict)
    extra = _allowed_extra(path, dialect)
    problems = [
        f"{path}.{name}: unknown field"
        for name in value
        if name not in fields and name not in extra
    ]
    problems += [f"{path}.{name}: required" for name in sorted(required - set(value))]
    for name, field_value in value.items():
        if name in fields:
            problems += _problems(field_value, fields[name], f"{path}.{name}", dialect)
    return problems


@functools.cache
def _fields(typeddict: Any) -> tuple[dict[str, Any], frozenset[str]]:
    """A TypedDict's fields and its required ones. The SDKs write `total=False` with
    Required[...] inside string annotations, which __required_keys__ does not see."""
    hints = typing.get_type_hints(typeddict, include_extras=True)
    total = getattr(typeddict, "__total__", True)
    required = {
        name
        for name, hint in hints.items()
        if typing.get_origin(hint) in (typing.Required, typing_extensions.Required)
        or (
            total
            and typing.get_origin(hint) not in (typing.NotRequired, typing_extensions.NotRequired)
        )
    }
    return hints, frozenset(required)


def _allowed_extra(path: str, dialect: str) -> frozenset[str]:
    if dialect != "openai-compatible":
        return frozenset()
    if path == "body":
        return VLLM_FIELDS
    return VLLM_MESSAGE_FIELDS if _MESSAGE_PATH.match(path) else frozenset()


def _is_sequence_not_str(annotation: Any) -> bool:
    return getattr(annotation, "__name__", "") == "SequenceNotStr" or (
        getattr(typing.get_origin(annotation), "__name__", "") == "SequenceNotStr"
    )


def _list_problems(value: Any, annotation: Any, path: str, dialect: str) -> list[str]:
    if not isinstance(value, list):
        return [f"{path}: must be a list"]
    (item,) = typing.get_args(annotation)[:1] or (Any,)
    problems: list[str] = []
    for index, element in enumerate(value):
        problems += _problems(element, item, f"{path}[{index}]", dialect)
    return problems


def _mapping_problems(value: Any, annotation: Any, path: str, dialect: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: must be an object"]
    arguments = typing.get_args(annotation)
    item = arguments[1] if len(arguments) == 2 else Any
    problems: list[str] = []
    for key, element in value.items():
        problems += _problems(element, item, f"{path}.{key}", dialect)
    return problems


def _scalar_problems(value: Any, annotation: Any, path: str) -> list[str]:
    if annotation is bool:
        ok = isinstance(value, bool)
    elif annotation is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif annotation is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif annotation is str:
        ok = isinstance(value, str)
    elif isinstance(annotation, type):
        # A class the JSON body cannot hold (a file, a date): the SDK would have turned it
        # into one of the JSON types above first.
        ok = isinstance(value, annotation)
    else:
        raise TypeError(f"{path}: the checker does not know the annotation {annotation!r}")
    name = getattr(annotation, "__name__", str(annotation))
    return [] if ok else [f"{path}: {value!r} is not {name}"]
