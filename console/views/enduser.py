"""The end user's pages: the inbox, an instance with its cards, and the card endpoint.

Views parse, fetch through the principal check (outsiders get 404), call one service and render.
Each swap target is one `_name.html` partial that the full page includes and the endpoint
renders alone; the card presenters below give both the same context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.db.models import Min, Prefetch, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from beliefs import selectors, services
from beliefs.domain.policy import RiskClass, Route
from beliefs.errors import Conflict, InvalidInput, NotFound
from beliefs.models import Decision, InstanceStatus, Prompt, PromptState, TaskInstance
from console.forms import form_value, parse_response, typed_values
from console.templatetags.reveal import display_text, hidden_characters, plain_text

RECENT_LIMIT = 10
RESTATEMENT_VALUE_LIMIT = 60

DONE_WORDS = {
    "confirm": "Confirmed",
    "edit": "Edited and confirmed",
    "answer": "Answered",
    "reject": "Rejected",
    "veto": "Vetoed",
}


# --- presenters ----------------------------------------------------------------------------


@dataclass
class Card:
    """One prompt as a card (CONFIRM, ASK) or an assumption line (SURFACED).

    `message`, `errors` and `typed` carry a refused answer back into the card; `followup` is the
    question that a veto of this assumption opened, shown right under it.
    """

    prompt: Prompt
    message: str = ""
    status: int = 200
    errors: dict[str, list[str]] = field(default_factory=dict)
    typed: dict[str, str] = field(default_factory=dict)
    followup: Card | None = None
    focus: bool = False

    @property
    def dom_id(self) -> str:
        return f"prompt-{self.prompt.pk}"

    @property
    def slot(self) -> Any:
        return self.prompt.slot

    @property
    def is_open(self) -> bool:
        return self.prompt.state == PromptState.OPEN

    @property
    def is_confirm(self) -> bool:
        return self.prompt.route == Route.CONFIRM

    @property
    def is_ask(self) -> bool:
        return self.prompt.route == Route.ASK

    @property
    def irreversible(self) -> bool:
        return self.prompt.effective_risk == RiskClass.IRREVERSIBLE

    @property
    def confirm_delay_ms(self) -> int:
        return settings.CONSOLE_CONFIRM_DELAY_MS if self.irreversible else 0

    @property
    def belief(self) -> Any:
        return self.prompt.belief

    @property
    def carried(self) -> bool:
        return self.prompt.carried

    @property
    def value(self) -> Any:
        """The value the card is about: pre-filled, bound, or answered."""
        if self.prompt.state == PromptState.ANSWERED:
            return self.prompt.response_value
        return self.prompt.prefill

    @property
    def input_value(self) -> str:
        if "value" in self.typed:
            return self.typed["value"]
        if self.is_confirm and not self.prefill_hidden:
            return form_value(self.prompt.prefill, self.slot.value_type)
        return ""  # an ASK is never pre-filled

    @property
    def prefill_hidden(self) -> bool:
        """A value with hidden characters is not copied into the input, where they would act
        (reorder, hide) again: it is shown revealed, and a correction is typed afresh."""
        return self.is_confirm and bool(hidden_characters(self.prompt.prefill))

    @property
    def input_is_multiline(self) -> bool:
        return isinstance(self.prompt.prefill, dict | list) or "\n" in self.input_value

    @property
    def ask_again(self) -> bool:
        """The escalation of a monotonic scope must be typed a second time."""
        return "value_confirmation" in self.errors

    @cached_property
    def diff(self) -> list[dict[str, Any]]:
        return self.prompt.world_diff or []

    @cached_property
    def changed_keys(self) -> list[str]:
        return [e["key"] for e in self.diff if e.get("change") != "unchanged"]

    @cached_property
    def hidden(self) -> list[str]:
        """Hidden characters anywhere a person reads on this card."""
        p = self.prompt
        return hidden_characters(
            [
                p.slot.label,
                p.prefill,
                p.context_value,
                p.response_value,
                p.world_ref,
                p.world_now,
                [[e.get("key"), e.get("old"), e.get("new")] for e in self.diff],
            ]
        )

    @property
    def done_word(self) -> str:
        if self.prompt.state in (PromptState.ANSWERED, PromptState.REJECTED, PromptState.VETOED):
            return DONE_WORDS.get(self.prompt.action, self.prompt.state.capitalize())
        return str(self.prompt.state).capitalize()

    @property
    def choices(self) -> list[Any]:
        return self.slot.scope_order or self.slot.choices or []

    @property
    def has_help(self) -> bool:
        """Does the value input need a line of help (format, choices, typing rules)?"""
        return bool(
            self.prefill_hidden
            or self.choices
            or self.slot.monotonic
            or self.slot.value_type in ("boolean", "date")
        )


def _cards_for(
    prompts: list[Prompt], overrides: dict[int, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Split an instance's prompts into assumption lines and cards, in slot order.

    A question opened by a veto is shown under the vetoed assumption, where the veto was made,
    both when the page is rendered and when the veto's answer is swapped in.
    """
    overrides = overrides or {}

    def card(prompt: Prompt) -> Card:
        return Card(prompt, **overrides.get(prompt.pk, {}))

    shown = [p for p in prompts if p.state != PromptState.SUPERSEDED]
    assumptions: list[Card] = []
    followup_ids: set[int] = set()
    for prompt in shown:
        if prompt.route != Route.SURFACED:
            continue
        line = card(prompt)
        if prompt.state == PromptState.VETOED:
            after = [
                p
                for p in shown
                if p.slot_id == prompt.slot_id and p.pk > prompt.pk and p.route != Route.SURFACED
            ]
            if after:
                line.followup = card(after[-1])
                followup_ids.add(after[-1].pk)
        assumptions.append(line)
    cards = [card(p) for p in shown if p.route != Route.SURFACED and p.pk not in followup_ids]
    return {"assumptions": assumptions, "cards": cards}


