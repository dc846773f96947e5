"""The reviewers' pages: list, detail, annotation, export and statistics."""

from __future__ import annotations

import csv
import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from beliefs.models import AuditEvent, ProposalAnnotation, ProposalValidation
from beliefs.services.audit import SYSTEM
from beliefs.services.proposals import proposal_annotate, proposal_validate_and_store
from tests.support.proposals import graph, passing_update

HTMX = {"HTTP_HX_REQUEST": "true"}

pytestmark = pytest.mark.django_db

PAGES = ["/proposals/", "/proposals/stats/", "/proposals/export.csv"]


@pytest.fixture
def rita_client(rita, signed_in):
    return signed_in(rita)


def annotate_url(validation: ProposalValidation) -> str:
    return f"/proposals/{validation.pk}/annotation/"


# --- who may see them ----------------------------------------------------------------------


def test_it_sends_anonymous_visitors_to_sign_in(client, stored):
    validation = stored("REJECT")
    for url in [*PAGES, f"/proposals/{validation.pk}/"]:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/"), url
    response = client.post(annotate_url(validation), {"agreement": "agree"})
    assert response.status_code == 302
    assert not ProposalAnnotation.objects.exists()


def test_it_refuses_signed_in_people_who_are_not_reviewers(client, alice, carol, stored):
    validation = stored("REJECT")
    for user in (alice, carol):
        client.force_login(user)
        for url in [*PAGES, f"/proposals/{validation.pk}/", "/proposals/999999/"]:
            assert client.get(url).status_code == 403, (user, url)
        response = client.post(annotate_url(validation), {"agreement": "agree"})
        assert response.status_code == 403
    assert not ProposalAnnotation.objects.exists()


def test_it_shows_the_pages_to_reviewers(rita_client, stored):
    validation = stored("REJECT")
    for url in [*PAGES, f"/proposals/{validation.pk}/"]:
        assert rita_client.get(url).status_code == 200, url


def test_it_answers_404_for_a_validation_that_does_not_exist(rita_client):
    assert rita_client.get("/proposals/424242/").status_code == 404
    response = rita_client.post("/proposals/424242/annotation/", {"agreement": "agree"})
    assert response.status_code == 404


# --- the list ------------------------------------------------------------------------------


def test_it_lists_filters_and_counts_per_verdict(rita_client, stored):
    passed = stored("PASS", provider="acme")
    rejected = stored("REJECT", provider="acme")
    stored("REJECT", provider="other")
    response = rita_client.get("/proposals/?provider=acme&verdict=REJECT")
    assert response.status_code == 200
    assert response.context["counts"] == {"PASS": 1, "ACCEPT": 0, "REJECT": 1}
    assert [v.pk for v in response.context["page"]] == [rejected.pk]
    html = response.content.decode()
    assert f'href="/proposals/{rejected.pk}/"' in html
    assert f'href="/proposals/{passed.pk}/"' not in html
    # the export link carries the same filters
    assert 'href="/proposals/export.csv?provider=acme&amp;verdict=REJECT"' in html


def test_it_shows_bad_filters_as_form_errors(rita_client):
    response = rita_client.get("/proposals/?verdict=MAYBE&from=2026-13-01")
    assert response.status_code == 400
    html = response.content.decode()
    assert "Select a valid choice" in html
    assert "Enter a date as YYYY-MM-DD." in html


def test_it_paginates_the_list(rita_client, many):
    many(30)
    first = rita_client.get("/proposals/")
    assert len(first.context["page"]) == 25
    assert 'href="?page=2"' in first.content.decode()
    second = rita_client.get("/proposals/?page=2")
    assert len(second.context["page"]) == 5


@pytest.mark.parametrize("n", [3, 30])
def test_it_lists_in_a_constant_number_of_queries(rita_client, many, django_assert_num_queries, n):
    many(n)
    # session, user, permissions (their own and their groups'), verdict counts, paginator
    # count, page
    with django_assert_num_queries(6):
        response = rita_client.get("/proposals/?provider=p0")
    assert response.status_code == 200


# --- the detail page -----------------------------------------------------------------------


