"""A payments service, separate from the agent, that sends a transfer only on the console's
receipt for exactly its arguments, and only once.

    CONSOLE_URL=http://127.0.0.1:8000 CONSOLE_API_KEY=... \\
        python client/examples/tool_server.py --port 8100 --audience payments-service

    POST /transfers  {"recipient_account": "...", "memo": "...", "receipt": "<compact JWS>"}
    200 {"sent": {...}}                          sent, once
    403 {"error": "receipt_...", "detail": ...}  the receipt does not vouch for these arguments
                                                 (another audience, other values, a value no
                                                 person confirmed, a forged signature, expired)
    409 {"error": "receipt_redeemed", ...}       this receipt was already used

The agent's side hands the receipt on: `confirm(..., audience="payments-service",
redeem="tool")` in a LangGraph node, or `console_tool(func, ..., audience=..., redeem="tool")`
with a `receipt` parameter on `func` (see client/README.md). The service checks the signature
against the console's published keys, the audience, and the digest of the arguments it is about
to execute, then redeems the receipt with the console, which records one redemption per
receipt. `--ledger FILE` appends each transfer sent as a JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from console_client import ApiError, Console, ReceiptError, ReceiptRedeemed


class Service:
    """What the handler needs: the console (keys and redemption), the audience, the ledger."""

    def __init__(self, console: Console, audience: str, ledger: Path | None) -> None:
        self.console = console
        self.audience = audience
        self.ledger = ledger
        self.lock = threading.Lock()  # one Console (one httpx client) for every thread

    def send(self, arguments: dict[str, Any], token: str) -> tuple[int, dict[str, Any]]:
        with self.lock:
            try:
                receipt = self.console.verify_receipt(
                    token, bindings=arguments, audience=self.audience
                )
                self.console.redeem(token, bindings_digest=receipt.bindings_digest)
            except ReceiptRedeemed as used:
                return 409, {"error": "receipt_redeemed", "detail": str(used)}
            except ReceiptError as refused:
                return 403, {"error": _code(refused), "detail": str(refused)}
            except ApiError as refused:
                return refused.status, {"error": refused.error, "detail": refused.detail}
        if self.ledger is not None:
            with self.ledger.open("a", encoding="utf-8") as ledger:
                ledger.write(json.dumps(arguments, sort_keys=True) + "\n")
        return 200, {"sent": arguments}


def _code(error: ReceiptError) -> str:
    """ReceiptAudienceMismatch -> receipt_audience_mismatch."""
    name = type(error).__name__
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def handler(service: Service) -> type[BaseHTTPRequestHandler]:
    class Transfers(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path != "/transfers":
                return self.answer(404, {"error": "not_found", "detail": self.path})
            try:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                return self.answer(400, {"error": "invalid_json", "detail": "send JSON"})
            token = body.pop("receipt", None) if isinstance(body, dict) else None
            if not isinstance(token, str) or not token:
                return self.answer(400, {"error": "receipt_missing", "detail": "no receipt"})
            self.answer(*service.send(body, token))

        def answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            sys.stderr.write("tool server: " + format % args + "\n")

    return Transfers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8100, help="0: any free port")
    parser.add_argument("--audience", default="payments-service")
    parser.add_argument("--ledger", type=Path, default=None)
    options = parser.parse_args()
    service = Service(Console(), options.audience, options.ledger)  # CONSOLE_URL, CONSOLE_API_KEY
    server = ThreadingHTTPServer(("127.0.0.1", options.port), handler(service))
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


if __name__ == "__main__":
    main()
