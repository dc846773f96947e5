"""The proposal API: validate, contract schema, and the reviewers' list."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from beliefs.domain.contract import update_json_schema
from beliefs.models import AuditEvent, ProposalFinding, ProposalValidation
from tests.support.proposals import (
    LIST_URL,
    SCHEMA_URL,
    VALIDATE_URL,
    graph,
    passing_update,
    v1_update,
    v2_update,
)

pytestmark = pytest.mark.django_db


def nothing_stored() -> bool:
    return (
        not ProposalValidation.objects.exists()
        and not ProposalFinding.objects.exists()
        and not AuditEvent.objects.filter(kind="proposal.validated").exists()
    )


# --- validate: the envelope ----------------------------------------------------------------


def test_it_refuses_a_body_that_is_not_json(runtime):
    response = runtime.post(VALIDATE_URL, data="{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "malformed_json"
    assert set(response.json()) == {"error", "detail", "fields"}
    assert nothing_stored()


def test_it_refuses_a_body_in_another_media_type(runtime):
    response = runtime.post(VALIDATE_URL, data={"graph": "{}", "update": "{}"})  # multipart
    assert response.status_code == 415
    assert response.json()["error"] == "unsupported_media_type"
    assert nothing_stored()


@pytest.mark.parametrize("body", [[], "proposal", 42, None, True])
def test_it_refuses_a_body_that_is_not_an_object(runtime, body):
    response = runtime.post(VALIDATE_URL, data=json.dumps(body), content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_body"
    assert nothing_stored()


def test_it_refuses_an_empty_body(runtime):
    response = runtime.post(VALIDATE_URL, data="", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "missing_field"
    assert nothing_stored()


@pytest.mark.parametrize("missing", ["graph", "update"])
def test_it_refuses_a_body_without_graph_or_update(runtime, missing):
    body = {"graph": graph(), "update": passing_update()}
    del body[missing]
    response = runtime.post_json(VALIDATE_URL, body)
    assert response.status_code == 400
    assert response.json()["error"] == "missing_field"
    assert response.json()["fields"] == {missing: ["required"]}
    assert nothing_stored()


def test_it_refuses_an_unknown_top_level_field(runtime):
    body = {"graph": graph(), "update": passing_update(), "verdict": "PASS"}
    response = runtime.post_json(VALIDATE_URL, body)
    assert response.status_code == 400
    assert response.json()["error"] == "unknown_field"
    assert response.json()["fields"] == {"verdict": ["unknown field"]}
    assert nothing_stored()


@pytest.mark.parametrize(
    ("source", "field"),
    [
        ("demo-provider", "source"),
        (["demo-provider"], "source"),
        ({"provider": 7}, "source.provider"),
        ({"model": {"name": "x"}}, "source.model"),
        ({"run": "r" * 201}, "source.run"),
        ({"provider": "p", "temperature": 0.2}, "source.temperature"),
        ({"provider": "nul\x00"}, "source.provider"),
    ],
)
def test_it_refuses_a_bad_source(runtime, source, field):
    body = {"graph": graph(), "update": passing_update(), "source": source}
    response = runtime.post_json(VALIDATE_URL, body)
    assert response.status_code == 400
    assert list(response.json()["fields"]) == [field]
    assert nothing_stored()


@pytest.mark.parametrize(
    ("where", "field"),
    [
        ("label", "/update/answerMeaning/userSupportedMeaning"),
        ("key", "/update/answerMeaning"),
    ],
)
def test_it_refuses_nul_characters_it_cannot_store(runtime, where, field):
    update = passing_update()
    if where == "label":
        update["answerMeaning"]["userSupportedMeaning"] = "savings\x00realism"
    else:
        update["answerMeaning"]["bad\x00key"] = 1
    response = runtime.post_json(VALIDATE_URL, {"graph": graph(), "update": update})
    assert response.status_code == 400
    assert list(response.json()["fields"]) == [field]
    assert "NUL" in response.json()["detail"]
    assert nothing_stored()


def test_it_refuses_an_unpaired_surrogate(runtime):
    raw = '{"graph": {"nodes": [], "edges": []}, "update": {"selectedQuestion": "\\ud800"}}'
    response = runtime.post(VALIDATE_URL, data=raw, content_type="application/json")
    assert response.status_code == 400
    assert "surrogate" in response.json()["detail"]
    assert nothing_stored()


def test_it_refuses_a_number_out_of_range(runtime):
    raw = '{"graph": {"nodes": [{"id": "c1", "type": "claim", "label": "x", "value": 1e400}]},'
    raw += ' "update": {}}'
    response = runtime.post(VALIDATE_URL, data=raw, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["fields"] == {"/graph/nodes/0/value": ["number out of range"]}
    assert nothing_stored()


def test_it_refuses_absurd_nesting(runtime):
    deep: object = "bottom"
    for _ in range(40):
        deep = [deep]
    response = runtime.post_json(VALIDATE_URL, {"graph": graph(), "update": deep})
    assert response.status_code == 400
    assert response.json()["error"] == "too_deep"
    assert nothing_stored()


def test_it_refuses_nesting_deeper_than_the_parser_can_read(runtime):
    raw = '{"graph": {}, "update": ' + "[" * 100_000 + "]" * 100_000 + "}"
    response = runtime.post(VALIDATE_URL, data=raw, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "malformed_json"
    assert nothing_stored()


# --- validate: judged and stored -----------------------------------------------------------


def test_it_stores_and_returns_a_rejected_proposal(runtime, runtime_key):
    body = {
        "graph": graph(),
        "update": v1_update(),
        "source": {"provider": "demo-provider", "model": "model-x", "run": "walkthrough-57J.63"},
    }
    response = runtime.post_json(VALIDATE_URL, body)
    assert response.status_code == 201
    data = response.json()
    assert set(data) == {
        "id",
        "verdict",
        "errors",
        "warnings",
        "declared",
        "meaningful_change",
        "policy",
        "decided_by",
        "counts",
    }
    assert data["verdict"] == "REJECT"
    assert data["decided_by"] == "V1"
    assert data["declared"] is True
    assert data["meaningful_change"] is False
    assert data["policy"] == "strict"
    assert data["errors"][0]["code"] == "contract.V1_declared_true_no_change"
    assert data["errors"][0]["path"] == "/update/answerMeaning/structuralActionRequired"

    stored = ProposalValidation.objects.get(pk=data["id"])
    assert stored.graph == body["graph"]
    assert stored.update == body["update"]
    assert (stored.provider, stored.model, stored.run) == (
        "demo-provider",
        "model-x",
        "walkthrough-57J.63",
    )
    assert stored.submitted_by_key == runtime_key[0]
    assert stored.submitted_by_user is None
    assert stored.errors == data["errors"]
    rows = list(stored.findings.values_list("code", "severity", "message", "path"))
    assert rows == [(f["code"], "error", f["message"], f["path"]) for f in data["errors"]]
    event = AuditEvent.objects.get(kind="proposal.validated")
    assert event.actor == "runtime:test-runtime"
    assert event.data["validation"] == stored.pk
    assert event.data["verdict"] == "REJECT"


def test_it_stores_warnings_as_warning_rows(runtime):
    response = runtime.post_json(VALIDATE_URL, {"graph": graph(), "update": v2_update()})
    assert response.status_code == 201
    data = response.json()
    assert data["verdict"] == "ACCEPT"
    assert data["errors"] == []
    rows = list(
        ProposalFinding.objects.filter(validation_id=data["id"]).values_list("code", "severity")
    )
    assert rows == [("contract.V2_declared_false_with_change", "warning")]


@pytest.mark.parametrize(
    ("update", "code", "path"),
    [
        (5, "schema.wrong_type", "/update"),
        (None, "schema.wrong_type", "/update"),
        ({"answerMeaning": {"userSupportedMeaning": ""}}, "schema.empty_string", None),
        ({"mood": "happy"}, "schema.extra_forbidden", "/update/mood"),
    ],
)
def test_it_judges_and_stores_a_malformed_update(runtime, update, code, path):
    response = runtime.post_json(VALIDATE_URL, {"graph": graph(), "update": update})
    assert response.status_code == 201
    data = response.json()
    assert data["verdict"] == "REJECT"
    assert data["decided_by"] == "schema"
    assert data["meaningful_change"] is None
    assert code in [e["code"] for e in data["errors"]]
    if path:
        assert path in [e["path"] for e in data["errors"]]
    stored = ProposalValidation.objects.get(pk=data["id"])
    assert stored.update == update
    assert stored.findings.filter(code=code).exists()


def test_it_judges_a_malformed_graph(runtime):
    response = runtime.post_json(VALIDATE_URL, {"graph": "nodes", "update": passing_update()})
    assert response.status_code == 201
    assert response.json()["verdict"] == "REJECT"
    assert response.json()["errors"][0]["path"] == "/graph"


def test_it_clips_a_finding_path_longer_than_its_column(runtime):
    long_key = "k" * 700
    update = {**passing_update(), long_key: 1}
    response = runtime.post_json(VALIDATE_URL, {"graph": graph(), "update": update})
    assert response.status_code == 201
    assert response.json()["errors"][0]["path"] == f"/update/{long_key}"
    finding = ProposalFinding.objects.get()
    assert len(finding.path) == 500
    assert finding.path.endswith("…")


def test_it_uses_the_transition_policy_setting(runtime, settings):
    settings.CONSOLE_TRANSITION_POLICY = "lenient"
    update = {"answerMeaning": {"userSupportedMeaning": "x"}, "resolvedUnknownNodeIds": ["u3"]}
    response = runtime.post_json(VALIDATE_URL, {"graph": graph(), "update": update})
    assert response.json()["policy"] == "lenient"
    assert response.json()["verdict"] == "ACCEPT"
    assert response.json()["warnings"][0]["code"] == "contract.V3_declaration_missing"


def test_it_lets_a_signed_in_person_validate(person_client, alice):
    client = person_client(alice)
    response = client.post_json(VALIDATE_URL, {"graph": graph(), "update": passing_update()})
    assert response.status_code == 201
    assert response.json()["verdict"] == "PASS"
    stored = ProposalValidation.objects.get()
    assert stored.submitted_by_user == alice
    assert AuditEvent.objects.get(kind="proposal.validated").actor == "alice"


def test_it_asks_anonymous_callers_to_authenticate(client):
    response = client.post(
        VALIDATE_URL,
        data=json.dumps({"graph": graph(), "update": passing_update()}),
        content_type="application/json",
    )
    assert response.status_code == 401
    assert response.json()["error"] == "not_authenticated"
    assert nothing_stored()


# --- contract schema -----------------------------------------------------------------------


def test_it_serves_the_contract_schema_to_runtimes(runtime):
    response = runtime.get(SCHEMA_URL)
    assert response.status_code == 200
    assert response.json() == update_json_schema()
    assert "structuralActionRequired" in json.dumps(response.json())


def test_it_serves_the_contract_schema_to_people(person_client, alice):
    assert person_client(alice).get(SCHEMA_URL).json() == update_json_schema()


def test_it_hides_the_contract_schema_from_anonymous_callers(client):
    response = client.get(SCHEMA_URL)
    assert response.status_code == 401
    assert response.json()["error"] == "not_authenticated"


# --- the reviewers' list -------------------------------------------------------------------


def test_it_lists_validations_for_reviewers(person_client, rita, stored):
    first = stored("PASS", provider="demo-provider", model="model-x", run="r1")
    second = stored("REJECT")
    response = person_client(rita).get(LIST_URL)
    assert response.status_code == 200
    data = response.json()
    assert data["count"] == 2
    assert [item["id"] for item in data["results"]] == [second.pk, first.pk]
    item = data["results"][1]
    assert item["verdict"] == "PASS"
    assert item["source"] == {"provider": "demo-provider", "model": "model-x", "run": "r1"}
    assert item["submitted_by"] == "system"
    assert item["annotations"] == {"agree": 0, "disagree": 0}
    assert data["results"][0]["codes"] == ["contract.V1_declared_true_no_change"]
    assert "graph" not in item and "update" not in item


def test_it_refuses_the_list_to_people_who_are_not_reviewers(person_client, alice, carol):
    for user in (alice, carol):
        response = person_client(user).get(LIST_URL)
        assert response.status_code == 403
        assert response.json()["error"] == "forbidden"


def test_it_refuses_the_list_to_runtimes(runtime):
    response = runtime.get(LIST_URL)
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"


def test_it_refuses_the_list_to_anonymous_callers(client):
    response = client.get(LIST_URL)
    assert response.status_code == 401
    assert response.json()["error"] == "not_authenticated"


@pytest.fixture
def spread(stored):
    """Five validations over three providers/models and three days."""
    made = {
        "pass": stored("PASS", provider="acme", model="m1"),
        "accept": stored("ACCEPT", provider="acme", model="m2"),
        "reject_old": stored("REJECT", provider="other", model="m1"),
        "reject_new": stored("REJECT", provider="acme", model="m1"),
        "schema": None,
    }
    from beliefs.services.audit import SYSTEM
    from beliefs.services.proposals import proposal_validate_and_store

    made["schema"] = proposal_validate_and_store(
        graph=graph(), update={"mood": 1}, source={"provider": "zeta"}, actor=SYSTEM
    )
    days = {"reject_old": "2026-01-01", "pass": "2026-01-02", "accept": "2026-01-03"}
    for name, day in days.items():
        moment = dt.datetime.fromisoformat(day + "T12:00:00+00:00")
        ProposalValidation.objects.filter(pk=made[name].pk).update(created_at=moment)
    return made


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("verdict=REJECT", {"reject_old", "reject_new", "schema"}),
        ("verdict=PASS", {"pass"}),
        ("code=contract.V1_declared_true_no_change", {"reject_old", "reject_new"}),
        ("code=schema.extra_forbidden", {"schema"}),
        ("code=contract.V2_declared_false_with_change", {"accept"}),
        ("provider=acme", {"pass", "accept", "reject_new"}),
        ("model=m1", {"pass", "reject_old", "reject_new"}),
        ("provider=acme&model=m1&verdict=REJECT", {"reject_new"}),
        ("from=2026-01-02&to=2026-01-03", {"pass", "accept"}),
        ("to=2026-01-01", {"reject_old"}),
        ("from=2026-01-03", {"accept", "reject_new", "schema"}),
        ("verdict=", {"pass", "accept", "reject_old", "reject_new", "schema"}),
    ],
)
def test_it_filters_the_list(person_client, rita, spread, query, expected):
    response = person_client(rita).get(f"{LIST_URL}?{query}")
    assert response.status_code == 200
    ids = {item["id"] for item in response.json()["results"]}
    assert ids == {spread[name].pk for name in expected}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("verdict=MAYBE", "verdict"),
        ("verdict=reject", "verdict"),
        ("code=contract.V9", "code"),
        ("from=yesterday", "from"),
        ("from=2026-02-30", "from"),
        ("to=01/02/2026", "to"),
        ("from=2026-01-03&to=2026-01-01", "to"),
        ("provider=" + "p" * 201, "provider"),
        ("model=m%00", "model"),
    ],
)
def test_it_refuses_bad_filter_values(person_client, rita, query, field):
    response = person_client(rita).get(f"{LIST_URL}?{query}")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_filter"
    assert field in body["fields"]
    assert body["detail"].startswith(field)


def test_it_paginates_the_list(person_client, rita, many):
    many(5)
    response = person_client(rita).get(f"{LIST_URL}?limit=2&offset=2")
    data = response.json()
    assert data["count"] == 5
    assert len(data["results"]) == 2
    assert data["next"] and data["previous"]


def test_it_lists_a_code_once_even_when_a_validation_has_it_twice(person_client, rita):
    from beliefs.services.audit import SYSTEM
    from beliefs.services.proposals import proposal_validate_and_store

    update = {**passing_update(), "a": 1, "b": 2}  # two schema.extra_forbidden findings
    proposal_validate_and_store(graph=graph(), update=update, source=None, actor=SYSTEM)
    response = person_client(rita).get(f"{LIST_URL}?code=schema.extra_forbidden")
    assert response.json()["count"] == 1


@pytest.mark.parametrize("n", [3, 30])
def test_it_lists_in_a_constant_number_of_queries(person_client, rita, many, n):
    many(n)
    client = person_client(rita)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"{LIST_URL}?code=contract.V1_declared_true_no_change&limit=50")
    assert response.status_code == 200
    assert len(response.json()["results"]) == n // 3
    # session, user, permissions (their own and their groups'), count, page
    assert len(queries) == 5, [q["sql"] for q in queries]
