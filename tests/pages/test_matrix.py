"""The routing matrix page agrees with `beliefs.domain.policy` cell by cell."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.domain.policy import routing_matrix


class MatrixRows(HTMLParser):
    """Collects the text of every cell of every `tr.matrix-cell`, by the cell's class."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, str]] = []
        self._cell: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "tr" and "matrix-cell" in classes:
            self.rows.append({})
        elif tag == "td" and self.rows:
            self._cell = next(c for c in classes if c.startswith("m-"))
            self.rows[-1][self._cell] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self.rows[-1][self._cell] += data

    def parsed(self) -> list[dict[str, str]]:
        return [{k: " ".join(v.split()) for k, v in row.items()} for row in self.rows]


@pytest.mark.django_db
def test_it_renders_every_cell_of_the_routing_policy(client: Client, carol: User) -> None:
    client.force_login(carol)
    response = client.get("/classify/matrix/")
    assert response.status_code == 200
    parser = MatrixRows()
    parser.feed(response.content.decode())
    rows = parser.parsed()

    cells = routing_matrix()
    assert len(rows) == len(cells) > 0
    for row, cell in zip(rows, cells, strict=True):
        assert row["m-risk"] == cell.risk.value
        assert row["m-monotonic"] == ("yes" if cell.monotonic else "no")
        if cell.any_belief:
            assert (row["m-source"], row["m-carried"]) == ("any", "either")
            assert row["m-condition"] == (
                "meaning expired"
                if cell.expired
                else "a date before today in a slot that takes only dates from today on"
            )
        elif cell.source is None:
            assert (row["m-source"], row["m-carried"], row["m-world"]) == ("no belief", "—", "—")
        else:
            assert row["m-source"] == cell.source.value
            assert row["m-carried"] == ("carried" if cell.carried else "current")
            assert row["m-world"] == ("present" if cell.has_world_ref else "none")
            if cell.person_required:
                given = "given there" if cell.in_console else "reported by the runtime"
                assert row["m-condition"] == f"the person confirms in the console; {given}"
            else:
                assert row["m-condition"] == "—"
        assert row["m-route"] == cell.routing.route.value
        assert row["m-rule"] == cell.routing.rule.value
        assert row["m-reason"] == cell.routing.reason


@pytest.mark.django_db
def test_it_covers_every_rule_and_route(client: Client, carol: User) -> None:
    client.force_login(carol)
    parser = MatrixRows()
    parser.feed(client.get("/classify/matrix/").content.decode())
    rows = parser.parsed()
    assert {r["m-rule"] for r in rows} == {f"R{i}" for i in range(11)}
    assert {r["m-route"] for r in rows} == {"SILENT", "SURFACED", "CONFIRM", "ASK"}


def _rows(client: Client, query: dict[str, str]) -> list[dict[str, str]]:
    parser = MatrixRows()
    parser.feed(client.get("/classify/matrix/", query).content.decode())
    return parser.parsed()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "column", "expected"),
    [
        ({"risk": "irreversible"}, "m-risk", {"irreversible"}),
        ({"route": "CONFIRM"}, "m-route", {"CONFIRM"}),
        # The rows for any belief (an expired meaning, a past date) apply to every source.
        ({"source": "tool"}, "m-source", {"tool", "any"}),
        ({"source": "none"}, "m-source", {"no belief"}),
        ({"carried": "carried"}, "m-carried", {"carried", "either"}),
    ],
)
def test_its_filters_show_only_the_matching_combinations(
    client: Client, carol: User, query: dict[str, str], column: str, expected: set[str]
) -> None:
    client.force_login(carol)
    rows = _rows(client, query)
    assert 0 < len(rows) < len(routing_matrix())
    assert {row[column] for row in rows} == expected
    html = client.get("/classify/matrix/", query).content.decode()
    assert f"{len(rows)} of {len(routing_matrix())} combinations match." in html


@pytest.mark.django_db
def test_filters_combine_and_say_when_nothing_matches(client: Client, carol: User) -> None:
    client.force_login(carol)
    rows = _rows(client, {"risk": "irreversible", "source": "tool", "carried": "carried"})
    assert {(r["m-risk"], r["m-source"], r["m-carried"]) for r in rows} == {
        ("irreversible", "tool", "carried"),
        ("irreversible", "any", "either"),
    }
    query = {"risk": "cosmetic", "route": "CONFIRM", "source": "user"}
    html = client.get("/classify/matrix/", query)
    assert "No combination matches." in html.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["bogus", "<script>", ""])
def test_a_filter_value_that_is_no_choice_filters_nothing(
    client: Client, carol: User, value: str
) -> None:
    client.force_login(carol)
    response = client.get("/classify/matrix/", {"risk": value, "route": value})
    assert response.status_code == 200
    assert len(_rows(client, {"risk": value})) == len(routing_matrix())
    assert "<script>" not in response.content.decode()
