"""LangGraph: the send node pauses with interrupt() until alice confirms in the console.

CONSOLE_API_KEY=... python client/examples/langgraph_transfer.py
"""

import sqlite3
from typing import TypedDict

from console_client import Rejected
from console_client.langgraph import confirm
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command


class State(TypedDict, total=False):
    recipient_account: str
    amount: float
    receipt: str


def send(state: State) -> State:
    values = {"recipient_account": state["recipient_account"], "amount": state["amount"]}
    try:
        bindings = confirm("payments.transfer", "alice", values, timeout=600)
    except Rejected as rejected:
        return {"receipt": f"not sent: {rejected.reason}"}
    return {"receipt": f"sent {bindings['amount']} EUR to {bindings['recipient_account']}"}


builder = StateGraph(State).add_node("send", send).add_edge(START, "send").add_edge("send", END)
checkpoints = sqlite3.connect("checkpoints.sqlite", check_same_thread=False)
graph = builder.compile(checkpointer=SqliteSaver(checkpoints))
config = {"configurable": {"thread_id": "transfer-example-1"}}
result = graph.invoke({"recipient_account": "DE89 3704 0044 0532 0130 00", "amount": 120}, config)
for pause in result.get("__interrupt__", []):
    print("alice answers at", pause.value["url"])  # any process may resume: the state is on disk
    result = graph.invoke(Command(resume=True), config)
print(result["receipt"])
