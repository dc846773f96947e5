"""Fixtures for the end-user page tests: alice's vendor payment waiting for her, and clients."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.models import TaskInstance
from tests.browser import scenarios


@pytest.fixture
def vendor(alice: User) -> TaskInstance:
    """Run 2 of alice's vendor payment: 2 CONFIRM cards, 1 ASK (monotonic), 2 assumptions."""
    return scenarios.vendor(alice)


@pytest.fixture
def alice_client(alice: User, signed_in: Callable[[User], Client]) -> Client:
    return signed_in(alice)


@pytest.fixture
def mallory_client(mallory: User, signed_in: Callable[[User], Client]) -> Client:
    return signed_in(mallory)


HTMX = {"HTTP_HX_REQUEST": "true"}


def marked(code: str) -> str:
    """How a page shows a revealed hidden character, e.g. marked("U+202E")."""
    return f'<span class="hidden-char" title="hidden character {code}">⟨{code}⟩</span>'
