"""A person's responses to prompts: confirm, edit, answer, reject, veto."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from beliefs.domain.attention import (
    NO_ACTS,
    Acts,
    ChangedDetail,
    Habit,
    Sample,
    change_needs_repeat,
    habit_of,
    missing_acts,
    same_value,
    value_tail,
)
from beliefs.domain.canonical import canonical_json
from beliefs.domain.meaning import date_in_past
from beliefs.domain.policy import Route, Source
from beliefs.domain.problems import Problem, ProblemCode
from beliefs.domain.vocabulary import (
    ACTIONS_BY_ROUTE,
    MAX_TEXT_LENGTH,
    TYPED_ACTIONS,
    Action,
    AuditKind,
)
from beliefs.errors import (
    Conflict,
    IdempotencyKeyMismatch,
    InvalidInput,
    NotFound,
    StaleVersion,
    field_error,
)
from beliefs.models import (
    Belief,
    BeliefStatus,
    InstanceStatus,
    Prompt,
    PromptResponse,
    PromptState,
    RecordedVia,
    Slot,
    TaskInstance,
)
from beliefs.observed import ANSWER_SECONDS
from beliefs.selectors import attention
from beliefs.selectors.answering import AnswerRead, answer_under_lock
from beliefs.selectors.beliefs import history_pool
from beliefs.selectors.instances import fresh_prompt
from beliefs.services.audit import Actor, audit, digest_of
from beliefs.services.changes import instance_changed
from beliefs.services.expiry import expire_locked_if_due
from beliefs.services.lifecycle import close_instance, require_open
from beliefs.services.notify import belief_vetoed
from beliefs.services.planning import plan_locked
from beliefs.services.retry import retry_on_race


@dataclass(frozen=True)
class RespondResult:
    prompt: Prompt
    instance: TaskInstance
    replayed: bool  # True when an identical earlier response was returned, nothing written
    status_before: str = ""  # the instance's status when the answer came (its expiry settled)


def _check_value(slot: Slot, value: Any, field: str = "value") -> Any:
    if isinstance(value, str):
        value = value.strip()
        if len(value) > MAX_TEXT_LENGTH:
            raise field_error(field, Problem(ProblemCode.TOO_LONG, {"limit": MAX_TEXT_LENGTH}))
    if value is None or value == "":
        raise field_error(field, Problem(ProblemCode.REQUIRED))
    if slot.value_type == Slot.ValueType.NUMBER:
        if isinstance(value, str):
            try:
                value = float(value) if any(c in value for c in ".eE") else int(value)
            except ValueError:
                raise field_error(field, Problem(ProblemCode.NOT_A_NUMBER)) from None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise field_error(field, Problem(ProblemCode.NOT_A_NUMBER))
        if isinstance(value, float) and not math.isfinite(value):
            raise field_error(field, Problem(ProblemCode.NOT_FINITE))
    elif slot.value_type == Slot.ValueType.BOOLEAN:
        if isinstance(value, str) and value.lower() in {"true", "yes", "false", "no"}:
            value = value.lower() in {"true", "yes"}
        if not isinstance(value, bool):
            raise field_error(field, Problem(ProblemCode.NOT_TRUE_OR_FALSE))
    elif slot.value_type in (Slot.ValueType.STRING, Slot.ValueType.DATE):
        if not isinstance(value, str):
            raise field_error(field, Problem(ProblemCode.NOT_TEXT))
        if slot.value_type == Slot.ValueType.DATE:
            try:
                datetime.strptime(value, "%Y-%m-%d")  # noqa: DTZ007 - a calendar date, no time
            except ValueError:
                raise field_error(field, Problem(ProblemCode.NOT_A_DATE)) from None
            if slot.future and date_in_past(value, timezone.now().astimezone(UTC).date()):
                # It would be asked again at once (a date that must lie ahead).
                raise field_error(field, Problem(ProblemCode.DATE_IN_PAST))
    value = _canonical_choice(slot.scope_order or slot.choices or [], value)
    if slot.scope_order and value not in slot.scope_order:
        raise field_error(field, _not_a_choice(slot.scope_order))
    if slot.choices and value not in slot.choices:
        raise field_error(field, _not_a_choice(slot.choices))
    return value


def _not_a_choice(choices: list[Any]) -> Problem:
    return Problem(ProblemCode.NOT_A_CHOICE, {"choices": [str(c) for c in choices]})


def _canonical_choice(choices: list[Any], value: Any) -> Any:
    """A typed value that differs from one of the choices only in case is that choice, as the
    choices list it ("Admin" is "admin"); surrounding spaces are already stripped."""
    if not isinstance(value, str) or value in choices:
        return value
    folded = value.casefold()
    matches = [c for c in choices if isinstance(c, str) and c.strip().casefold() == folded]
    return matches[0] if len(matches) == 1 else value


def earlier_grant(prompt: Prompt) -> Any:
    """The grant an escalation is measured against: the context value, but only where the
    person gave it. A tool's or a model's value is a guess, not a grant; measured against it,
    a poisoned 'admin' would let the person type 'admin' once. None: any grant escalates.
    """
    belief = prompt.belief
    if belief is None or belief.source != Source.USER.value:
        return None
    return prompt.context_value


def escalates(slot: Slot, earlier: Any, value: Any) -> bool:
    """Does `value` rank above the earlier grant in the slot's scope order?"""
    order = slot.scope_order or []
    if value not in order:
        return False
    if earlier not in order:
        return True  # nothing to compare with: treat any grant as an escalation
    return order.index(value) > order.index(earlier)


