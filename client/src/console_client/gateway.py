"""An MCP gateway: any MCP server's tools, each call gated by the confirmation console.

    CONSOLE_URL=http://127.0.0.1:8000 CONSOLE_API_KEY=... CONSOLE_PRINCIPAL=alice \\
        python -m console_client.gateway --upstream "npx -y @acme/payments-mcp" \\
        [--config gateway.toml]
    python -m console_client.gateway --upstream-url https://mcp.example.org/mcp

The gateway is an MCP server over stdio: add it to any MCP client (Claude Code, Cursor, VS
Code) in place of the upstream server. It lists the upstream's tools unchanged. A call of a
gated tool becomes an instance of the tool's task class (`mcp.<tool>` unless the config names
another, registered on first use with a slot per property of the tool's input schema, each
unclassified, so irreversible, until a classifier decides); the console plans it, and the
person answers on the console's page (handed to the client by URL-mode elicitation where the
client supports it, else named in progress notifications). The call reaches the upstream only
with the arguments the person confirmed (their edits in the argument's JSON type), verified
against the receipt and redeemed once; a rejection, a timeout or any failure is a tool error
that says why, and the upstream is never called then. Pass-through tools are never gated.

The config file (TOML):

    principal = "alice"            # who answers (default: CONSOLE_PRINCIPAL)
    task_class_prefix = "mcp."
    passthrough = ["get_balance"]  # never gated
    timeout = 600                  # seconds a call waits for the person (then cancelled)
    audience = "payments-gateway"  # whom the receipts are for (default: CONSOLE_AUDIENCE)

    [tools.send_transfer]          # per tool: its task class and principal
    task_class = "payments.transfer"
    principal = "bob"
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shlex
import sys
import tomllib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from console_client.client import DEFAULT_POLL_INTERVAL, AsyncConsole
from console_client.permissions import (
    DEFAULT_PROGRESS_INTERVAL,
    PermissionSettings,
    SessionElicitation,
    decide,
)

logger = logging.getLogger("console_client.gateway")

# JSON Schema types -> the console's value types.
VALUE_TYPES = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean"}


@dataclass(frozen=True)
class Route:
    """Where one tool's calls go in the console."""

    task_class: str
    principal: str


@dataclass(frozen=True)
class GatewayConfig:
    principal: str
    task_class_prefix: str = "mcp."
    passthrough: frozenset[str] = frozenset()
    timeout: float | None = None
    audience: str | None = None
    tools: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def route(self, tool: str) -> Route:
        mapped = self.tools.get(tool, {})
        return Route(
            task_class=str(mapped.get("task_class") or self.task_class_prefix + tool),
            principal=str(mapped.get("principal") or self.principal),
        )

    @classmethod
    def load(cls, path: Path | None, environ: Mapping[str, str]) -> GatewayConfig:
        """The config file's settings, CONSOLE_PRINCIPAL and CONSOLE_WAIT_TIMEOUT filling in.
        ValueError for a file that does not say what it must, in words."""
        data: dict[str, Any] = tomllib.loads(path.read_text("utf-8")) if path else {}
        principal = data.get("principal") or environ.get("CONSOLE_PRINCIPAL")
        if not principal:
            raise ValueError("no principal: set principal in the config or CONSOLE_PRINCIPAL")
        tools = data.get("tools", {})
        if not isinstance(tools, dict) or not all(isinstance(t, dict) for t in tools.values()):
            raise ValueError("[tools.<name>] tables must map a tool to task_class and principal")
        passthrough = data.get("passthrough", [])
        if not isinstance(passthrough, list) or not all(isinstance(t, str) for t in passthrough):
            raise ValueError("passthrough must be a list of tool names")
        timeout = data.get("timeout") or environ.get("CONSOLE_WAIT_TIMEOUT")
        return cls(
            principal=str(principal),
            task_class_prefix=str(data.get("task_class_prefix", "mcp.")),
            passthrough=frozenset(passthrough),
            timeout=float(timeout) if timeout else None,
            audience=str(data.get("audience") or environ.get("CONSOLE_AUDIENCE") or "") or None,
            tools=tools,
        )


