"""A tiny MCP server on the official Python SDK (mcp 2.x), for the interop tests.

Usage: PYTHONPATH=<interop>/py python3 py_server.py PORT
Listens on 127.0.0.1 only; Streamable HTTP at /mcp.
"""

import sys

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

mcp = MCPServer("countersign-interop-py")


@mcp.tool(
    title="Shout",
    description="Upper-cases the text.\nA second line that probes do not print.",
    annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False),
)
def shout(text: str) -> str:
    return text.upper()


@mcp.tool(description="Adds two integers.")
def add(a: int, b: int) -> str:
    return str(a + b)


@mcp.tool(
    description="Pretends to delete a note.",
    annotations=ToolAnnotations(destructiveHint=True),
)
def forget_note(note_id: str) -> str:
    return f"forgot {note_id}"


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