def _same_response(response: PromptResponse, action: str, value: Any) -> bool:
    if response.action != action:
        return False
    if action in TYPED_ACTIONS:
        return canonical_json(response.value) == canonical_json(value)
    return True


@dataclass(frozen=True)
class Answer:
    """A person's response as parsed at the edge: typed, but not yet judged against the prompt."""

    action: Action
    version: int
    value: Any = None
    value_confirmation: Any = None
    reason: str = ""
    idempotency_key: str | None = None
    # The changed details of the world the person acknowledged (their keys), and the value's
    # last characters as typed under raised friction: what a confirm may need.
    acknowledged: tuple[str, ...] = field(default=())
    typed_tail: Any = None
    # An edit to the value on record itself, taken as the confirm it is.
    edited_to_same: bool = False


@retry_on_race
def prompt_respond(
    *,
    prompt_id: int,
    user: User,
    action: Action | str,
    version: int,
    value: Any = None,
    value_confirmation: Any = None,
    reason: str = "",
    idempotency_key: str | None = None,
    acknowledged: Collection[str] = (),
    typed_tail: Any = None,
) -> RespondResult:
    """A person's answer to one prompt of their own instance (input validated at the edge).

    A confirm of an irreversible value may need more than the click (`domain.attention`): each
    changed detail of its world named in `acknowledged`, and under raised friction the value's
    last characters in `typed_tail`; without them it is refused (400) and nothing is written."""
    answer = Answer(
        action=Action(action),
        version=version,
        value=value,
        value_confirmation=value_confirmation,
        reason=reason or "",
        idempotency_key=idempotency_key or None,
        acknowledged=tuple(k for k in acknowledged if isinstance(k, str)),
        typed_tail=typed_tail,
    )
    while True:
        with transaction.atomic():
            read = answer_under_lock(prompt_id, principal_id=user.pk)
            if read is None:
                raise NotFound("No such prompt.", code="not_found")
            instance_changed(read.instance.pk)  # (every writer of an instance tells its waiters)
            # Expiry is settled first, and committed before the answer is judged against the
            # expired instance: refusing a late answer must not roll the expiry back with it.
            if not expire_locked_if_due(read.instance, timezone.now(), read.open_prompts()):
                return _respond(read, user, answer)


def _respond(read: AnswerRead, user: User, answer: Answer) -> RespondResult:
    """The answer judged and recorded under the instance's lock, in the caller's transaction."""
    instance, prompt = read.instance, read.prompt
    before = instance.status
    answer = _as_intended(prompt, answer)
    if _replays_idempotency_key(prompt, user, answer):
        return RespondResult(prompt, instance, replayed=True, status_before=before)
    # An open prompt has no answer of its version yet (an answer settles its prompt): only an
    # answer to a settled prompt, or to another version, can repeat one already taken.
    settled = prompt.state != PromptState.OPEN or answer.version != prompt.version
    if settled and _repeats_a_taken_response(prompt, answer):
        return RespondResult(prompt, instance, replayed=True, status_before=before)
    _require_answerable(instance, prompt, answer)
    new_value = _value_for(prompt, answer)
    habit = _Habit.of(prompt, user, answer.action)
    acts = _require_acts(prompt, answer, habit)
    _HANDLERS[answer.action](Recorded(read, user, answer, new_value, acts))
    habit.record_change(instance, prompt, user)
    return RespondResult(prompt, instance, replayed=False, status_before=before)


