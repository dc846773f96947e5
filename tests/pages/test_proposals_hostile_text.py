"""Untrusted text in every part of a proposal is shown as text, hidden characters revealed."""

from __future__ import annotations

import pytest

from tests.support.proposals import VALIDATE_URL, graph

pytestmark = pytest.mark.django_db

RLO = "\u202e"
SCRIPT = '<script>alert("x")</script>'
IMG = '"><img src=x onerror=alert(1)>'
HOSTILE = f"{SCRIPT}{RLO}{IMG}"
HOSTILE_ID = f"n{RLO}<b>"  # short enough to appear whole in messages


def hostile_graph() -> dict:
    g = graph()
    g["nodes"].append(
        {"id": HOSTILE_ID, "type": "unknown", "label": HOSTILE, "status": "unresolved"}
    )
    g["nodes"].append({"id": "h2", "type": HOSTILE, "label": HOSTILE, "value": HOSTILE})
    g["edges"].append({"source": HOSTILE_ID, "target": "c1", "type": HOSTILE})
    return g


def meaning(**extra: object) -> dict:
    return {"userSupportedMeaning": HOSTILE, "supportCategory": HOSTILE, **extra}


# Every way text reaches the detail page: graph and update contents, finding messages and paths
# (which quote ids and unknown field names), the source, and whole values of the wrong type.
BODIES = {
    "labels and values": {
        "graph": hostile_graph(),
        "update": {
            "answerMeaning": meaning(structuralActionRequired=True),
            "updatedNodes": [{"id": "h2", "label": HOSTILE, "value": HOSTILE}],
            "addedNodes": [{"id": f"a{RLO}", "type": "unknown", "label": HOSTILE + "new"}],
            "addedEdges": [{"source": f"a{RLO}", "target": HOSTILE_ID, "type": HOSTILE}],
            "selectedQuestion": HOSTILE,
        },
    },
    "reference findings": {
        "graph": hostile_graph(),
        "update": {
            "answerMeaning": meaning(structuralActionRequired=True),
            "updatedNodes": [{"id": f"missing{RLO}<i>", "value": 1}],
            "resolvedUnknownNodeIds": [HOSTILE_ID, HOSTILE_ID, f"gone{RLO}<u>"],
            "addedNodes": [{"id": HOSTILE_ID, "type": "unknown", "label": HOSTILE}],
            "addedEdges": [{"source": f"nowhere{RLO}<s>", "target": "c1", "type": "x"}],
        },
    },
    "schema findings": {
        "graph": hostile_graph(),
        "update": {
            HOSTILE: HOSTILE,
            "answerMeaning": meaning(structuralActionRequired=HOSTILE, **{IMG: 1}),
            "addedNodes": [{"id": "u9", "type": "unknown", "label": "x", "status": HOSTILE}],
        },
    },
    "a graph that is only text": {"graph": HOSTILE, "update": HOSTILE},
    "the source": {
        "graph": graph(),
        "update": {"answerMeaning": meaning(structuralActionRequired=False)},
        "source": {"provider": HOSTILE, "model": HOSTILE, "run": HOSTILE},
    },
}


def assert_shown_as_text(html: str) -> None:
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "<b>" not in html and "<i>" not in html and "<u>" not in html and "<s>" not in html
    assert RLO not in html
    assert "⟨U+202E⟩" in html
    assert "&lt;script&gt;alert(" in html


@pytest.mark.parametrize("name", list(BODIES))
def test_it_escapes_hostile_text_on_the_detail_page(runtime, client, rita, name):
    response = runtime.post_json(VALIDATE_URL, BODIES[name])
    assert response.status_code == 201, response.json()
    validation_id = response.json()["id"]
    client.force_login(rita)
    page = client.get(f"/proposals/{validation_id}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert_shown_as_text(html)
    assert "Hidden characters." in html  # the page flags the proposal


def test_it_escapes_hostile_source_on_the_list(runtime, client, rita):
    runtime.post_json(VALIDATE_URL, BODIES["the source"])
    client.force_login(rita)
    html = client.get("/proposals/").content.decode()
    assert "<script>alert" not in html and RLO not in html
    assert "&lt;script&gt;" in html and "⟨U+202E⟩" in html


def test_it_escapes_a_hostile_note_from_another_reviewer(runtime, client, rita):
    from beliefs.models import ProposalValidation
    from beliefs.services.proposals import proposal_annotate
    from tests.conftest import make_user

    runtime.post_json(VALIDATE_URL, BODIES["the source"])
    validation = ProposalValidation.objects.get()
    proposal_annotate(
        validation=validation,
        reviewer=make_user("rob", "reviewers"),
        agreement="agree",
        note=HOSTILE,
    )
    client.force_login(rita)
    html = client.get(f"/proposals/{validation.pk}/").content.decode()
    assert_shown_as_text(html)
