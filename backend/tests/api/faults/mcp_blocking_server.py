"""An MCP server on the official Python SDK (PyPI `mcp` 2.x) whose one tool
blocks until the process is killed: the third-party server that
`faults::mcp` kills for real while a call is in flight.

Usage: PYTHONPATH=<interop>/py python3 mcp_blocking_server.py PORT
Listens on 127.0.0.1 only; Streamable HTTP at /mcp. Prints
`call arrived: wait_for_kill` on stdout when the tool is called.
"""

import sys

import anyio
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("countersign-faults-py")


@mcp.tool(description="Says it was called, then waits until the server is killed.")
async def wait_for_kill() -> str:
    print("call arrived: wait_for_kill", flush=True)
    await anyio.sleep_forever()
    return "not reached"


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
