"""The end user's pages: the inbox, an instance with its cards, and the card endpoint.

Views parse, fetch through the principal check (outsiders get 404), call one service and render.
Each swap target is one `_name.html` partial that the full page includes and the endpoint
renders alone; the presenters in `console.presenters` give both the same context.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.db.models import Prefetch, prefetch_related_objects
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from beliefs import selectors
from beliefs.domain.attention import Habit
from beliefs.errors import Conflict, InvalidInput, NotFound
from beliefs.models import Decision, InstanceStatus, Prompt, PromptState, TaskInstance
from beliefs.selectors import attention
from beliefs.services import responses
from beliefs.services.access import instance_for_principal
from beliefs.services.expiry import expiry_due
from beliefs.services.responses import prompts_mark_shown
from console import live
from console.forms.respond import parse_response, typed_values
from console.http import AuthedHttpRequest
from console.presenters.cards import all_cards, cards_for, page_facts
from console.presenters.inbox import inbox_row
from console.presenters.instance import Card
from console.presenters.outcome import banner_context
from console.presenters.restatement import restatement
from console.presenters.words import DONE_WORDS, field_words
from console.templatetags.reveal import display_text

RECENT_LIMIT = 10
INBOX_PAGE_SIZE = 25
MAX_INBOX_PAGE = 10_000
FIELD_NAMES = {"reason": "Your reason: "}


# --- fetching with the principal check -----------------------------------------------------


def _instance_or_404(request: AuthedHttpRequest, instance_id: UUID) -> TaskInstance:
    try:
        return instance_for_principal(instance_id, request.user)
    except NotFound:
        raise Http404("No such instance.") from None


def _page(request: AuthedHttpRequest, instance_id: UUID) -> selectors.PageRead:
    """The page's read (inside its `live.snapshot()`), after the principal check."""
    read = selectors.instance_page(instance_id, principal_id=request.user.pk)
    if read is None:
        raise Http404("No such instance.")
    return read


def _instance_context(
    request: AuthedHttpRequest,
    read: selectors.PageRead,
    overrides: dict[int, dict[str, Any]] | None = None,
    *,
    live_version: live.Version,
    focus_outcome: bool = False,
) -> dict[str, Any]:
    """What the instance view shows, from the page's read and the version of it
    (`live.page_version`), both of one `live.snapshot()`: the page's version is never newer
    than the page."""
    instance, prompts = read.instance, read.prompts
    live.after_snapshot(
        lambda: prompts_mark_shown(instance=instance, prompts=prompts, user=request.user)
    )
    decisions = selectors.instance_decisions(instance)
    # Only the principal sees the page: the signed-in user is the one who answers.
    facts = page_facts(
        instance, decisions, request.user.get_username(), _habit(instance, prompts, request)
    )
    groups = cards_for(prompts, facts, overrides)
    return {
        "instance": instance,
        "facts": facts,
        "sentences": restatement(instance, decisions),
        **groups,
        **banner_context(instance, all_cards(groups), focus=focus_outcome),
        "live_version": live_version,
        # Once this one is finished, where the person goes next.
        "next_waiting": None
        if instance.status == InstanceStatus.AWAITING_USER
        else selectors.next_waiting(request.user, timezone.now(), instance),
    }


def _habit(
    instance: TaskInstance, prompts: list[Prompt], request: AuthedHttpRequest
) -> Habit | None:
    """The person's habit, read only when an open irreversible confirmation depends on it."""
    if instance.status != InstanceStatus.AWAITING_USER:
        return None
    if not any(p.state == PromptState.OPEN and attention.needs_habit(p) for p in prompts):
        return None
    return attention.habit(request.user.pk)


# --- the inbox -----------------------------------------------------------------------------


