"""Who vouched for each bound value, and the world it was bound with: what a receipt says
beyond the values themselves.

Pure Python over a plan's items (the dicts planning writes, `planning.plan_item`): no Django.
A tool server must be able to tell "the person confirmed this in the console" from "the
runtime says the person said so"; these functions say which, per slot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from beliefs.domain.canonical import worlds_digest
from beliefs.domain.policy import RiskClass, Route, Rule

Item = Mapping[str, Any]


class Via(StrEnum):
    """Who vouched for a bound value."""

    CONSOLE = "console"  # the person answered, confirmed or edited it in the console
    RUNTIME = "runtime"  # bound on the runtime's report alone (even of a `user` source)
    POLICY = "policy"  # cosmetic: bound by policy, nobody needed to vouch


BOUND_ROUTES = frozenset({Route.SILENT, Route.SURFACED})


def via_of(item: Item) -> Via:
    """Who vouched for one plan item's value."""
    if item.get("rule") == Rule.COSMETIC:
        return Via.POLICY
    belief = item.get("belief") or {}
    if belief.get("recorded_via") == Via.CONSOLE:
        return Via.CONSOLE
    return Via.RUNTIME


def _bound(items: Iterable[Item]) -> list[Item]:
    return [item for item in items if item.get("route") in BOUND_ROUTES]


def bound_claims(items: Iterable[Item]) -> dict[str, dict[str, Any]]:
    """Per bound slot: its route, rule, source and who vouched for it (`via`)."""
    claims = {}
    for item in _bound(items):
        belief = item.get("belief") or {}
        claims[str(item["slot"])] = {
            "route": str(item["route"]),
            "rule": str(item["rule"]),
            "source": belief.get("source"),
            "via": via_of(item).value,
        }
    return claims


def is_irreversible(item: Item) -> bool:
    return item.get("effective_risk") == RiskClass.IRREVERSIBLE


def vouched_by_runtime(items: Iterable[Item]) -> list[str]:
    """The irreversible slots bound on a runtime's report alone, in plan order: no person
    confirmed them in the console."""
    return [
        str(item["slot"])
        for item in _bound(items)
        if is_irreversible(item) and via_of(item) is Via.RUNTIME
    ]


def bound_worlds(items: Iterable[Item]) -> dict[str, Any]:
    """`{slot: world_ref}` over the bound irreversible slots (a null reference included): the
    world each irreversible value was bound with."""
    return {
        str(item["slot"]): (item.get("belief") or {}).get("world_ref")
        for item in _bound(items)
        if is_irreversible(item)
    }


def items_worlds_digest(items: Iterable[Item]) -> str:
    """`worlds_digest` of the plan's bound irreversible slots."""
    return worlds_digest(bound_worlds(items))