def _as_intended(prompt: Prompt, answer: Answer) -> Answer:
    """An edit to exactly the value on record is a confirm, and is recorded (and judged) as
    one: it needs what a confirm needs, and says "Confirmed", not "Edited … instead of" it."""
    if answer.action is not Action.EDIT or prompt.route != Route.CONFIRM:
        return answer
    typed = _checked_or_raw(prompt.slot, answer)
    if canonical_json(typed) != canonical_json(prompt.prefill):
        return answer
    return replace(answer, action=Action.CONFIRM, value=None, edited_to_same=True)


@dataclass
class _Habit:
    """The person's latest irreversible confirmations, read once per answer that can change
    them: they decide whether friction is raised now, and, with this answer, after it."""

    samples: list[Sample] | None  # None: this answer neither needs nor changes the habit
    raised: bool = False  # whether the audit last recorded friction raised for the person

    @classmethod
    def of(cls, prompt: Prompt, user: User, action: Action) -> _Habit:
        if action not in (Action.CONFIRM, Action.EDIT) or not attention.needs_habit(prompt):
            return cls(None)
        window = attention.thresholds().window
        return cls(*attention.confirmations_and_friction(user.pk, window))

    @property
    def now(self) -> Habit | None:
        if self.samples is None:
            return None
        return habit_of(self.samples, attention.thresholds())

    def record_change(self, instance: TaskInstance, prompt: Prompt, user: User) -> None:
        """After an irreversible confirmation: when the person's pattern became habitual, or
        stopped being so, say so in the audit (the /insights/ page reads it)."""
        if self.samples is None or prompt.state != PromptState.ANSWERED:
            return
        this = Sample(kept=prompt.action == Action.CONFIRM, dwell_s=prompt.dwell_seconds)
        after = habit_of([this, *self.samples], attention.thresholds())
        if after.habitual == self.raised:
            return
        kind = (
            AuditKind.ATTENTION_FRICTION_RAISED
            if after.habitual
            else AuditKind.ATTENTION_FRICTION_LOWERED
        )
        audit(
            kind,
            actor=Actor(user=user),
            instance=instance,
            prompt=prompt,
            subject=prompt.slot.key,
            data=after.as_data(),
        )


def _require_acts(prompt: Prompt, answer: Answer, habit: _Habit) -> Acts:
    """A confirm of an irreversible value names each changed detail of its world, and under
    raised friction types the value's last characters; else it is refused, nothing written."""
    if answer.action is not Action.CONFIRM:
        return NO_ACTS
    acts = attention.confirm_acts(prompt, habit.now)
    missing = missing_acts(
        acts,
        prefill=prompt.prefill,
        acknowledged=answer.acknowledged,
        typed_tail=answer.typed_tail,
    )
    if not missing:
        return acts
    problems: dict[str, list[Problem]] = {}
    if missing.unacknowledged:
        keys = [d.key for d in missing.unacknowledged]
        problems["acknowledged"] = [Problem(ProblemCode.NOT_ACKNOWLEDGED, {"keys": keys})]
    length = len(value_tail(prompt.prefill))  # TAIL_LENGTH, or fewer for a shorter value
    if missing.tail:
        problems["typed_tail"] = [Problem(ProblemCode.TAIL_NOT_TYPED, {"length": length})]
    detail = (
        "Not confirmed: the world this value refers to changed; acknowledge each changed "
        "detail (acknowledged: their keys) to confirm it."
        if missing.unacknowledged
        else "Not confirmed: your recent confirmations were fast and kept every value, so "
        f"type the last {length} characters of the value on record (typed_tail)."
    )
    raise InvalidInput(
        detail,
        code="not_acknowledged" if missing.unacknowledged else "tail_not_typed",
        fields={name: [p.message for p in found] for name, found in problems.items()},
        problems=problems,
    )


