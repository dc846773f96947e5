"""A real MCP server for the gateway's tests: a payments service whose tools write what they
did to the file UPSTREAM_LEDGER names (one JSON line per call). No Django here."""

from __future__ import annotations

import json
import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer(name="payments")


def _record(tool: str, **arguments: object) -> None:
    with Path(os.environ["UPSTREAM_LEDGER"]).open("a", encoding="utf-8") as ledger:
        ledger.write(json.dumps({"tool": tool, **arguments}, sort_keys=True) + "\n")


@server.tool()
def send_transfer(recipient_account: str, amount: float, instant: bool = False) -> str:
    """Send money to an account."""
    _record("send_transfer", recipient_account=recipient_account, amount=amount, instant=instant)
    return f"sent {amount} EUR to {recipient_account}" + (" (instant)" if instant else "")


@server.tool()
def get_balance() -> str:
    """The account's balance."""
    _record("get_balance")
    return "balance: 1000 EUR"


if __name__ == "__main__":
    server.run("stdio")
