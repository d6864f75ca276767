"""The stateful healthcare sandbox and its 15 tools (pure Python, no Django)."""

from benchmark.engine.sandbox.door import Sandbox, ToolResult
from benchmark.engine.sandbox.specs import tool_specs

__all__ = ["Sandbox", "ToolResult", "tool_specs"]
