"""OpenAI Agents SDK: the transfer tool runs with the values alice confirms in the console.

    CONSOLE_API_KEY=... python client/examples/openai_agents_transfer.py
Uses gpt-4.1-mini when OPENAI_API_KEY is set, else a scripted model (no network).
"""

import asyncio
import os
import uuid

from agents import Agent, RunConfig, Runner
from agents.testing import ScriptedModel, assistant_message, function_call
from console_client.openai_agents import console_tool, instance_of, resolve_interruptions


def send_transfer(recipient_account: str, amount: float, memo: str) -> str:
    """Send money. Args: recipient_account: IBAN. amount: EUR. memo: a note."""
    return f"sent {amount} EUR to {recipient_account} ({memo})"


args = {"recipient_account": "DE89 3704 0044 0532 0130 00", "amount": 120, "memo": "rent"}
# A fresh call id per run, as a real model gives: a confirmation binds one call. (Even a reused
# id with other arguments would be asked again, and a spent receipt never runs twice.)
call_id = f"call_{uuid.uuid4().hex}"
scripted = ScriptedModel([[function_call("send_transfer", args, call_id=call_id)],
                          [assistant_message("Done.")]])  # fmt: skip
tool = console_tool(send_transfer, task_class="payments.transfer", principal="alice")
agent = Agent(name="payments", tools=[tool],
              model="gpt-4.1-mini" if os.environ.get("OPENAI_API_KEY") else scripted)  # fmt: skip


async def main() -> None:
    config = RunConfig(tracing_disabled=True)
    result = await Runner.run(agent, "Pay Bob 120 EUR rent to DE89...", run_config=config)
    while result.interruptions:  # only when the console's plan blocks
        for interruption in result.interruptions:
            print("alice answers at", (await instance_of(interruption)).url)
        state = await resolve_interruptions(result, timeout=600)
        result = await Runner.run(agent, state, run_config=config)
    print([i.output for i in result.new_items if hasattr(i, "output")], result.final_output)


asyncio.run(main())
