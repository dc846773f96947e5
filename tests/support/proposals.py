"""Helpers for the proposal tests: the seed's graph and a few proposals with known verdicts."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from beliefs.models import ProposalValidation
from beliefs.services.audit import SYSTEM
from beliefs.services.proposals import proposal_validate_and_store
from demo.proposals import GRAPH, MEANING

VALIDATE_URL = "/api/v1/proposals/validate/"
LIST_URL = "/api/v1/proposals/"
SCHEMA_URL = "/api/v1/proposals/contract-schema/"


def graph() -> dict[str, Any]:
    return copy.deepcopy(GRAPH)


def passing_update() -> dict[str, Any]:
    """Declared true and resolves u3: PASS with no findings."""
    return {
        "answerMeaning": {"userSupportedMeaning": MEANING, "structuralActionRequired": True},
        "resolvedUnknownNodeIds": ["u3"],
    }


def v1_update() -> dict[str, Any]:
    """Declared true and changes nothing: REJECT by V1."""
    return {"answerMeaning": {"userSupportedMeaning": MEANING, "structuralActionRequired": True}}


def v2_update() -> dict[str, Any]:
    """Declared false and resolves u3: ACCEPT with the V2 warning."""
    return {
        "answerMeaning": {"userSupportedMeaning": MEANING, "structuralActionRequired": False},
        "resolvedUnknownNodeIds": ["u3"],
    }


UPDATES = {"PASS": passing_update, "REJECT": v1_update, "ACCEPT": v2_update}


@pytest.fixture
def stored(db: None) -> Callable[..., ProposalValidation]:
    """Store a validation directly through the service: `stored("REJECT", provider="p")`."""

    def make(verdict: str = "REJECT", **source: str) -> ProposalValidation:
        return proposal_validate_and_store(
            graph=graph(), update=UPDATES[verdict](), source=source, actor=SYSTEM
        )

    return make


@pytest.fixture
def many(stored: Callable[..., ProposalValidation]) -> Callable[[int], None]:
    """`many(n)`: n validations cycling through the three verdicts and two providers."""

    def make(n: int) -> None:
        verdicts = ["PASS", "ACCEPT", "REJECT"]
        for i in range(n):
            stored(verdicts[i % 3], provider=f"p{i % 2}", model="m", run=f"run-{i}")

    return make
