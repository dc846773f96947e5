"""A LangGraph graph whose `send` node confirms the transfer; no Django, so a subprocess can
import it."""

from __future__ import annotations

from typing import Any, TypedDict

from console_client import Console, Rejected
from console_client.langgraph import confirm
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
) -> CompiledStateGraph[Any, Any, Any, Any]:
    def draft(state: Transfer) -> Transfer:
        return {"memo": state.get("memo") or "rent"}

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
    builder.add_node("send", send)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "send")
    builder.add_edge("send", END)
    return builder.compile(checkpointer=checkpointer)
