"""The slots an adapter registers on first use: from a tool's signature or an action's values."""

from __future__ import annotations

import datetime
import logging
from typing import Annotated, Any, Literal

import pytest
from console_client import Risk
from console_client.errors import BadRequest, Conflict, NotFound
from console_client.registration import (
    log_registered,
    needs_registration,
    registration,
    slots_from_signature,
    slots_from_values,
)


def send_transfer(
    recipient_account: Annotated[str, Risk("irreversible")],
    amount: float,
    count: int | None,
    urgent: bool,
    currency: Literal["EUR", "USD"],
    on: datetime.date,
    details: dict[str, Any],
    receipt: str = "",
    **extra: Any,
) -> str:
    return "sent"


def test_a_slot_per_parameter_typed_from_its_annotation() -> None:
    slots = slots_from_signature(send_transfer, risks={"amount": "reversible"})
    assert slots == [
        {
            "key": "recipient_account",
            "label": "Recipient account",
            "value_type": "string",
            "suggested_risk": "irreversible",
        },
        {
            "key": "amount",
            "label": "Amount",
            "value_type": "number",
            "suggested_risk": "reversible",
        },
        {"key": "count", "label": "Count", "value_type": "number"},
        {"key": "urgent", "label": "Urgent", "value_type": "boolean"},
        {"key": "currency", "label": "Currency", "value_type": "string", "choices": ["EUR", "USD"]},
        {"key": "on", "label": "On", "value_type": "date"},
        {"key": "details", "label": "Details", "value_type": "json"},
    ]  # the receipt and **extra are not slots


def test_risks_given_win_over_annotations_and_are_checked() -> None:
    (slot, *_) = slots_from_signature(send_transfer, risks={"recipient_account": "cosmetic"})
    assert slot["suggested_risk"] == "cosmetic"
    with pytest.raises(ValueError, match="risks\\['amount'\\]"):
        slots_from_signature(send_transfer, risks={"amount": "unclassified"})
    with pytest.raises(ValueError, match="Risk must be one of"):
        Risk("dangerous")


def test_a_slot_per_value_typed_from_the_value() -> None:
    values = {"to": "DE89", "amount": 120.0, "n": 3, "ok": True, "meta": {"a": 1}, "none": None}
    assert [(s["key"], s["value_type"]) for s in slots_from_values(values)] == [
        ("to", "string"),
        ("amount", "number"),
        ("n", "number"),
        ("ok", "boolean"),
        ("meta", "json"),
        ("none", "json"),
    ]


def test_the_registration_names_one_decision_every_slot_feeds() -> None:
    form = registration("payments.transfer", slots_from_values({"to": "x", "amount": 1}), "send")
    assert form["decisions"] == [{"key": "send", "slots": ["to", "amount"]}]
    assert registration("c", [], None)["decisions"] == []


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (NotFound(404, {"error": "unknown_task_class"}), True),
        (BadRequest(400, {"error": "unknown_slot"}), True),
        (BadRequest(400, {"error": "unknown_audience"}), False),
        (NotFound(404, {"error": "not_found"}), False),
        (Conflict(409, {"error": "unknown_slot"}), False),
    ],
)
def test_only_an_unknown_class_or_slot_is_registered(error: Any, expected: bool) -> None:
    assert needs_registration(error) is expected


def test_the_log_says_where_a_classifier_decides(caplog: pytest.LogCaptureFixture) -> None:
    body = {
        "slots": [
            {"key": "to", "risk_class": "unclassified"},
            {"key": "memo", "risk_class": "cosmetic"},
        ]
    }
    with caplog.at_level(logging.WARNING, logger="console_client"):
        log_registered("http://console.test/", "payments/transfer", body)
        log_registered("http://console.test/", "done", {"slots": [{"key": "a", "risk_class": "x"}]})
    (record,) = caplog.records
    assert record.getMessage() == (
        "registered task class payments/transfer: its slots to wait for a classifier at "
        "http://console.test/classify/payments/transfer/ and are treated as irreversible until then"
    )