def slots_of(tool: types.Tool) -> list[dict[str, Any]]:
    """A slot per property of the tool's input schema, typed from its JSON Schema type."""
    properties = (tool.input_schema or {}).get("properties") or {}
    slots = []
    for key, schema in properties.items():
        kind = schema.get("type") if isinstance(schema, dict) else None
        slot: dict[str, Any] = {"key": key, "value_type": VALUE_TYPES.get(str(kind), "json")}
        if isinstance(schema, dict) and isinstance(schema.get("title"), str):
            slot["label"] = schema["title"]
        slots.append(slot)
    return slots


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


class Gateway:
    """The gated tools of one upstream session."""

    def __init__(self, upstream: ClientSession, config: GatewayConfig, console: Any) -> None:
        self.upstream = upstream
        self.config = config
        self.console = console
        self.tools: dict[str, types.Tool] = {}

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        listed = await self.upstream.list_tools()
        self.tools = {tool.name: tool for tool in listed.tools}
        return types.ListToolsResult(tools=listed.tools)

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> Any:
        name, arguments = params.name, dict(params.arguments or {})
        if name in self.config.passthrough:
            return await self.upstream.call_tool(name, arguments)
        if name not in self.tools:
            await self.list_tools(ctx, None)
        if name not in self.tools:
            return _error(f"The upstream server has no tool {name!r}.")
        route = self.config.route(name)
        settings = PermissionSettings(
            principal=route.principal,
            timeout=self.config.timeout,
            audience=self.config.audience,
            console=self.console,
            progress_interval=DEFAULT_PROGRESS_INTERVAL,
        )
        token = (ctx.meta or {}).get("progress_token") if ctx.meta else None

        async def progress(done: float, total: float | None, message: str) -> None:
            if token is not None:
                await ctx.session.send_progress_notification(
                    token, done, total, message, related_request_id=ctx.request_id
                )

        answer = await decide(
            name,
            arguments,
            None,
            settings,
            progress,
            SessionElicitation.of(ctx.session, ctx.request_id),
            task_class=route.task_class,
            principal=route.principal,
            slots=slots_of(self.tools[name]),
        )
        if answer["behavior"] != "allow":
            return _error(answer["message"])
        return await self.upstream.call_tool(name, answer["updatedInput"])


@contextlib.asynccontextmanager
async def upstream_session(command: str | None, url: str | None) -> AsyncIterator[ClientSession]:
    """A client session with the upstream server: a subprocess over stdio, or streamable HTTP."""
    if command:
        program, *arguments = shlex.split(command)
        parameters = StdioServerParameters(command=program, args=arguments, env=dict(os.environ))
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session
    else:
        assert url is not None
        async with (
            streamable_http_client(url) as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def build_server(gateway: Gateway) -> Server[Any]:
    return Server(
        "confirmation-console-gateway",
        instructions=(
            "The tools of another MCP server; a person confirms each call of a gated tool in "
            "the confirmation console, and it runs with the values they confirmed."
        ),
        on_list_tools=gateway.list_tools,
        on_call_tool=gateway.call_tool,
    )


async def serve(command: str | None, url: str | None, config: GatewayConfig) -> None:
    def console() -> AsyncConsole:
        interval = os.environ.get("CONSOLE_POLL_INTERVAL")
        return AsyncConsole(poll_interval=float(interval) if interval else DEFAULT_POLL_INTERVAL)

    async with upstream_session(command, url) as upstream:
        server = build_server(Gateway(upstream, config, console))
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m console_client.gateway", description=__doc__.split("\n\n")[0]
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--upstream", help="the upstream MCP server's command (stdio)")
    where.add_argument("--upstream-url", help="the upstream MCP server's streamable HTTP URL")
    parser.add_argument("--config", type=Path, help="a TOML file (see the module's docstring)")
    options = parser.parse_args(argv)
    try:
        config = GatewayConfig.load(options.config, os.environ)
    except (OSError, ValueError, tomllib.TOMLDecodeError) as wrong:
        parser.exit(2, f"console_client.gateway: {wrong}\n")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    import anyio

    anyio.run(serve, options.upstream, options.upstream_url, config)


if __name__ == "__main__":
    main(sys.argv[1:])