def test_it_shows_declared_versus_actual_findings_and_the_graph(rita_client, stored):
    validation = stored("REJECT")
    response = rita_client.get(f"/proposals/{validation.pk}/")
    html = response.content.decode()
    assert "true: a change" in html  # declared
    assert "differs from the declaration" in html  # declared true, no meaningful change
    assert "V1: declared true but no meaningful change" in html
    assert "contract.V1_declared_true_no_change" in html
    assert "/update/answerMeaning/structuralActionRequired" in html
    assert "unresolved unknown" in html and "resolved unknown" in html
    assert "The smaller office saves money" in html
    assert "qualifies" in html  # an edge
    assert "&quot;structuralActionRequired&quot;: true" in html  # the formatted JSON


def test_it_marks_nodes_the_proposal_touches(rita_client, stored):
    validation = stored("PASS")  # resolves u3
    rows = rita_client.get(f"/proposals/{validation.pk}/").context["node_rows"]
    touched = {row["id"]: row["touched"] for row in rows}
    assert touched["u3"] == ["resolved"]
    assert touched["c1"] == []


def test_it_shows_a_proposal_whose_graph_is_not_a_graph(rita_client):
    validation = proposal_validate_and_store(
        graph={"nodes": "many", "edges": [1, {"source": "a"}]},
        update=None,
        source=None,
        actor=SYSTEM,
    )
    response = rita_client.get(f"/proposals/{validation.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "is not a list" in html
    assert "not an edge object" in html
    assert "unknown (schema failed)" in html


@pytest.mark.parametrize("n", [3, 30])
def test_it_shows_the_detail_in_a_constant_number_of_queries(
    rita_client, rita, alice, stored, django_assert_num_queries, n
):
    from django.contrib.auth.models import User

    from beliefs.roles import grant_role

    validation = stored("REJECT")
    for i in range(n):
        reviewer = User.objects.create(username=f"reviewer{i}")
        grant_role(reviewer, "reviewers")
        proposal_annotate(validation=validation, reviewer=reviewer, agreement="agree")
    # session, user, permissions (their own and their groups'), validation, findings,
    # annotations, the next validation rita has not reviewed
    with django_assert_num_queries(7):
        response = rita_client.get(f"/proposals/{validation.pk}/")
    assert len(response.context["others"]) == n


# --- annotation ----------------------------------------------------------------------------


def test_it_saves_an_annotation_with_htmx(rita_client, rita, stored):
    validation = stored("REJECT")
    response = rita_client.post(
        annotate_url(validation),
        {"agreement": "disagree", "note": "The model did declare a change"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="annotation"' in html and "<html" not in html
    assert "Saved: you disagree with the verdict REJECT." in html
    annotation = ProposalAnnotation.objects.get()
    assert (annotation.reviewer, annotation.agreement) == (rita, "disagree")
    assert annotation.note == "The model did declare a change"
    event = AuditEvent.objects.get(kind="proposal.annotated")
    assert event.actor == "rita"
    assert event.data["agreement"] == "disagree"


def test_it_saves_an_annotation_without_javascript(rita_client, stored):
    validation = stored("REJECT")
    response = rita_client.post(annotate_url(validation), {"agreement": "agree", "note": ""})
    assert response.status_code == 302
    assert response["Location"] == f"/proposals/{validation.pk}/#annotation"
    page = rita_client.get(response["Location"])
    html = page.content.decode()
    assert "Your review is saved." in html
    assert 'value="agree" id="id_agreement_0" required checked' in html
    assert ProposalAnnotation.objects.get().agreement == "agree"


def test_it_updates_a_reviewers_annotation_instead_of_adding_one(rita_client, rita, stored):
    validation = stored("REJECT")
    rita_client.post(annotate_url(validation), {"agreement": "agree"})
    rita_client.post(annotate_url(validation), {"agreement": "disagree", "note": "second look"})
    annotation = ProposalAnnotation.objects.get()
    assert (annotation.agreement, annotation.note) == ("disagree", "second look")
    events = AuditEvent.objects.filter(kind="proposal.annotated").order_by("id")
    assert [e.data["previous"] for e in events] == [None, "agree"]


@pytest.mark.parametrize("agreement", ["", "maybe", "AGREE"])
def test_it_refuses_an_invalid_agreement_with_htmx(rita_client, stored, agreement):
    validation = stored("REJECT")
    response = rita_client.post(
        annotate_url(validation), {"agreement": agreement}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "Choose agree or disagree." in html
    assert 'id="annotation"' in html and "<html" not in html
    assert not ProposalAnnotation.objects.exists()


def test_it_refuses_an_invalid_agreement_without_javascript(rita_client, stored):
    validation = stored("REJECT")
    response = rita_client.post(annotate_url(validation), {"agreement": "maybe", "note": "x"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "<html" in html and "Choose agree or disagree." in html
    assert ">\nx</textarea>" in html  # what was typed is kept
    assert not ProposalAnnotation.objects.exists()


def test_it_refuses_a_note_that_is_too_long(rita_client, stored):
    validation = stored("REJECT")
    response = rita_client.post(
        annotate_url(validation), {"agreement": "agree", "note": "n" * 2001}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 400
    assert "at most 2000 characters" in response.content.decode()
    assert not ProposalAnnotation.objects.exists()


def test_it_shows_other_reviewers_annotations(rita_client, stored):
    from tests.conftest import make_user

    validation = stored("REJECT")
    other = make_user("rob", "reviewers")
    proposal_annotate(validation=validation, reviewer=other, agreement="disagree", note="hmm")
    html = rita_client.get(f"/proposals/{validation.pk}/").content.decode()
    assert "<strong>rob</strong> disagrees" in html


def test_it_refuses_an_annotation_by_someone_who_is_not_a_reviewer(alice, stored):
    from beliefs.errors import PermissionDenied

    with pytest.raises(PermissionDenied):
        proposal_annotate(validation=stored("REJECT"), reviewer=alice, agreement="agree")


# --- export --------------------------------------------------------------------------------


def export_rows(client, query: str = "") -> list[list[str]]:
    response = client.get(f"/proposals/export.csv{query}")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith("attachment;")
    text = b"".join(response.streaming_content).decode()
    return list(csv.reader(io.StringIO(text)))


def test_it_exports_the_filtered_list_as_csv(rita_client, rita, stored):
    stored("PASS", provider="acme", model="m1", run="r1")
    rejected = stored("REJECT", provider="acme", model="m1", run="r2")
    stored("REJECT", provider="other")
    proposal_annotate(validation=rejected, reviewer=rita, agreement="disagree")
    rows = export_rows(rita_client, "?provider=acme&verdict=REJECT")
    header, *body = rows
    assert header[:3] == ["id", "created_at", "verdict"]
    assert len(body) == 1
    row = dict(zip(header, body[0], strict=True))
    assert row["id"] == str(rejected.pk)
    assert row["verdict"] == "REJECT"
    assert row["decided_by"] == "V1"
    assert row["declared"] == "true"
    assert row["meaningful_change"] == "false"
    assert row["error_codes"] == "contract.V1_declared_true_no_change"
    assert (row["provider"], row["model"], row["run"]) == ("acme", "m1", "r2")
    assert (row["agree"], row["disagree"]) == ("0", "1")


@pytest.mark.parametrize("start", ["=", "+", "-", "@"])
def test_it_neutralises_formulas_in_the_csv(rita_client, start):
    formula = f'{start}HYPERLINK("http://evil.example","x")'
    proposal_validate_and_store(
        graph=graph(),
        update=passing_update(),
        source={"provider": formula, "model": f"{start}1+1", "run": "plain"},
        actor=SYSTEM,
    )
    header, row = export_rows(rita_client)
    cells = dict(zip(header, row, strict=True))
    assert cells["provider"] == "'" + formula
    assert cells["model"] == f"'{start}1+1"
    assert cells["run"] == "plain"


@pytest.mark.parametrize("n", [3, 30])
def test_it_exports_in_a_constant_number_of_queries(rita_client, many, n):
    many(n)
    with CaptureQueriesContext(connection) as queries:
        response = rita_client.get("/proposals/export.csv")
        rows = b"".join(response.streaming_content).decode().splitlines()
    assert len(rows) == n + 1
    # session, user, permissions (their own and their groups'), the rows
    assert len(queries) == 4, [q["sql"] for q in queries]


def test_it_refuses_to_export_with_bad_filters(rita_client):
    response = rita_client.get("/proposals/export.csv?to=tomorrow")
    assert response.status_code == 400
    assert "Enter a date as YYYY-MM-DD." in response.content.decode()


# --- statistics ----------------------------------------------------------------------------


def test_it_charts_verdicts_per_day_codes_and_disagreement(rita_client, rita, stored):
    from tests.conftest import make_user

    stored("PASS")
    rejected = stored("REJECT")
    stored("REJECT")
    stored("ACCEPT")
    proposal_annotate(validation=rejected, reviewer=rita, agreement="disagree")
    other = make_user("rob", "reviewers")
    proposal_annotate(validation=rejected, reviewer=other, agreement="agree")
    response = rita_client.get("/proposals/stats/")
    assert response.status_code == 200
    context = response.context
    assert len(context["days"]) == 30
    assert context["days"][-1].counts == {"PASS": 1, "ACCEPT": 1, "REJECT": 2}
    assert context["totals"] == {"PASS": 1, "ACCEPT": 1, "REJECT": 2}
    assert [(c.code, c.findings) for c in context["codes"]] == [
        ("contract.V1_declared_true_no_change", 2),
        ("contract.V2_declared_false_with_change", 1),
    ]
    assert (context["disagreement"].annotations, context["disagreement"].disagreements) == (2, 1)
    html = response.content.decode()
    assert html.count("<svg") == 2
    assert 'role="img"' in html and "<desc" in html  # text alternatives
    assert "style=" not in html  # the CSP forbids inline styles
    assert 'class="bar bar-reject"' in html
    assert "1 of 2" in html and "50 %" in html


def test_it_limits_the_statistics_period(rita_client):
    response = rita_client.get("/proposals/stats/?from=2020-01-01&to=2026-01-01")
    assert response.status_code == 400
    assert "at most 366 days" in response.content.decode()


def test_it_takes_the_statistics_period_from_the_filters(rita_client):
    response = rita_client.get("/proposals/stats/?from=2026-01-01&to=2026-01-07")
    assert len(response.context["days"]) == 7
    assert response.context["days"][0].day.isoformat() == "2026-01-01"


@pytest.mark.parametrize("n", [3, 30])
def test_it_computes_statistics_in_a_constant_number_of_queries(
    rita_client, rita, many, django_assert_num_queries, n
):
    many(n)
    for validation in ProposalValidation.objects.all()[:n:3]:
        proposal_annotate(validation=validation, reviewer=rita, agreement="disagree")
    # session, user, permissions (their own and their groups'), verdicts per day, codes,
    # disagreement
    with django_assert_num_queries(6):
        response = rita_client.get("/proposals/stats/")
    assert response.context["validations"] == n


# --- the review within reach, and the next one ------------------------------------------------


def test_the_review_form_comes_before_the_long_tables_with_a_link_to_it(rita_client, stored):
    validation = stored("REJECT")
    html = rita_client.get(f"/proposals/{validation.pk}/").content.decode()
    assert '<a href="#annotation">Your review</a>' in html
    assert html.index('id="annotation"') < html.index('id="changes-heading"')
    assert html.index('id="annotation"') < html.index('id="proposal-heading"')


def test_it_links_to_the_next_unreviewed_validation(rita_client, rita, stored):
    newest, middle, oldest = stored("REJECT"), stored("ACCEPT"), stored("REJECT")
    newest, middle, oldest = sorted([newest, middle, oldest], key=lambda v: -v.pk)
    proposal_annotate(validation=middle, reviewer=rita, agreement="agree")
    html = rita_client.get(f"/proposals/{newest.pk}/").content.decode()
    # The next older one rita has not reviewed (the middle one is reviewed: skipped).
    assert f'id="next-unreviewed" href="/proposals/{oldest.pk}/"' in html
    # From the oldest, it wraps round to the newest unreviewed.
    html = rita_client.get(f"/proposals/{oldest.pk}/").content.decode()
    assert f'id="next-unreviewed" href="/proposals/{newest.pk}/"' in html
    # Saving a review says where to go next.
    response = rita_client.post(
        f"/proposals/{oldest.pk}/annotation/", {"agreement": "agree", "note": ""}, **HTMX
    )
    assert f'href="/proposals/{newest.pk}/">Next unreviewed' in response.content.decode()
    proposal_annotate(validation=newest, reviewer=rita, agreement="agree")
    html = rita_client.get(f"/proposals/{oldest.pk}/").content.decode()
    assert "you have reviewed every other validation" in html