def _replays_idempotency_key(prompt: Prompt, user: User, answer: Answer) -> bool:
    """A retry that carries the key of a response already taken gets that response again; the
    key stands for one request, so the same key with another answer is refused."""
    if not answer.idempotency_key:
        return False
    earlier = PromptResponse.objects.filter(
        responded_by=user, idempotency_key=answer.idempotency_key
    ).first()
    if earlier is None:
        return False
    if earlier.prompt_id != prompt.pk:
        raise Conflict(
            "This Idempotency-Key was already used for another prompt.",
            code="idempotency_key_reused",
        )
    same = (
        earlier.version == answer.version
        and earlier.reason == answer.reason
        and _same_response(earlier, answer.action, _checked_or_raw(prompt.slot, answer))
    )
    if not same:
        raise IdempotencyKeyMismatch(
            "This Idempotency-Key was already used for a different answer to this prompt "
            "(action, value, reason or version). The first answer stands; send a new key for "
            "a new answer.",
            extra={"prompt": fresh_prompt(prompt)},
        )
    return True


def _checked_or_raw(slot: Slot, answer: Answer) -> Any:
    """A repeated typed value as it would have been stored, or as sent when it is not valid
    (then it cannot equal what was stored)."""
    if answer.action not in TYPED_ACTIONS:
        return answer.value
    try:
        return _check_value(slot, answer.value)
    except InvalidInput:
        return answer.value


def _repeats_a_taken_response(prompt: Prompt, answer: Answer) -> bool:
    """True for an identical repeat of the decision already taken on this version (nothing is
    written again); a different answer to an answered version is refused."""
    earlier = PromptResponse.objects.filter(prompt=prompt, version=answer.version).first()
    if earlier is None:
        return False
    if _same_response(earlier, answer.action, _checked_or_raw(prompt.slot, answer)):
        return True
    raise Conflict(
        "This prompt was already answered; your answer was not recorded.",
        code="already_answered",
        extra={"prompt": fresh_prompt(prompt)},
    )


def _require_answerable(instance: TaskInstance, prompt: Prompt, answer: Answer) -> None:
    if prompt.state != PromptState.OPEN:  # expiry was settled by prompt_respond just before
        raise Conflict(
            f"This prompt is no longer open (it is {prompt.state}); nothing was recorded.",
            code=f"prompt_{prompt.state}",
            extra={"prompt": fresh_prompt(prompt)},
        )
    if answer.version != prompt.version:
        raise StaleVersion(
            "What you answered has changed since you saw it (the value or the world it refers "
            "to). Nothing was recorded; review the fresh form and answer again.",
            extra={"prompt": fresh_prompt(prompt)},
        )
    allowed = ACTIONS_BY_ROUTE[prompt.route]
    if answer.action not in allowed:
        raise field_error(
            "action",
            Problem(
                ProblemCode.ACTION_NOT_TAKEN,
                {"route": prompt.route, "allowed": [a.value for a in allowed]},
            ),
        )
    if answer.action is Action.VETO:
        # A veto may reopen a ready instance: the value must not be reused even there.
        if not instance.accepts_veto:
            raise Conflict(
                f"The instance is {instance.status}.", code=f"instance_{instance.status}"
            )
    else:
        require_open(instance, "answer")


def _value_for(prompt: Prompt, answer: Answer) -> Any:
    """The value a confirm, edit or answer binds; an escalation of a monotonic scope must be
    typed a second time."""
    if answer.action is Action.CONFIRM:
        return prompt.prefill
    if answer.action not in TYPED_ACTIONS:
        return None
    new_value = _check_value(prompt.slot, answer.value)
    grant = earlier_grant(prompt)
    slot = prompt.slot
    if slot.monotonic and slot.scope_order and escalates(slot, grant, new_value):
        again = answer.value_confirmation
        if isinstance(again, str):
            again = again.strip()
        if again != new_value:
            raise field_error(
                "value_confirmation",
                Problem(
                    ProblemCode.ESCALATION_UNCONFIRMED,
                    {"value": repr(new_value), "grant": None if grant is None else repr(grant)},
                ),
            )
    _require_change_repeated(prompt, answer, new_value)
    return new_value


