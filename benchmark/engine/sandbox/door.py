"""The door every tool goes through: `Sandbox.call` looks the tool up, checks its arguments,
runs its handler on the state and records what it wrote.

It sits above both the state (state.py) and the tools (tools.py), which act on that state, so
neither of them needs the other's module.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from benchmark.engine.sandbox.arguments import ToolError, parse_arguments
from benchmark.engine.sandbox.specs import TOOL_SPECS
from benchmark.engine.sandbox.state import SandboxState, json_copy
from benchmark.engine.sandbox.tools import HANDLERS

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    content: str  # JSON text given to the agent
    write_action: dict[str, Any] | None = None


class Sandbox(SandboxState):
    """Use Sandbox.build or Sandbox.from_json; tools run through call()."""

    def call(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolResult:
        """Run one tool. Never raises: every failure is an error result the agent can read."""
        try:
            content, write_action = self._run(name, arguments)
        except ToolError as error:
            return _error_result(error.to_content())
        except Exception:  # a sandbox bug must not end the conversation
            # The agent and the people reading the trace get a plain sentence; the log gets
            # the traceback.
            logger.exception("tool %s failed unexpectedly", name)
            return _error_result({"error": "The tool failed unexpectedly. Try again."})
        if write_action is not None:
            # Copies, so that neither the caller nor later tool calls can alter the record.
            self.write_actions.append(json_copy(write_action))
            write_action = json_copy(write_action)
        return ToolResult(True, json.dumps(content, ensure_ascii=False), write_action)

    def _run(self, name: Any, arguments: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
        spec = TOOL_SPECS.get(name) if isinstance(name, str) else None
        if spec is None:
            raise ToolError(
                f"There is no tool named {str(name)[:80]!r}.", valid_tools=list(TOOL_SPECS)
            )
        content, write_action = HANDLERS[name](self, parse_arguments(spec.parameters, arguments))
        if write_action is not None:
            write_action = {"tool": name, **write_action}
        return content, write_action


def _error_result(content: dict[str, Any]) -> ToolResult:
    return ToolResult(False, json.dumps(content, ensure_ascii=False))