def _page_number(raw: str | None) -> int:
    """?page=N as a page number: anything but a whole number from 1 is the first page, and a
    number past MAX_INBOX_PAGE is that page (its offset must stay a number the database takes;
    the list is long past its end by then)."""
    if raw is None or not raw.isascii() or not raw.isdigit():
        return 1
    digits = raw.lstrip("0") or "0"
    if len(digits) > len(str(MAX_INBOX_PAGE)):
        return MAX_INBOX_PAGE
    return min(max(int(digits), 1), MAX_INBOX_PAGE)


def _inbox_context(request: AuthedHttpRequest) -> dict[str, Any]:
    """One page of the waiting instances. One row past the page says whether another page
    follows, so the inbox counts nothing (the count would aggregate every waiting instance's
    prompts); a page past the end says so."""
    now = timezone.now()
    page = _page_number(request.GET.get("page"))
    start = (page - 1) * INBOX_PAGE_SIZE
    decisions = Prefetch(
        "task_class__decisions",
        queryset=Decision.objects.order_by("id").prefetch_related("slots"),
    )
    # Past its TTL an instance no longer waits for anyone; opening it shows it expired.
    waiting = selectors.inbox_instances(request.user, now)
    recent = list(
        TaskInstance.objects.filter(principal=request.user, status__in=InstanceStatus.closed())
        .select_related("task_class", "runtime")
        .order_by("-updated_at")[:RECENT_LIMIT]
    )
    rows = list(waiting[start : start + INBOX_PAGE_SIZE + 1])
    has_next = len(rows) > INBOX_PAGE_SIZE
    # The decisions (what is at stake) of every row of the page, in one pair of queries.
    prefetch_related_objects([*rows[:INBOX_PAGE_SIZE], *recent], decisions)
    first = page == 1
    asked = selectors.approvals_asked_of(request.user, now, INBOX_PAGE_SIZE) if first else []
    page_rows = [inbox_row(i) for i in rows[:INBOX_PAGE_SIZE]]
    context = {
        # Grouped by what each waits for: the person's answers, then their signature.
        "waiting": page_rows,
        "answers": [r for r in page_rows if r.instance.status != InstanceStatus.AWAITING_SIGNATURE],
        "signatures": [
            r for r in page_rows if r.instance.status == InstanceStatus.AWAITING_SIGNATURE
        ],
        # The person's own actions whose answers are in and that wait for others to approve
        # (first page only, like the approvals asked of them).
        "with_approvers": [
            inbox_row(s.instance, s)
            for s in (selectors.awaiting_approvers(request.user, INBOX_PAGE_SIZE) if first else [])
        ],
        # Actions done on a runtime's report of the person's answer: each irreversible value
        # bound so is listed with a veto on its page (first page only).
        "reported": [
            inbox_row(i, reported=n)
            for i, n in (selectors.reported_to(request.user, INBOX_PAGE_SIZE) if first else [])
        ],
        "recent": [inbox_row(i) for i in recent],
        "now": now,
        "page": page,
        "has_next": has_next,
        "past_the_end": page > 1 and not rows,
        # M-of-N approval: what waits for this person's approval (first page only).
        "approvals": [inbox_row(i) for i in asked] if first else [],
        # Counted only where this page does not already say it (one page holds them all).
        "waiting_count": waiting.count() if page > 1 or has_next else len(rows),
    }
    # (Read in the caller's `live.snapshot()`, with the rows it labels.)
    context["live_version"] = live.inbox_version(context, request.user.pk)
    return context


@require_GET
def inbox(request: AuthedHttpRequest) -> HttpResponse:
    with live.snapshot():
        return render(request, "console/inbox.html", _inbox_context(request))


# --- an instance and its cards -------------------------------------------------------------


def settled_page(
    request: AuthedHttpRequest,
    instance_id: UUID,
    show: Callable[[selectors.PageRead], HttpResponse],
) -> HttpResponse:
    """`show` of the page's read, inside its `live.snapshot()`, with the instance's expiry
    settled: the read itself says whether what the instance waits for ran out of time; then it
    expires first (a write, the services' way, rare) and is read again, to be shown expired."""
    with live.snapshot():
        read = _page(request, instance_id)
        if not expiry_due(read.instance, timezone.now(), read.prompts):
            return show(read)
    _instance_or_404(request, instance_id)
    with live.snapshot():
        return show(_page(request, instance_id))


