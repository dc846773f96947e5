"""`manage.py export_person`: what the console holds about one person, and nobody else's."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.utils import timezone

from beliefs.domain.vocabulary import AuditKind
from beliefs.models import AuditEvent, Belief, Receipt, TaskInstance
from tests.browser import scenarios

pytestmark = pytest.mark.django_db


def _export(username: str) -> tuple[str, dict[str, Any]]:
    out = io.StringIO()
    call_command("export_person", username, stdout=out)
    return out.getvalue(), json.loads(out.getvalue())


def test_it_gives_the_person_s_rows_and_nobody_else_s(alice: User, mallory: User) -> None:
    mine = scenarios.vendor(alice)
    theirs = scenarios.hostile(mallory)
    text, export = _export("alice")

    assert export["person"]["username"] == "alice"
    instances = {row["pk"] for row in export["tables"]["beliefs.taskinstance"]}
    assert instances == {str(i.pk) for i in TaskInstance.objects.filter(principal=alice)}
    assert str(mine.pk) in instances and str(theirs.pk) not in instances
    beliefs = {row["pk"] for row in export["tables"]["beliefs.belief"]}
    assert beliefs == set(Belief.objects.filter(principal=alice).values_list("pk", flat=True))
    prompts = export["tables"]["beliefs.prompt"]
    assert prompts and {row["fields"]["instance"] for row in prompts} <= instances
    assert "NL91ABNA0417164300" in text  # her values are hers to see
    # Nothing of mallory's, and never a password's hash.
    assert scenarios.HOSTILE_SCRIPT not in text and "mallory" not in text
    assert alice.password not in text and "password" not in export["person"]


def test_it_is_audited(alice: User) -> None:
    scenarios.vendor(alice)
    _, export = _export("alice")
    (event,) = AuditEvent.objects.filter(kind=AuditKind.PERSON_EXPORTED)
    assert (event.subject, event.actor) == ("alice", "system")
    assert event.data["rows"] == sum(len(rows) for rows in export["tables"].values()) > 0


def test_an_unknown_person_is_a_clear_error(alice: User) -> None:
    with pytest.raises(CommandError, match="No person with the username 'nobody'"):
        call_command("export_person", "nobody", stdout=io.StringIO())
    assert not AuditEvent.objects.filter(kind=AuditKind.PERSON_EXPORTED).exists()


def test_a_receipt_s_token_is_withheld(alice: User) -> None:
    # Whoever holds a receipt's token can present it: the export lists the receipt, not it.
    instance = scenarios.vendor(alice)
    now = timezone.now()
    receipt = Receipt.objects.create(
        instance=instance,
        audience="payments",
        bindings_digest="0" * 64,
        token="eyJhbGciOi.the-bearer-token.sig",
        issued_at=now,
        expires_at=now + timedelta(minutes=5),
    )
    text, export = _export("alice")
    rows = {row["pk"]: row["fields"] for row in export["tables"]["beliefs.receipt"]}
    assert rows[str(receipt.pk)]["audience"] == "payments"
    assert all("token" not in fields for fields in rows.values())
    tokens = Receipt.objects.filter(instance__principal=alice).values_list("token", flat=True)
    assert len(tokens) == len(rows) and not any(token in text for token in tokens)
    # ... nor the copy the webhook that told the runtime carries: the event is listed, marked.
    payloads = [row["fields"]["payload"] for row in export["tables"]["beliefs.webhookevent"]]
    assert "(withheld: a credential)" in json.dumps(payloads)
