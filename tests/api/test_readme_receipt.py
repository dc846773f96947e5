"""The README's Receipts section is true: its tool-server code, run as written against a live
console, accepts the arguments a person approved once, and refuses other arguments and a
second execution."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from beliefs.models import Runtime
from tests.api.conftest import API, Driver

README = Path(__file__).resolve().parents[2] / "README.md"


def _tool_server_code() -> str:
    section = README.read_text().split("## Receipts", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    code = match.group(1)
    assert len(code.strip().splitlines()) <= 15
    return code


@pytest.mark.django_db(transaction=True)
def test_the_readme_tool_server_code_runs_as_written(
    live_server: Any, api: Driver, runtime_key: Any
) -> None:
    api.register("payments.refund", slots=[{"key": "iban"}], risks={"iban": "irreversible"})
    # The tool server's name, registered for the runtime by staff (any other is refused).
    Runtime.objects.filter(pk=runtime_key[0].runtime_id).update(audiences=["billing-agent"])
    opened = api.runtime.post_json(
        f"{API}/instances/",
        {
            "task_class": "payments.refund",
            "principal": "alice",
            "audience": "billing-agent",
            "beliefs": [{"slot": "iban", "value": "NL91", "source": "user"}],
        },
    )
    instance_id = opened.json()["id"]
    api.plan(instance_id)
    receipt = api.instance(instance_id)["receipt"]
    code = (
        _tool_server_code()
        .replace('"https://console.example.org"', repr(live_server.url))
        .replace("Api-Key ...", f"Api-Key {runtime_key[1]}")
    )

    with pytest.raises(PermissionError):
        exec(code, {"receipt": receipt, "arguments": {"iban": "GB33"}})  # noqa: S102
    scope: dict[str, Any] = {"receipt": receipt, "arguments": {"iban": "NL91"}}
    exec(code, scope)  # noqa: S102
    assert scope["claims"]["instance"] == instance_id
    with pytest.raises(httpx.HTTPStatusError) as again:
        exec(code, {"receipt": receipt, "arguments": {"iban": "NL91"}})  # noqa: S102
    assert again.value.response.status_code == 409
