"""The MCP gateway's config: routes, pass-through tools, and clear refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from console_client.gateway import GatewayConfig, Route, main, slots_of
from mcp import types


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gateway.toml"
    path.write_text(text)
    return path


def test_each_tool_goes_to_its_class_and_principal(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        'principal = "alice"\npassthrough = ["read"]\ntimeout = 30\naudience = "svc"\n'
        '[tools.pay]\ntask_class = "payments.transfer"\nprincipal = "bob"\n',
    )
    config = GatewayConfig.load(path, {})
    assert config.route("pay") == Route("payments.transfer", "bob")
    assert config.route("refund") == Route("mcp.refund", "alice")
    assert config.passthrough == {"read"} and config.timeout == 30
    assert config.audience == "svc"


def test_the_environment_fills_in(tmp_path: Path) -> None:
    config = GatewayConfig.load(None, {"CONSOLE_PRINCIPAL": "carol", "CONSOLE_WAIT_TIMEOUT": "5"})
    assert config.route("x") == Route("mcp.x", "carol") and config.timeout == 5
    assert config.audience is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no principal"),
        ('principal = "a"\npassthrough = "read"\n', "passthrough must be a list"),
        ('principal = "a"\ntools = ["pay"]\n', r"\[tools.<name>\]"),
    ],
)
def test_a_config_that_does_not_say_what_it_must_is_refused(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        GatewayConfig.load(_write(tmp_path, text), {})


def test_the_command_exits_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--upstream", "true", "--config", str(_write(tmp_path, "principal = [\n"))])
    assert exited.value.code == 2
    assert capsys.readouterr().err.startswith("console_client.gateway: ")


def test_slots_come_from_the_input_schema() -> None:
    tool = types.Tool(
        name="pay",
        input_schema={
            "type": "object",
            "properties": {
                "to": {"type": "string", "title": "Recipient"},
                "amount": {"type": "number"},
                "count": {"type": "integer"},
                "instant": {"type": "boolean"},
                "meta": {"type": "object"},
            },
        },
    )
    assert slots_of(tool) == [
        {"key": "to", "value_type": "string", "label": "Recipient"},
        {"key": "amount", "value_type": "number"},
        {"key": "count", "value_type": "number"},
        {"key": "instant", "value_type": "boolean"},
        {"key": "meta", "value_type": "json"},
    ]
