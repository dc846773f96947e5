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
    replayed: bool


def build(
    url: str,
    key: str,
    ledger: Ledger,
    checkpointer: BaseCheckpointSaver[Any],
    task_class: str,
    *,
    asynchronous: bool = False,
    explicit_checkpointer: bool = False,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The graph; with `asynchronous`, its send node is async and uses aconfirm; with
    `explicit_checkpointer`, the node names the checkpointer to confirm()."""
    given = checkpointer if explicit_checkpointer else None

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
        if bindings.replayed:  # sent by an earlier run of this node: not again
            return {"replayed": True}
        return {"receipt": ledger.send_transfer(**bindings)}

    def send(state: Transfer) -> Transfer:
        values = {"recipient_account": state["recipient_account"], "memo": state["memo"]}
        console = Console(url, key, poll_interval=0.05)
        try:
            bindings = confirm(
                task_class,
                "alice",
                values,
                world=WORLD,
                console=console,
                timeout=30,
                checkpointer=given,
            )
        except Rejected as rejection:
            return {"rejected": rejection.reason or ""}
        finally:
            console.close()
        if bindings.replayed:  # sent by an earlier run of this node: not again
            return {"replayed": True}
        return {"receipt": ledger.send_transfer(**bindings)}

    builder = StateGraph(Transfer)
    builder.add_node("draft", draft)
    builder.add_node("send", send_async if asynchronous else send)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "send")
    builder.add_edge("send", END)
    return builder.compile(checkpointer=checkpointer)


RENT = {"recipient_account": "DE89 3704 0044 0532 0130 00", "memo": "rent"}
DEPOSIT = {"recipient_account": "NL91 ABNA 0417 1643 00", "memo": "deposit"}


def build_two(
    url: str, key: str, ledger: Ledger, checkpointer: BaseCheckpointSaver[Any], task_class: str
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A graph whose one node confirms and sends two transfers, the way the README shows:
    each action runs only when its confirmation is not a replay (LangGraph runs the node from
    its top on every resume)."""

    def pay_both(state: Transfer) -> Transfer:
        with Console(url, key, poll_interval=0.05) as console:
            rent = confirm(
                task_class, "alice", RENT, world=WORLD, console=console, name="rent", timeout=30
            )
            if not rent.replayed:
                ledger.send_transfer(**rent)
            deposit = confirm(
                task_class,
                "alice",
                DEPOSIT,
                world=WORLD,
                console=console,
                name="deposit",
                timeout=30,
            )
            if not deposit.replayed:
                ledger.send_transfer(**deposit)
        return {"receipt": "both sent"}

    builder = StateGraph(Transfer)
    builder.add_node("pay_both", pay_both)
    builder.add_edge(START, "pay_both")
    builder.add_edge("pay_both", END)
    return builder.compile(checkpointer=checkpointer)