@dataclass(frozen=True)
class Part:
    """One slot in the restatement; label and text are untrusted, shown with `|shown`."""

    label: str
    text: str
    pending: bool
    flagged: bool


@dataclass(frozen=True)
class Sentence:
    action: str
    parts: list[Part]


def restatement(instance: TaskInstance, decisions: list[Decision]) -> list[Sentence]:
    """The action in plain words, one sentence per decision: "Send transfer: amount 250, …".

    Values come from the last plan (or the final bindings): what would bind if the person
    agreed now. Slots that feed no decision close with "Also: …".
    """
    items = {item["slot"]: item for item in instance.plan_items or []}
    bindings = instance.bindings if instance.status == InstanceStatus.READY else None

    def part(key: str) -> Part:
        item = items[key]
        value = bindings[key] if bindings and key in bindings else item.get("value")
        pending = value is None and item.get("route") == Route.ASK
        text = "" if pending else plain_text(value, compact=True)
        if len(text) > RESTATEMENT_VALUE_LIMIT:
            text = text[: RESTATEMENT_VALUE_LIMIT - 1] + "…"
        flagged = bool(hidden_characters([item.get("label"), value]))
        return Part(item.get("label") or key, text, pending, flagged)

    sentences = []
    fed: set[str] = set()
    for decision in decisions:
        feeds = {slot.key for slot in decision.slots.all()}
        keys = [k for k in items if k in feeds]
        fed.update(keys)
        sentences.append(Sentence(decision.label, [part(k) for k in keys]))
    rest = [k for k in items if k not in fed]
    if rest:
        action = "Also" if sentences else instance.task_class.name
        sentences.append(Sentence(action, [part(k) for k in rest]))
    return sentences


def banner_context(instance: TaskInstance, cards: list[Card]) -> dict[str, Any]:
    open_blocking = [c for c in cards if c.is_open and c.prompt.blocking]
    labels = {item["slot"]: item.get("label") or item["slot"] for item in instance.plan_items}
    bindings = [
        {"key": key, "label": labels.get(key, key), "value": value}
        for key, value in (instance.bindings or {}).items()
    ]
    return {
        "instance": instance,
        "blocking_count": len(open_blocking),
        "bindings": bindings,
        "bindings_flagged": bool(hidden_characters(instance.bindings or {})),
    }


def _all_cards(groups: dict[str, Any]) -> list[Card]:
    flat = []
    for line in groups["assumptions"]:
        flat.append(line)
        if line.followup is not None:
            flat.append(line.followup)
    return flat + groups["cards"]


# --- fetching with the principal check -----------------------------------------------------


def _instance_or_404(request: HttpRequest, instance_id: UUID) -> TaskInstance:
    try:
        return services.instance_for_principal(instance_id, request.user)
    except NotFound:
        raise Http404("No such instance.") from None


def _decisions(instance: TaskInstance) -> list[Decision]:
    return list(
        Decision.objects.filter(task_class_id=instance.task_class_id)
        .prefetch_related("slots")
        .order_by("id")
    )


