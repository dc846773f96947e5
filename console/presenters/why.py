"""Why a card asks the person, in one sentence: the words of each routing rule."""

from __future__ import annotations

from typing import assert_never

from beliefs.domain.policy import Rule
from beliefs.models import Prompt


def why_asked(prompt: Prompt, provenance: str, *, after_veto: bool = False) -> str:
    """Why the person is asked about `prompt`, in one sentence; `provenance` says who put an
    earlier value on record (`Card.provenance`)."""
    if after_veto:
        return "You vetoed the earlier value, so the agent needs the right one from you."
    match Rule(prompt.rule):
        case Rule.NO_BELIEF:
            return "The agent has no value for this yet."
        case Rule.MONOTONIC_TYPED_AFRESH:
            return (
                "This sets a permission level, so you type it yourself: an earlier value is "
                "never filled in for you."
            )
        case Rule.IRREVERSIBLE_NOT_FROM_USER:
            return f"This value is not from you: in this attempt {provenance}."
        case Rule.CARRIED_UNANCHORED:
            return (
                f"There is a value from an earlier attempt ({provenance}), but nothing "
                "records what it referred to then, so you are asked afresh."
            )
        case Rule.CARRIED_ANCHORED:
            return (
                f"This value is from an earlier attempt: {provenance}. Check that it "
                "still holds: things may have changed since."
            )
        case Rule.MEANING_EXPIRED:
            until = (
                prompt.world_ref.get("valid_until") if isinstance(prompt.world_ref, dict) else None
            )
            when = f" on {until}" if isinstance(until, str) else ""
            return (
                f"What the earlier value referred to expired{when}, so it is not reused: "
                "you are asked afresh."
            )
        case Rule.DATE_IN_PAST:
            return (
                "The date on record has passed, and this takes only today's date or a later "
                "one: you are asked for a new date."
            )
        case Rule.PERSON_MUST_CONFIRM:
            return (
                f"The agent reports this as your answer ({provenance}); this action "
                "needs your own confirmation here before it goes ahead."
            )
        case Rule.COSMETIC | Rule.ANSWERED_THIS_RUN | Rule.ASSUMPTION:
            return "The agent will use this value unless you veto it."
        case _ as unreachable:
            assert_never(unreachable)
