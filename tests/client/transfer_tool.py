"""The tool under test and how it is wrapped; no Django here, so a subprocess can import it.

The OpenAI Agents SDK is imported by `transfer_tool` only: the LangGraph graph's subprocess
imports this module for its ledger, and importing the SDK there cost it a second."""

from __future__ import annotations

from typing import Any

from console_client import AsyncConsole

TRANSFER = "payments.transfer"  # the recipient feeds an irreversible decision: it blocks
SANDBOX = "payments.sandbox"  # reversible recipient, cosmetic memo: nothing blocks
ARGUMENTS = {"recipient_account": "DE89 3704 0044 0532 0130 00", "memo": "rent"}
WORLD = {"recipient_account": {"holder": "Bob Example", "bank": "Commerzbank"}}


class Ledger:
    """What the tool did: the arguments it ran with."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def send_transfer(self, recipient_account: str, memo: str) -> str:
        """Send a transfer.

        Args:
            recipient_account: The IBAN to send to.
            memo: A note for the recipient.
        """
        self.calls.append({"recipient_account": recipient_account, "memo": memo})
        return f"sent to {recipient_account}"


def transfer_tool(url: str, key: str, ledger: Ledger, task_class: str = TRANSFER) -> Any:
    from console_client.openai_agents import console_tool

    return console_tool(
        ledger.send_transfer,
        task_class=task_class,
        principal="alice",
        world=WORLD,
        console=lambda: AsyncConsole(url, key, poll_interval=0.05),
    )