@require_GET
def instance_detail(request: AuthedHttpRequest, instance_id: UUID) -> HttpResponse:
    def show(read: selectors.PageRead) -> HttpResponse:
        context = _instance_context(request, read, live_version=live.page_version(read))
        return render(request, "console/instance.html", context)

    return settled_page(request, instance_id, show)


@require_POST
def prompt_respond(request: AuthedHttpRequest, instance_id: UUID, prompt_id: int) -> HttpResponse:
    """One card's answer. htmx gets the card back (plus the outcome and restatement out of
    band), or the whole instance view when the answer changed the instance's state; a plain
    form post is redirected back to the page, or re-shown with the message on a 4xx."""
    prompt = selectors.prompt_to_answer(instance_id, prompt_id, principal_id=request.user.pk)
    if prompt is None:
        raise Http404("No such prompt.")

    status_before = prompt.instance.status
    status, message, errors = 200, "", {}
    typed = typed_values(request.POST)
    try:
        answer = parse_response(request.POST, prompt)
        result = responses.prompt_respond(
            prompt_id=prompt.pk,
            user=request.user,
            action=answer.action,
            version=answer.version,
            value=answer.value,
            value_confirmation=answer.value_confirmation,
            reason=answer.reason,
            acknowledged=answer.acknowledged,
            typed_tail=answer.typed_tail,
        )
        status_before = result.status_before
        if result.replayed and _reason_dropped(result.prompt, answer.reason):
            # The same veto or rejection was already taken (another tab, a double click) with
            # another reason: nothing was written, and the reason typed here must not vanish.
            status, message = 409, _dropped_reason_message(result.prompt, answer.reason)
    except InvalidInput as exc:
        status, message = 400, _invalid_message(exc, typed)
        errors = {name: field_words(exc, name) for name in exc.fields}
    except Conflict as exc:
        status, message = 409, _conflict_message(exc)
        if typed.get("reason", "").strip():
            message += _NOT_SENT.format(reason=display_text(typed["reason"].strip()))
    except NotFound:
        raise Http404("No such prompt.") from None

    if status == 200 and not request.htmx:
        done = DONE_WORDS[answer.action].lower()
        messages.success(request, f"{display_text(prompt.slot.label)}: {done}.")
        return redirect(reverse("instance", args=[instance_id]) + f"#prompt-{prompt.pk}")
    # The answer's page and its version, read as one: the script shows nothing older after it.
    with live.snapshot():
        read = _page(request, instance_id)
        version = live.page_version(read).at_least(live.requested_since(request))
        answered = (status, message, errors, typed)
        response = _answered(request, read, prompt, version, status_before, answered)
    response["Live-Version"] = str(version.number)
    return response


def _answered(
    request: AuthedHttpRequest,
    read: selectors.PageRead,
    prompt: Prompt,
    version: live.Version,
    status_before: str,
    answered: tuple[int, str, dict[str, Any], dict[str, str]],
) -> HttpResponse:
    """`prompt_respond`'s page after the answer (or its refusal), read in one snapshot."""
    status, message, errors, typed = answered
    instance = read.instance
    # A 409 shows the fresh card: nothing typed is kept, since it answered something else.
    override = {
        "message": message,
        "status": status,
        "errors": errors,
        "typed": typed if status == 400 else {},
        "ticked": tuple(request.POST.getlist("acknowledged")) if status == 400 else (),
        "focus": True,
    }
    finished_now = instance.status != status_before and instance.status in InstanceStatus.closed()
    context = _instance_context(
        request,
        read,
        overrides={prompt.pk: override},
        live_version=version,
        focus_outcome=finished_now,
    )
    if not request.htmx:
        return render(request, "console/instance.html", context, status=status)
    target = _focus(context, prompt, status, finished_now)
    ended = instance.status in InstanceStatus.closed() and not instance.accepts_veto
    if instance.status != status_before or ended:
        # The whole view changes: the outcome at the top, the headings, and forms that can no
        # longer apply (or, after a veto of a ready action, can again).
        response = render(request, "console/_instance_view.html", context, status=status)
        response["HX-Retarget"] = "#instance-view"
        response["HX-Reswap"] = "outerHTML"
        return response
    context["target"] = target
    return render(request, "console/_respond.html", context, status=status)


