"""The cards of an instance page, in the order the page shows them: each open question with
the line it answers, and what the page as a whole needs to know (`PageFacts`)."""

from __future__ import annotations

from typing import Any

from beliefs.domain.attention import Habit
from beliefs.domain.policy import Route
from beliefs.models import Prompt, PromptState, TaskInstance
from beliefs.selectors.pages import DecisionView
from console.presenters.instance import Card, PageFacts


def _vetoed_after_ready(veto: Prompt, shown: list[Prompt]) -> bool:
    """Was the instance ready when this assumption was vetoed? It was if no blocking prompt
    was still waiting at that moment."""
    when = veto.responded_at
    if when is None:
        return False
    for p in shown:
        if not p.blocking or p.created_at >= when:
            continue
        if p.responded_at is None or p.responded_at > when:
            return False
    return True


def cards_for(
    prompts: list[Prompt],
    facts: PageFacts,
    overrides: dict[int, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Split an instance's prompts into assumption lines and cards, in slot order.

    A question opened by a veto is shown under the vetoed assumption, where the veto was made,
    both when the page is rendered and when the veto's answer is swapped in.
    """
    overrides = overrides or {}

    def card(prompt: Prompt, **extra: Any) -> Card:
        return Card(prompt, facts, **{**extra, **overrides.get(prompt.pk, {})})

    shown = [p for p in prompts if p.state != PromptState.SUPERSEDED]
    assumptions: list[Card] = []
    reported: list[Card] = []
    followup_ids: set[int] = set()
    for prompt in shown:
        if prompt.route not in LINE_ROUTES:
            continue
        line = card(prompt)
        if prompt.state == PromptState.VETOED:
            line.vetoed_after_ready = _vetoed_after_ready(prompt, shown)
            after = [
                p
                for p in shown
                if p.slot_id == prompt.slot_id and p.pk > prompt.pk and p.route not in LINE_ROUTES
            ]
            if after:
                line.followup = card(after[-1], after_veto=True)
                followup_ids.add(after[-1].pk)
        (reported if prompt.route == Route.SILENT else assumptions).append(line)
    cards = [card(p) for p in shown if p.route not in LINE_ROUTES and p.pk not in followup_ids]
    return {"reported": reported, "assumptions": assumptions, "cards": cards}


# The prompts shown as a line with a veto, not as a question: an assumption (SURFACED), and
# an irreversible value bound on the runtime's report of the person's answer (SILENT).
LINE_ROUTES = frozenset({Route.SURFACED, Route.SILENT})


def all_cards(groups: dict[str, Any]) -> list[Card]:
    flat: list[Card] = []
    for line in [*groups.get("reported", []), *groups["assumptions"]]:
        flat.append(line)
        if line.followup is not None:
            flat.append(line.followup)
    cards: list[Card] = groups["cards"]
    return flat + cards


def page_facts(
    instance: TaskInstance,
    decisions: list[DecisionView],
    principal: str,
    habit: Habit | None = None,
) -> PageFacts:
    return PageFacts(
        status=instance.status,
        accepts_veto=instance.accepts_veto,
        principal=principal,
        decision_labels={d.key: d.label for d in decisions},
        habit=habit,
    )
