"""Claude Agent SDK: alice decides every Bash call in the console (reads pass through).

    CONSOLE_API_KEY=... python client/examples/claude_agent_permission.py "tidy the build dir"
    CONSOLE_API_KEY=... python client/examples/claude_agent_permission.py --offline

With the `claude` CLI installed, the agent runs and its tool calls wait for alice. `--offline`
needs no CLI and no model: it asks about one Bash call exactly as the SDK's query loop does
(the same callback, the SDK's own types) and prints the answer once alice has given it.
"""

import asyncio
import sys

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    TextBlock,
    ToolPermissionContext,
)
from console_client.claude_agent import can_use_tool

ask_alice = can_use_tool("alice", passthrough={"Read", "Grep", "Glob"}, timeout=600)


async def offline() -> None:
    call = {"command": "rm -rf build/", "description": "Remove the build directory"}
    print("asking alice in the console about Bash", call)
    answer = await ask_alice("Bash", call, ToolPermissionContext(tool_use_id="toolu_example_1"))
    print(answer)


async def agent(prompt: str) -> None:
    options = ClaudeAgentOptions(can_use_tool=ask_alice, allowed_tools=["Read", "Bash"])
    async with ClaudeSDKClient(options) as client:
        await client.query(prompt)
        async for message in client.receive_response():
            if isinstance(message, AssistantMessage):
                for block in message.content:
                    if isinstance(block, TextBlock):
                        print(block.text)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    asyncio.run(offline() if arguments == ["--offline"] else agent(" ".join(arguments)))
