"""Pydantic AI: the transfer waits for alice in the console (deferred tool approval).

    CONSOLE_API_KEY=... python client/examples/pydantic_ai_transfer.py

Offline: the model is Pydantic AI's own FunctionModel, scripted to call send_transfer once and
then repeat what the tool said. Swap in a real model ("openai:gpt-5", ...) to try it live.
"""

import asyncio
from typing import Annotated

from console_client import Risk
from console_client.pydantic_ai import console_tool, resolve_approvals
from pydantic_ai import Agent
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.tools import DeferredToolRequests


def send_transfer(recipient_account: Annotated[str, Risk("irreversible")], amount: float) -> str:
    """Send a transfer.

    Args:
        recipient_account: The IBAN to send to.
        amount: How many euros.
    """
    return f"sent {amount} EUR to {recipient_account}"


def scripted(messages, info):  # noqa: ANN001, ANN201 - Pydantic AI's FunctionModel signature
    last = messages[-1]
    returns = [p for p in getattr(last, "parts", []) if isinstance(p, ToolReturnPart)]
    if isinstance(last, ModelRequest) and returns:
        return ModelResponse(parts=[TextPart(f"Done: {returns[-1].content}")])
    arguments = {"recipient_account": "DE89 3704 0044 0532 0130 00", "amount": 120}
    return ModelResponse(parts=[ToolCallPart("send_transfer", arguments, tool_call_id="call_1")])


agent = Agent(
    FunctionModel(scripted),
    tools=[console_tool(send_transfer, task_class="payments.transfer", principal="alice")],
    output_type=[str, DeferredToolRequests],
)


async def main() -> None:
    result = await agent.run("Pay Bob 120 EUR rent")
    while isinstance(result.output, DeferredToolRequests):  # only when the plan blocks
        for call in result.output.approvals:
            print("alice answers at", result.output.metadata[call.tool_call_id]["console_url"])
        approvals = await resolve_approvals(result.output, timeout=600)
        result = await agent.run(
            message_history=result.all_messages(), deferred_tool_results=approvals
        )
    print(result.output)


if __name__ == "__main__":
    asyncio.run(main())
