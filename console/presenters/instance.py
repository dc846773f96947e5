"""The instance page's cards and assumption lines as a person reads them, in plain words (the
sentence at the top is `restatement`, the state `outcome`, the words themselves `words`).

Everything a template would otherwise work out from route strings, risk classes or settings is
decided here once: whether a card can still be answered, how long its buttons wait, what its
input looks like, and the sentences that say why it is asked. The same presenters serve the full
page and every htmx swap, so both always agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, assert_never

from django.conf import settings

from beliefs.domain.attention import (
    NO_ACTS,
    TAIL_LENGTH,
    Acts,
    Habit,
    acts_for,
    value_tail,
    value_to_change,
)
from beliefs.domain.policy import RiskClass, RiskReason, RiskReasonKind, Route
from beliefs.domain.vocabulary import MAX_TEXT_LENGTH
from beliefs.models import (
    InstanceStatus,
    Prompt,
    PromptState,
    RecordedVia,
)
from console.forms.respond import form_value, is_date_input_text
from console.presenters.attention import Acknowledgement
from console.presenters.why import why_asked
from console.presenters.words import (
    DONE_WORDS,
    GIVEN_IN_CONSOLE,
    MONOTONIC_WORDS,
    STATE_WORDS,
    UNKNOWN_RUNTIME,
    reporter,
    risk_words,
    source_words,
)
from console.templatetags.reveal import (
    display_text,
    hidden_characters,
    mixed_script_note,
    plain_text,
)

# Up to this many choices are radio buttons; more become a drop-down list.
MAX_RADIO_CHOICES = 6


@dataclass(frozen=True)
class Option:
    value: str
    label: str


@dataclass(frozen=True)
class PageFacts:
    """What every card of one instance page shares."""

    status: str
    accepts_veto: bool  # `TaskInstance.accepts_veto`
    principal: str
    decision_labels: dict[str, str]
    # The person's latest irreversible confirmations, judged (None: no card here needs it).
    habit: Habit | None = None


@dataclass
class Card:
    """One prompt as a card (a confirmation or a question) or an assumption line.

    `message`, `errors` and `typed` carry a refused answer back into the card; `followup` is the
    question that a veto of this assumption opened, shown right under it.
    """

    prompt: Prompt
    facts: PageFacts
    message: str = ""
    status: int = 200
    errors: dict[str, list[str]] = field(default_factory=dict)  # field: problems, in words
    typed: dict[str, str] = field(default_factory=dict)
    followup: Card | None = None
    focus: bool = False
    after_veto: bool = False  # this question was opened by a veto of the line above it
    vetoed_after_ready: bool = False
    ticked: tuple[str, ...] = ()  # the changed details a refused confirm acknowledged

    # --- what it is ---

    @property
    def dom_id(self) -> str:
        return f"prompt-{self.prompt.pk}"

    @property
    def slot(self) -> Any:
        return self.prompt.slot

    @property
    def is_assumption(self) -> bool:
        """A line with a veto: an assumption, or a value bound on the runtime's report."""
        return self.prompt.route in (Route.SURFACED, Route.SILENT)

    @property
    def is_reported(self) -> bool:
        """An irreversible value bound on the runtime's report of the person's answer: the
        person was not asked, and may veto it."""
        return self.prompt.route == Route.SILENT

    @property
    def is_confirm(self) -> bool:
        return self.prompt.route == Route.CONFIRM

    @property
    def is_ask(self) -> bool:
        return self.prompt.route == Route.ASK

    @property
    def kind(self) -> str:
        """A CSS class name: confirm, ask or assumption."""
        return "assumption" if self.is_assumption else "confirm" if self.is_confirm else "ask"

    @property
    def is_open(self) -> bool:
        return self.prompt.state == PromptState.OPEN

    @property
    def can_answer(self) -> bool:
        """An open card of an instance that still waits: its form can apply."""
        return self.is_open and self.facts.status == InstanceStatus.AWAITING_USER

    @property
    def can_veto(self) -> bool:
        """An assumption can be vetoed while the instance waits and after it is ready."""
        return self.is_open and self.facts.accepts_veto

    @property
    def veto_after_ready(self) -> bool:
        """A veto now would come after the action was cleared: the agent may have acted."""
        return self.can_veto and self.facts.status == InstanceStatus.READY

    @property
    def irreversible(self) -> bool:
        return self.prompt.effective_risk == RiskClass.IRREVERSIBLE

    @property
    def delay_ms(self) -> int:
        """Confirm and "use this value instead" of an irreversible card wait this long."""
        return settings.CONSOLE_CONFIRM_DELAY_MS if self.irreversible else 0

    # --- attention: what a confirm needs beyond the click ---

    @cached_property
    def acts(self) -> Acts:
        """Each changed detail to acknowledge, and under raised friction the value's tail to
        type: the same rule (`domain.attention.acts_for`) the service enforces."""
        if not (self.can_answer and self.is_confirm):
            return NO_ACTS
        return acts_for(
            route=self.prompt.route,
            effective_risk=self.prompt.effective_risk,
            world_diff=self.prompt.world_diff,
            habit=self.facts.habit,
        )

    @property
    def acknowledgements(self) -> list[Acknowledgement]:
        return [Acknowledgement(d, d.key in self.ticked) for d in self.acts.acknowledge]

    @property
    def tail_length(self) -> int:
        """How many characters the friction asks for (fewer for a shorter value)."""
        return len(value_tail(self.prompt.prefill)) if self.acts.type_tail else TAIL_LENGTH

    @property
    def belief(self) -> Any:
        return self.prompt.belief

    @property
    def carried(self) -> bool:
        return self.prompt.carried

    # --- plain words ---

    @property
    def unclassified(self) -> bool:
        """Irreversible only because nobody has classified the value, or the decision it feeds,
        yet: the badge says so instead of "Cannot be undone"."""
        reason = RiskReason.from_text(self.prompt.risk_reason)
        if self.prompt.slot.monotonic or reason.kind is RiskReasonKind.MONOTONIC:
            return False
        return reason.kind is RiskReasonKind.UNCLASSIFIED or (
            reason.kind is RiskReasonKind.DECISION
            and reason.decision_risk in (None, RiskClass.UNCLASSIFIED)
        )

    @property
    def risk_badge(self) -> str:
        """The badge's CSS risk class: the effective risk, or "unclassified"."""
        if self.unclassified:
            return RiskClass.UNCLASSIFIED.value
        return str(self.prompt.effective_risk)

    @property
    def risk_words(self) -> str:
        return risk_words(self.risk_badge)

    @property
    def reported_by(self) -> str:
        """The runtime whose run acquired the value, by name ("the agent" for none)."""
        belief = self.prompt.belief
        return display_text(reporter(belief)) if belief is not None else UNKNOWN_RUNTIME

    @property
    def given_in_console(self) -> bool:
        belief = self.prompt.belief
        return belief is not None and belief.recorded_via == RecordedVia.CONSOLE

    @property
    def provenance(self) -> str:
        """Who put an earlier value on record, as a clause: "you gave it in the console",
        "billing-agent reports you gave it", "billing-agent got it from a tool"."""
        belief = self.prompt.belief
        if belief is None:
            return ""
        words = source_words(belief)
        return words.clause if words is GIVEN_IN_CONSOLE else f"{self.reported_by} {words.clause}"

    @property
    def why(self) -> str:
        """Why the person is asked, in one sentence."""
        return why_asked(self.prompt, self.provenance, after_veto=self.after_veto)

    @property
    def risk_why(self) -> str:
        """Why it matters, in one sentence, without the classifiers' vocabulary."""
        p = self.prompt
        irreversible = p.effective_risk == RiskClass.IRREVERSIBLE
        reason = RiskReason.from_text(p.risk_reason)
        if p.slot.monotonic:
            return MONOTONIC_WORDS
        match reason.kind:
            case RiskReasonKind.MONOTONIC:
                return MONOTONIC_WORDS
            case RiskReasonKind.UNCLASSIFIED:
                return "Nobody has rated this value yet, so it gets the most care."
            case RiskReasonKind.DECISION:
                label = self.facts.decision_labels.get(reason.decision, "")
                step = f"“{label}”" if label else "a step of this action"
                if irreversible:
                    return f"It is used to {step}, which cannot be undone."
                return f"It is used to {step}."
            case RiskReasonKind.OWN | RiskReasonKind.WORDS_ONLY:
                return "A wrong value here cannot be undone." if irreversible else ""
            case _ as unreachable:
                assert_never(unreachable)

    @property
    def done_word(self) -> str:
        state = self.prompt.state
        if state == PromptState.OPEN:
            return "Not used" if self.is_assumption else "Not answered"
        if state in (PromptState.ANSWERED, PromptState.REJECTED, PromptState.VETOED):
            return DONE_WORDS.get(str(self.prompt.action), str(state).capitalize())
        return STATE_WORDS.get(state, str(state).capitalize())

    @property
    def answered_by(self) -> str:
        return self.facts.principal

    @property
    def answered_at(self) -> datetime | None:
        return self.prompt.responded_at

    @property
    def replaced_value(self) -> Any:
        """For an edit: the value on record that the person's value replaced."""
        if self.prompt.action == "edit":
            return self.prompt.prefill
        return None

    # --- the value and its input ---

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
        return ""  # a question is never pre-filled

    @property
    def on_record_input(self) -> str:
        """The input's text for the value on record, as the unanswered card shows it: the
        script compares what is typed with it to tell an edit from a confirm."""
        if not self.is_confirm or self.prefill_hidden:
            return ""
        return form_value(self.prompt.prefill, self.slot.value_type)

    @property
    def prefill_hidden(self) -> bool:
        """A value with hidden characters is not copied into the input, where they would act
        (reorder, hide) again: it is shown revealed, and a correction is typed afresh."""
        return self.is_confirm and bool(hidden_characters(self.prompt.prefill))

    @property
    def typed_choices(self) -> list[Any]:
        """A permission level is typed in full, never picked (R3): its levels are a hint."""
        return list(self.slot.scope_order or []) if self.slot.monotonic else []

    @cached_property
    def options(self) -> list[Option]:
        """The choices offered as radio buttons or a list; [] where the value is typed."""
        if self.slot.monotonic or self.prefill_hidden:
            return []
        if self.slot.value_type == "boolean":
            return [Option("true", "Yes"), Option("false", "No")]
        choices = self.slot.choices or self.slot.scope_order or []
        return [Option(form_value(c, self.slot.value_type), plain_text(c)) for c in choices]

    @property
    def input_kind(self) -> str:
        """radio, select, textarea or text."""
        if self.options:
            return "radio" if len(self.options) <= MAX_RADIO_CHOICES else "select"
        if isinstance(self.prompt.prefill, dict | list) or "\n" in self.input_value:
            return "textarea"
        return "text"

    @property
    def is_date(self) -> bool:
        return bool(self.slot.value_type == "date")

    @property
    def is_number(self) -> bool:
        return bool(self.slot.value_type == "number")

    @property
    def max_length(self) -> int:
        return MAX_TEXT_LENGTH

    @property
    def date_input(self) -> bool:
        """A date is picked with the browser's date input, unless what it would show is not a
        date it can hold (a value on record that is no date, or text typed so): then text."""
        shown = self.input_value or "2000-01-01"  # (an empty date input is fine)
        return self.is_date and self.input_kind == "text" and is_date_input_text(shown)

    @property
    def ask_again(self) -> bool:
        """The refused answer needs its value typed a second time (an escalation of a
        permission level, or a change of an irreversible value)."""
        return "value_confirmation" in self.errors

    @cached_property
    def repeats_change(self) -> bool:
        """A typed value that changes this card's value on record is entered twice (the rule
        the service enforces, `domain.attention.value_to_change`)."""
        return self.can_answer and self._value_to_change is not None

    @property
    def _value_to_change(self) -> tuple[Any] | None:
        return value_to_change(
            route=self.prompt.route,
            effective_risk=self.prompt.effective_risk,
            prefill=self.prompt.prefill,
            context_value=self.prompt.context_value,
        )

    @property
    def shows_repeat(self) -> bool:
        """Whether the card has the second field: wherever a change needs it (the script shows
        it once the value differs from the one on record; without the script it is always
        there), and on a refused answer that asks for it."""
        return self.repeats_change or self.ask_again

    @property
    def repeat_on_record(self) -> str:
        """The value on record as its input shows it: the script shows the second field once
        what is typed differs from it (a value with hidden characters is not copied into the
        input, so anything typed differs)."""
        on_record = self._value_to_change
        if on_record is None or self.prefill_hidden:
            return ""
        return form_value(on_record[0], self.slot.value_type)

    @property
    def is_step(self) -> bool:
        """The escalation's first answer: not a mistake but the next step ("type it again"),
        said as a step; a second value that does not match is a mistake again."""
        return self.ask_again and not self.typed.get("value_confirmation", "").strip()

    @property
    def value_errors(self) -> list[str]:
        return self.errors.get("value", [])

    # --- the world ---

    @cached_property
    def diff(self) -> list[dict[str, Any]]:
        """The world diff, changed keys first (in their order), then the unchanged ones."""
        entries = list(self.prompt.world_diff or [])
        return [e for e in entries if e.get("change") != "unchanged"] + [
            e for e in entries if e.get("change") == "unchanged"
        ]

    @cached_property
    def changed_keys(self) -> list[str]:
        return [e["key"] for e in self.diff if e.get("change") != "unchanged"]

    @property
    def world_then(self) -> list[tuple[Any, Any]]:
        """The world the value referred to, as key/value pairs, where nothing is stated now."""
        ref = self.prompt.world_ref
        if isinstance(ref, dict):
            return sorted(ref.items(), key=lambda kv: str(kv[0]))
        return []

    @cached_property
    def read(self) -> list[Any]:
        """Everything a person reads on this card, as checked for deceptive characters."""
        p = self.prompt
        return [
            p.slot.label,
            p.prefill,
            p.context_value,
            p.response_value,
            p.world_ref,
            p.world_now,
            [[e.get("key"), e.get("old"), e.get("new")] for e in self.diff],
        ]

    @cached_property
    def hidden(self) -> list[str]:
        """Hidden characters anywhere a person reads on this card."""
        return hidden_characters(self.read)

    @cached_property
    def mixed(self) -> str:
        """The words on this card that mix look-alike scripts, explained; "" for none."""
        return mixed_script_note(self.read)

    @property
    def flagged(self) -> bool:
        return bool(self.hidden or self.mixed)