def _require_change_repeated(prompt: Prompt, answer: Answer, new_value: Any) -> None:
    """A typed value that changes an irreversible value on record (an edit of a CONFIRM, an
    answer to an ASK that differs from the earlier value it shows) is entered twice: one slip
    of the keyboard must not change what cannot be undone. The second entry is read as the
    first one is, so it equals the first exactly when the person typed the same value."""
    if not change_needs_repeat(
        route=prompt.route,
        effective_risk=prompt.effective_risk,
        prefill=prompt.prefill,
        context_value=prompt.context_value,
        value=new_value,
    ):
        return
    again = answer.value_confirmation
    given = again is not None and not (isinstance(again, str) and not again.strip())
    if given:
        try:
            if same_value(_check_value(prompt.slot, again, "value_confirmation"), new_value):
                return
        except InvalidInput:
            pass  # not even a value of the slot's type: it is not the same value
    problem = Problem(ProblemCode.EDIT_NOT_REPEATED, {"given": given})
    raise InvalidInput(
        "Not recorded: value_confirmation does not equal value. A change of a value that cannot "
        "be undone is sent twice, the second time in value_confirmation."
        if given
        else "Not recorded: this changes a value that cannot be undone, so the new value is "
        "sent twice: send it again in value_confirmation.",
        code="edit_not_repeated",
        fields={"value_confirmation": [problem.message]},
        problems={"value_confirmation": [problem]},
    )


def _record(d: Recorded, new_value: Any = None, belief: Belief | None = None) -> PromptResponse:
    """One decision per prompt version: the unique constraint, not this code, decides a race
    (a second answer that got past the instance's lock would fail it, and the whole transaction
    with it, so nothing of either is half written)."""
    prompt, answer = d.read.prompt, d.answer
    try:
        return PromptResponse.objects.create(
            prompt=prompt,
            version=prompt.version,
            action=answer.action.value,
            value=new_value,
            reason=answer.reason,
            responded_by=d.user,
            idempotency_key=answer.idempotency_key,
            belief=belief,
        )
    except IntegrityError:
        raise Conflict(
            "Someone answered this prompt at the same moment; nothing more was recorded.",
            code="already_answered",
        ) from None


# What settling a prompt writes (`_settle`), and what binding a value adds.
SETTLED_FIELDS = ["action", "response_reason", "responded_at", "state", "updated_at"]
BOUND_FIELDS = [*SETTLED_FIELDS, "response_value"]


def _settle(prompt: Prompt, answer: Answer, state: PromptState) -> dict[str, Any]:
    prompt.action = answer.action.value
    prompt.response_reason = answer.reason
    prompt.responded_at = timezone.now()
    prompt.state = state
    if prompt.blocking and prompt.created_at is not None:  # for /metrics, once it holds
        waited = (prompt.responded_at - prompt.created_at).total_seconds()
        transaction.on_commit(lambda: ANSWER_SECONDS.observe(waited))
    data: dict[str, Any] = {"action": answer.action.value, "version": prompt.version}
    if answer.reason:  # what the person typed: the audit keeps its digest, never the text
        data["reason_digest"] = digest_of(answer.reason)
    return data


def _acknowledged(detail: ChangedDetail) -> dict[str, Any]:
    """A changed detail the person acknowledged, as the audit keeps it: which key and how it
    changed, the world's old and new values as digests."""
    return {
        "key": detail.key,
        "change": detail.change,
        "old_digest": digest_of(detail.old),
        "new_digest": digest_of(detail.new),
    }


def _audit_response(
    instance: TaskInstance, prompt: Prompt, user: User, data: dict[str, Any]
) -> None:
    audit(
        AuditKind.of_response(Action(data["action"])),
        actor=Actor(user=user),
        instance=instance,
        prompt=prompt,
        subject=prompt.slot.key,
        data=data,
    )


@dataclass(frozen=True)
class Recorded:
    """An answer judged answerable, for the handler of its action to record and carry out."""

    read: AnswerRead
    user: User
    answer: Answer
    new_value: Any
    acts: Acts = NO_ACTS

    def replan(self) -> None:
        """Plan the instance again after the answer, with the prompts the answer read."""
        read = self.read
        answered = [p for p in read.prompts if p.state == PromptState.ANSWERED]
        plan_locked(read.instance, Actor(user=self.user), read.open_prompts(), answered=answered)


