"""A LangGraph graph whose `send` node confirms the transfer; no Django, so a subprocess can
import it."""

from __future__ import annotations

from typing import Any, TypedDict

from console_client import AsyncConsole, Console, Rejected
from console_client.langgraph import aconfirm, confirm
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from tests.client.transfer_tool import WORLD, Ledger


class Transfer(TypedDict, total=False):
    recipient_account: str
    memo: str
    receipt: str
    rejected: str


def build(
    url: str,
    key: str,
    ledger: Ledger,
    checkpointer: BaseCheckpointSaver[Any],
    task_class: str,
    *,
    asynchronous: bool = False,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The graph; with `asynchronous`, its send node is async and uses aconfirm."""

    def draft(state: Transfer) -> Transfer:
        return {"memo": state.get("memo") or "rent"}

    async def send_async(state: Transfer) -> Transfer:
        values = {"recipient_account": state["recipient_account"], "memo": state["memo"]}
        async with AsyncConsole(url, key, poll_interval=0.05) as console:
            try:
                bindings = await aconfirm(
                    task_class, "alice", values, world=WORLD, console=console, timeout=30
                )
            except Rejected as rejection:
                return {"rejected": rejection.reason or ""}
        return {"receipt": ledger.send_transfer(**bindings)}

    def send(state: Transfer) -> Transfer:
        values = {"recipient_account": state["recipient_account"], "memo": state["memo"]}
        console = Console(url, key, poll_interval=0.05)
        try:
            bindings = confirm(
                task_class, "alice", values, world=WORLD, console=console, timeout=30
            )
        except Rejected as rejection:
            return {"rejected": rejection.reason or ""}
        finally:
            console.close()
        return {"receipt": ledger.send_transfer(**bindings)}

    builder = StateGraph(Transfer)
    builder.add_node("draft", draft)
    builder.add_node("send", send_async if asynchronous else send)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "send")
    builder.add_edge("send", END)
    return builder.compile(checkpointer=checkpointer)