def _instance_context(
    request: HttpRequest,
    instance: TaskInstance,
    overrides: dict[int, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    prompts = selectors.instance_prompts(instance)
    services.prompts_mark_shown(prompts=prompts, user=request.user)
    groups = _cards_for(prompts, overrides)
    all_cards = _all_cards(groups)
    return {
        "instance": instance,
        "sentences": restatement(instance, _decisions(instance)),
        **groups,
        **banner_context(instance, all_cards),
    }


# --- the inbox -----------------------------------------------------------------------------


def _inbox_context(request: HttpRequest) -> dict[str, Any]:
    now = timezone.now()
    decisions = Prefetch("task_class__decisions", queryset=Decision.objects.order_by("id"))
    waiting = (
        selectors.inbox_instances(request.user)
        .annotate(
            next_expiry=Min(
                "prompts__expires_at",
                filter=Q(prompts__state=PromptState.OPEN, prompts__blocking=True),
            )
        )
        # Past its TTL it no longer waits for anyone; opening it shows it expired.
        .filter(Q(next_expiry__isnull=True) | Q(next_expiry__gt=now))
        .prefetch_related(decisions)
    )
    recent = (
        TaskInstance.objects.filter(
            principal=request.user,
            status__in=[InstanceStatus.READY, InstanceStatus.CANCELLED, InstanceStatus.EXPIRED],
        )
        .select_related("task_class")
        .order_by("-updated_at")[:RECENT_LIMIT]
    )
    return {"waiting": list(waiting), "recent": list(recent), "now": now}


@require_GET
def inbox(request: HttpRequest) -> HttpResponse:
    return render(request, "console/inbox.html", _inbox_context(request))


@require_GET
def inbox_rows(request: HttpRequest) -> HttpResponse:
    """The inbox list alone: htmx polls it so the inbox stays current without a reload."""
    return render(request, "console/_inbox_rows.html", _inbox_context(request))


# --- an instance and its cards -------------------------------------------------------------


@require_GET
def instance_detail(request: HttpRequest, instance_id: UUID) -> HttpResponse:
    instance = _instance_or_404(request, instance_id)
    return render(request, "console/instance.html", _instance_context(request, instance))


@require_POST
def prompt_respond(request: HttpRequest, instance_id: UUID, prompt_id: int) -> HttpResponse:
    """One card's answer. htmx gets the card back (plus the banner and restatement out of band);
    a plain form post is redirected back to the page, or re-shown with the message on a 4xx."""
    instance = _instance_or_404(request, instance_id)
    prompt = Prompt.objects.filter(pk=prompt_id, instance=instance).select_related("slot").first()
    if prompt is None:
        raise Http404("No such prompt.")

    status, message, errors = 200, "", {}
    typed = typed_values(request.POST)
    try:
        answer = parse_response(request.POST, prompt)
        services.prompt_respond(
            prompt_id=prompt.pk,
            user=request.user,
            action=answer.action,
            version=answer.version,
            value=answer.value,
            value_confirmation=answer.value_confirmation,
            reason=answer.reason,
        )
    except InvalidInput as exc:
        status, message, errors = 400, _invalid_message(exc, typed), exc.fields
    except Conflict as exc:
        status, message = 409, exc.detail
    except NotFound:
        raise Http404("No such prompt.") from None

    instance.refresh_from_db()
    if status == 200 and not request.htmx:
        done = DONE_WORDS[answer.action].lower()
        messages.success(request, f"{display_text(prompt.slot.label)}: {done}.")
        return redirect(reverse("instance", args=[instance.pk]) + f"#prompt-{prompt.pk}")

    # A 409 shows the fresh card: nothing typed is kept, since it answered something else.
    override = {
        "message": message,
        "status": status,
        "errors": errors,
        "typed": typed if status == 400 else {},
        "focus": True,
    }
    context = _instance_context(request, instance, overrides={prompt.pk: override})
    if not request.htmx:
        return render(request, "console/instance.html", context, status=status)
    context.update(_swap_context(instance, prompt, context, override, status))
    return render(request, "console/_respond.html", context, status=status)


def _swap_context(
    instance: TaskInstance,
    prompt: Prompt,
    context: dict[str, Any],
    override: dict[str, Any],
    status: int,
) -> dict[str, Any]:
    """The card htmx swaps in, and the other cards to swap out of band."""
    target = next((c for c in _all_cards(context) if c.prompt.pk == prompt.pk), None)
    if target is None:  # no longer listed (a re-plan superseded it): show it alone, closed
        fresh = Prompt.objects.select_related("slot", "belief__instance").get(pk=prompt.pk)
        target = Card(fresh, **override)
    if target.followup is not None and status == 200:
        # A veto's answer: the keyboard goes on to the question it opened.
        target.focus = False
        target.followup.focus = True
    others: list[Card] = []
    if instance.status in (InstanceStatus.CANCELLED, InstanceStatus.EXPIRED):
        # A closed instance closes every card: show that on all of them.
        others = [
            c
            for c in context["assumptions"] + context["cards"]
            if c is not target and c.followup is not target
        ]
    return {"target": target, "others": others}


def _invalid_message(exc: InvalidInput, typed: dict[str, str]) -> str:
    if "value_confirmation" in exc.fields and typed.get("value_confirmation", "").strip():
        return "The two values do not match. " + exc.fields["value_confirmation"][0]
    if "value_confirmation" in exc.fields:
        return exc.fields["value_confirmation"][0] + "."
    return exc.detail
