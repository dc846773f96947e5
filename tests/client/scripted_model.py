"""A scripted model for the OpenAI Agents SDK: no network, the SDK's own `Model` interface.

Turn one calls the tool with the scripted arguments; once the input holds that call's output
(the tool's result, or the rejection message the SDK sends back), it answers with a message that
quotes it, so a test can read what the model was told. It keeps no state between calls, so a run
resumed in another process gets the same model behaviour.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, Model, ModelResponse, ModelSettings, RunConfig, Tool, Usage
from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import TResponseInputItem, TResponseStreamEvent
from agents.models.interface import ModelTracing
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

CALL_ID = "call_transfer_1"
SAID = "The tool said: "


class ScriptedModel(Model):
    def __init__(self, tool_name: str, arguments: dict[str, Any], call_id: str = CALL_ID) -> None:
        self.tool_name = tool_name
        self.arguments = arguments
        self.call_id = call_id

    def _output_of_call(self, items: str | list[TResponseInputItem]) -> str | None:
        for item in items if isinstance(items, list) else []:
            if (
                isinstance(item, dict)
                and item.get("type") == "function_call_output"
                and item.get("call_id") == self.call_id
            ):
                output = item.get("output")
                return output if isinstance(output, str) else json.dumps(output)
        return None

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any | None,
    ) -> ModelResponse:
        output = self._output_of_call(input)
        if output is None:
            item: Any = ResponseFunctionToolCall(
                id="fc_1",
                type="function_call",
                name=self.tool_name,
                call_id=self.call_id,
                arguments=json.dumps(self.arguments),
                status="completed",
            )
        else:
            text = ResponseOutputText(type="output_text", text=SAID + output, annotations=[])
            item = ResponseOutputMessage(
                id="msg_1", type="message", role="assistant", status="completed", content=[text]
            )
        return ModelResponse(output=[item], usage=Usage(), response_id=None)

    # Streamed runs (`Runner.run_streamed`) get the same turn as one completed response; the
    # SDK reads the turn's items from it. It takes whatever get_response takes.
    async def stream_response(
        self, *args: Any, **kwargs: Any
    ) -> AsyncIterator[TResponseStreamEvent]:
        turn = await self.get_response(*args, **kwargs)
        response = Response(
            id="resp_1",
            created_at=0,
            model="scripted",
            object="response",
            output=turn.output,
            parallel_tool_calls=False,
            tool_choice="auto",
            tools=[],
            status="completed",
        )
        yield ResponseCompletedEvent(
            type="response.completed", response=response, sequence_number=0
        )


RUN_CONFIG = RunConfig(tracing_disabled=True)


def agent(tool: Tool, arguments: dict[str, Any]) -> Agent[Any]:
    return Agent(
        name="payments",
        instructions="Send the transfer the user asks for.",
        tools=[tool],
        model=ScriptedModel(tool.name, arguments),
    )
