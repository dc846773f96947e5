"""The Receipts page of the docs is true: its tool-server code, run as written against a live
console, accepts the arguments a person approved once, and refuses other arguments, a second
execution, and values only the runtime vouched for."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from beliefs import signing
from beliefs.domain.canonical import bindings_digest, legacy_bindings_digest
from beliefs.models import Runtime
from tests.support.api import API, Driver

RECEIPTS = Path(__file__).resolve().parents[2] / "docs" / "receipts.md"


def _tool_server_code() -> str:
    match = re.search(r"```python\n(.*?)```", RECEIPTS.read_text(), re.S)
    assert match is not None
    code = match.group(1)
    # Short enough to copy; two lines longer since it refuses values only a runtime vouched for.
    assert len(code.strip().splitlines()) <= 17
    return code


@pytest.mark.django_db(transaction=True)
def test_the_readme_tool_server_code_runs_as_written(
    live_server: Any, api: Driver, runtime_key: Any
) -> None:
    receipt, instance_id = _confirmed_in_the_console(api, runtime_key)
    code = _code(live_server, runtime_key)

    with pytest.raises(PermissionError):
        exec(code, {"receipt": receipt, "arguments": {"iban": "GB33"}})  # noqa: S102
    scope: dict[str, Any] = {"receipt": receipt, "arguments": {"iban": "NL91"}}
    exec(code, scope)  # noqa: S102
    assert scope["claims"]["instance"] == instance_id
    with pytest.raises(httpx.HTTPStatusError) as again:
        exec(code, {"receipt": receipt, "arguments": {"iban": "NL91"}})  # noqa: S102
    assert again.value.response.status_code == 409


def _confirmed_in_the_console(api: Driver, runtime_key: Any) -> tuple[str, str]:
    """A refund's receipt, its irreversible IBAN confirmed by alice in the console."""
    api.register("payments.refund", slots=[{"key": "iban"}], risks={"iban": "irreversible"})
    # The tool server's name, registered for the runtime by staff (any other is refused).
    Runtime.objects.filter(pk=runtime_key[0].runtime_id).update(audiences=["billing-agent"])
    opened = api.runtime.post_json(
        f"{API}/instances/",
        {
            "task_class": "payments.refund",
            "principal": "alice",
            "audience": "billing-agent",
            "beliefs": [{"slot": "iban", "value": "NL91", "source": "tool"}],
        },
    )
    instance_id = opened.json()["id"]
    api.plan(instance_id)
    api.respond(api.prompt(instance_id, "iban"), "confirm")
    instance = api.instance(instance_id)
    assert instance["status"] == "ready"
    return instance["receipt"], instance_id


def _code(live_server: Any, runtime_key: Any) -> str:
    return (
        _tool_server_code()
        .replace('"https://console.example.org"', repr(live_server.url))
        .replace("Api-Key ...", f"Api-Key {runtime_key[1]}")
    )


def _resigned(receipt: str, **claims: Any) -> str:
    """The receipt with some claims changed, signed again with the console's key (as the
    console signs what its receipts claim)."""
    changed = {**signing.verify(receipt), **claims}
    return signing.sign({k: v for k, v in changed.items() if v is not None})


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("vouched", [["iban"], []])
def test_the_readme_code_refuses_values_only_the_runtime_vouched_for(
    live_server: Any, api: Driver, runtime_key: Any, vouched: list[str]
) -> None:
    receipt, _ = _confirmed_in_the_console(api, runtime_key)
    token = _resigned(receipt, vouched_by_runtime=vouched, canonicalization="RFC8785")
    scope: dict[str, Any] = {"receipt": token, "arguments": {"iban": "NL91"}}
    if vouched:
        with pytest.raises(PermissionError, match="iban"):
            exec(_code(live_server, runtime_key), scope)  # noqa: S102
        assert "redeemed" not in scope  # refused before anything was used
    else:
        exec(_code(live_server, runtime_key), scope)  # noqa: S102
        assert scope["redeemed"].status_code == 200


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("claim", ["RFC8785", None])
def test_the_readme_code_checks_the_digest_in_the_receipts_form(
    live_server: Any, api: Driver, runtime_key: Any, claim: str | None
) -> None:
    """A receipt without the `canonicalization` claim (issued before RFC 8785) digested the
    legacy form: the recipe checks the arguments in the form the receipt names."""
    receipt, _ = _confirmed_in_the_console(api, runtime_key)
    arguments = {"iban": "NL91", "amount": 120.0}  # 120.0: where the two forms differ
    form = bindings_digest if claim == "RFC8785" else legacy_bindings_digest
    token = _resigned(receipt, canonicalization=claim, bindings_digest=form(arguments))
    code = _code(live_server, runtime_key).split("redeemed = ")[0]  # the offline checks
    exec(code, {"receipt": token, "arguments": arguments})  # noqa: S102
    with pytest.raises(PermissionError):
        exec(code, {"receipt": token, "arguments": {**arguments, "amount": 121}})  # noqa: S102
    other = legacy_bindings_digest if claim == "RFC8785" else bindings_digest
    mislabelled = _resigned(receipt, canonicalization=claim, bindings_digest=other(arguments))
    with pytest.raises(PermissionError):
        exec(code, {"receipt": mislabelled, "arguments": arguments})  # noqa: S102
