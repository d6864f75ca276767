"""The fake server's prompt cache: a request body in a vendor's wire format turned into the
prompt the provider reads (the canonical JSON of its tools, system prompt and messages, in
that order), for llm.engine.prompt_cache to say what a real provider would have read from its
cache or written to it. Entries are kept per model, as the providers keep them.

- OpenAI chat completions and Responses: automatic caching of the whole prompt's prefixes.
- Anthropic: each tool, system block and content block is a block; those carrying
  `cache_control` are the breakpoints (the mark itself is left out of the text, so marking a
  block does not change what it caches).
"""

from __future__ import annotations

import json
from typing import Any

from llm.engine.prompt_cache import Block, PromptUsage
from llm.engine.prompt_cache import PromptCache as Simulation


class PromptCache:
    def __init__(self, **options: Any) -> None:
        self.simulation = Simulation(**options)

    def usage(self, dialect: str, body: dict[str, Any]) -> PromptUsage:
        scope = str(body.get("model", ""))
        if dialect == "anthropic":
            return self.simulation.marked(scope, _anthropic_blocks(body))
        text = _responses_text(body) if dialect == "openai-responses" else _chat_text(body)
        return self.simulation.automatic(scope, text)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _chat_text(body: dict[str, Any]) -> str:
    return _canonical(body.get("tools", [])) + "".join(
        _canonical(message) for message in body.get("messages", [])
    )


def _responses_text(body: dict[str, Any]) -> str:
    items = body.get("input", [])
    items = [{"role": "user", "content": items}] if isinstance(items, str) else items
    return (
        _canonical(body.get("tools", []))
        + _canonical(body.get("instructions", ""))
        + "".join(_canonical(item) for item in items)
    )


def _anthropic_blocks(body: dict[str, Any]) -> list[Block]:
    system = body.get("system", [])
    parts = [*body.get("tools", []), *([{"text": system}] if isinstance(system, str) else system)]
    for message in body.get("messages", []):
        content = message.get("content")
        parts.extend([{"text": content}] if isinstance(content, str) else content)
    return [
        Block(
            _canonical({key: value for key, value in part.items() if key != "cache_control"}),
            breakpoint="cache_control" in part,
        )
        for part in parts
    ]