def _focus(context: dict[str, Any], prompt: Prompt, status: int, finished_now: bool) -> Card:
    """The card the answer concerns, with the keyboard focus where the person goes next: the
    outcome when the action just finished, the question a veto opened, else the card itself."""
    target = next((c for c in all_cards(context) if c.prompt.pk == prompt.pk), None)
    if target is None:  # no longer listed (a re-plan superseded it): show it alone, closed
        fresh = Prompt.objects.select_related("slot", "belief__instance__runtime").get(pk=prompt.pk)
        target = Card(fresh, context["facts"], status=status, focus=True)
    if finished_now and status == 200:
        target.focus = False
    elif target.followup is not None and status == 200:
        target.focus = False
        target.followup.focus = True
    return target


CONFLICT_WORDS = {
    "instance_ready": "This action was already cleared to go ahead, so this was not recorded.",
    "instance_cancelled": "This action was cancelled, so nothing was recorded.",
    "instance_expired": "This action expired, so nothing was recorded.",
    # The service's `prompt_<state>`: the prompt was settled before this answer arrived.
    **{
        f"prompt_{state}": f"This question is no longer open (it is {state}); nothing was recorded."
        for state in PromptState
        if state != PromptState.OPEN
    },
    # Settled with its instance: say what happened to the action.
    "prompt_cancelled": "This question is no longer open: the action was cancelled, so nothing "
    "was recorded.",
    "prompt_expired": "This question is no longer open: it waited too long and the action "
    "expired, so nothing was recorded.",
}


_NOT_SENT = " Your reason was not sent either: “{reason}”."


def _reason_dropped(prompt: Prompt, reason: str) -> bool:
    return bool(reason.strip()) and reason.strip() != (prompt.response_reason or "").strip()


def _dropped_reason_message(prompt: Prompt, reason: str) -> str:
    """A veto or rejection refused because the same one was already taken, with its reason."""
    done, act = ("vetoed", "veto") if prompt.action == "veto" else ("rejected", "rejection")
    said = (prompt.response_reason or "").strip()
    earlier = f" with the reason “{display_text(said)}”" if said else " without a reason"
    return (
        f"This was already {done}{earlier} (in another tab or window, or by a second click), "
        f"so this {act} was not recorded." + _NOT_SENT.format(reason=display_text(reason.strip()))
    )


def _conflict_message(exc: Conflict) -> str:
    if exc.code in CONFLICT_WORDS:
        return CONFLICT_WORDS[exc.code]
    return exc.detail


def _invalid_message(exc: InvalidInput, typed: dict[str, str]) -> str:
    """A refusal in plain words: the problem, never the name of the field it came from."""
    if "value_confirmation" in exc.fields:
        escalation = field_words(exc, "value_confirmation")[0]
        if typed.get("value_confirmation", "").strip():
            return "The two values do not match. " + escalation
        return escalation
    if exc.code == "changed_value_confirmed":
        return exc.detail
    if exc.code in ("not_acknowledged", "tail_not_typed"):
        # Not confirmed: say every act still missing, the changed details first.
        acts = ("acknowledged", "typed_tail")
        return " ".join(words for name in acts for words in field_words(exc, name))
    for name in exc.fields:
        if words := field_words(exc, name):
            return FIELD_NAMES.get(name, "") + words[0]
    return exc.detail