def _bind_user_value(d: Recorded) -> None:
    """Confirm, edit, answer: a new user-sourced current belief, so a re-plan binds it silently.
    Its world reference is the world the person saw, so a later run diffs against that."""
    instance, prompt = d.read.instance, d.read.prompt
    user, answer = d.user, d.answer
    data = _settle(prompt, answer, PromptState.ANSWERED)
    acquired_at = prompt.responded_at or timezone.now()
    world_seen = prompt.world_now if prompt.world_now is not None else prompt.world_ref
    Belief.objects.filter(instance=instance, slot=prompt.slot, status=BeliefStatus.ACTIVE).update(
        status=BeliefStatus.SUPERSEDED, status_reason=f"{answer.action.value} by {user}"
    )
    belief = Belief.objects.create(
        instance=instance,
        principal_id=instance.principal_id,
        runtime_id=instance.runtime_id,
        slot=prompt.slot,
        value=d.new_value,
        source=Source.USER.value,
        turn=d.read.last_turn + 1,
        acquired_at=acquired_at,
        world_ref=world_seen,
        recorded_via=RecordedVia.CONSOLE,
    )
    _record(d, d.new_value, belief)
    prompt.response_value = d.new_value
    prompt.save(update_fields=BOUND_FIELDS)
    data.update(
        {
            "value_digest": digest_of(d.new_value),
            "belief": belief.pk,
            "world_ref_digest": digest_of(world_seen),
        }
    )
    if d.acts.acknowledge:
        data["acknowledged"] = [_acknowledged(detail) for detail in d.acts.acknowledge]
    if d.acts.type_tail and d.acts.habit is not None:
        data["friction"] = {"typed_tail": True, **d.acts.habit.as_data()}
    if answer.edited_to_same:
        data["edited_to_the_value_on_record"] = True
    _audit_response(instance, prompt, user, data)
    d.replan()


def _reject(d: Recorded) -> None:
    """A rejection cancels the whole instance; the runtime reads the reason from it."""
    instance, prompt = d.read.instance, d.read.prompt
    user, answer = d.user, d.answer
    _record(d)
    data = _settle(prompt, answer, PromptState.REJECTED)
    prompt.save(update_fields=SETTLED_FIELDS)
    close_instance(
        instance, InstanceStatus.CANCELLED, PromptState.CANCELLED, answer.reason or "rejected"
    )
    _audit_response(instance, prompt, user, data)


def _veto(d: Recorded) -> None:
    """A vetoed assumption never binds again, here or in a later run; re-planning asks afresh."""
    instance, prompt = d.read.instance, d.read.prompt
    user, answer = d.user, d.answer
    _record(d)
    data = _settle(prompt, answer, PromptState.VETOED)
    vetoed = prompt.belief
    if vetoed is not None:
        vetoed.status = BeliefStatus.VETOED
        vetoed.status_reason = answer.reason or f"vetoed by {user}"
        vetoed.save(update_fields=["status", "status_reason"])
        # Older active beliefs for the slot that this runtime could carry must not step in
        # silently: retire them too. Another runtime's values are not this one's to retire (nor
        # could they step in here).
        runtimes = history_pool(instance.task_class_id).runtimes_for(instance.runtime_id)
        of_runtime = Q(runtime__in=[r for r in runtimes if r is not None])
        if None in runtimes:
            of_runtime |= Q(runtime__isnull=True)
        Belief.objects.filter(
            Q(acquired_at__lt=vetoed.acquired_at)
            | Q(acquired_at=vetoed.acquired_at, pk__lt=vetoed.pk),
            of_runtime,
            principal_id=instance.principal_id,
            slot=prompt.slot,
            status=BeliefStatus.ACTIVE,
        ).update(status=BeliefStatus.SUPERSEDED, status_reason="an assumption was vetoed")
    prompt.save(update_fields=SETTLED_FIELDS)
    data["belief"] = vetoed.pk if vetoed is not None else None
    _audit_response(instance, prompt, user, data)
    belief_vetoed(
        instance, prompt, vetoed, answer.reason, was_ready=instance.status == InstanceStatus.READY
    )
    d.replan()


_HANDLERS = {
    Action.CONFIRM: _bind_user_value,
    Action.EDIT: _bind_user_value,
    Action.ANSWER: _bind_user_value,
    Action.REJECT: _reject,
    Action.VETO: _veto,
}


def prompts_mark_shown(*, instance: TaskInstance, prompts: Iterable[Prompt], user: User) -> int:
    """Record when each open prompt of `instance` was first shown to its principal (dwell time
    starts there): only when `user` is that principal, and only prompts of that instance."""
    if instance.principal_id != user.pk:
        return 0
    ids = [
        p.pk
        for p in prompts
        if p.instance_id == instance.pk and p.shown_at is None and p.state == PromptState.OPEN
    ]
    if not ids:
        return 0
    now = timezone.now()
    count = Prompt.objects.filter(
        instance_id=instance.pk, pk__in=ids, shown_at__isnull=True
    ).update(shown_at=now)
    for prompt in prompts:
        if prompt.pk in ids:
            prompt.shown_at = now
    return count
