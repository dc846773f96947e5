"""MCP: ask the console's request_permission tool, as Claude Code's --permission-prompt-tool
does. Claude Code itself: `claude mcp add console -e CONSOLE_API_KEY=... -e CONSOLE_PRINCIPAL=alice
-- python -m console_client.mcp`, then `claude -p "..." --permission-prompt-tool
mcp__console__request_permission`.

    CONSOLE_API_KEY=... python client/examples/mcp_permission.py
"""

import asyncio
import os
import sys

from mcp import ClientSession, StdioServerParameters, stdio_client

server = StdioServerParameters(
    command=sys.executable,
    args=["-m", "console_client.mcp"],
    env={**os.environ, "CONSOLE_PRINCIPAL": "alice"},
)


async def main() -> None:
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        print("alice answers at", os.environ.get("CONSOLE_URL", "http://127.0.0.1:8000") + "/")
        arguments = {"tool_name": "Bash", "input": {"command": "git push origin main"}}
        result = await session.call_tool("request_permission", arguments)
        print(result.content[0].text)  # {"behavior": "allow", "updatedInput": {...}} or deny


asyncio.run(main())
