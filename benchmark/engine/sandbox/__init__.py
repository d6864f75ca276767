"""The stateful healthcare sandbox and its 15 tools (pure Python, no Django)."""

from benchmark.engine.sandbox.specs import tool_specs
from benchmark.engine.sandbox.state import Sandbox, ToolResult

__all__ = ["Sandbox", "ToolResult", "tool_specs"]
