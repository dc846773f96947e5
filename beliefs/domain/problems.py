"""What can be wrong with one field of an input, as data: a code and its parameters.

Services raise a field error with a `Problem`; the API says `message` (its words never
change), and the pages map each code to words of their own
(`console.presenters.words.problem_words`), so nothing has to read a message to know what
it says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, assert_never


class ProblemCode(StrEnum):
    REQUIRED = "required"  # nothing was given
    TOO_LONG = "too_long"  # limit: the most characters allowed
    NOT_A_NUMBER = "not_a_number"
    NOT_FINITE = "not_finite"  # a number, but infinite or NaN
    NOT_TRUE_OR_FALSE = "not_true_or_false"
    NOT_TEXT = "not_text"
    NOT_A_DATE = "not_a_date"
    DATE_IN_PAST = "date_in_past"  # a date before today where only dates from today on go
    NOT_A_CHOICE = "not_a_choice"  # choices: the values allowed, as text
    NOT_JSON = "not_json"  # detail: what the JSON parser said
    ACTION_NOT_TAKEN = "action_not_taken"  # route, allowed: the actions that route takes
    NOT_A_VERSION = "not_a_version"  # a prompt version is a whole number from 1
    # value, grant: the new permission level and the earlier one (None for a first grant),
    # as Python reprs; an escalation must be typed a second time.
    ESCALATION_UNCONFIRMED = "escalation_unconfirmed"
    # Confirm pressed with a changed value in the input (the console's forms only).
    VALUE_CHANGED = "value_changed"
    # Confirm of an irreversible value whose world changed, without acknowledging each changed
    # detail; keys: the details not acknowledged (world keys, as text).
    NOT_ACKNOWLEDGED = "not_acknowledged"
    # Confirm under raised friction without the value's last characters typed right;
    # length: how many characters are asked for.
    TAIL_NOT_TYPED = "tail_not_typed"
    # A change of an irreversible value on record without the same value sent a second time;
    # given: whether a second value was sent (then it differed).
    EDIT_NOT_REPEATED = "edit_not_repeated"


VERSION_MESSAGE = "must be the prompt version you saw (a whole number)"


@dataclass(frozen=True)
class Problem:
    code: ProblemCode
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def message(self) -> str:
        """The problem in the API's words (after the field's name: "value: is required")."""
        p = self.params
        match self.code:
            case ProblemCode.REQUIRED:
                return "is required"
            case ProblemCode.TOO_LONG:
                return f"must be at most {p['limit']} characters"
            case ProblemCode.NOT_A_NUMBER:
                return "must be a number"
            case ProblemCode.NOT_FINITE:
                return "must be a finite number"
            case ProblemCode.NOT_TRUE_OR_FALSE:
                return "must be true or false"
            case ProblemCode.NOT_TEXT:
                return "must be text"
            case ProblemCode.NOT_A_DATE:
                return "must be a date written YYYY-MM-DD"
            case ProblemCode.DATE_IN_PAST:
                return "must be today or a later date"
            case ProblemCode.NOT_A_CHOICE:
                return f"must be one of {', '.join(p['choices'])}"
            case ProblemCode.NOT_JSON:
                return f"is not valid JSON ({p['detail']})"
            case ProblemCode.ACTION_NOT_TAKEN:
                return f"a {p['route']} prompt takes {', '.join(p['allowed'])}"
            case ProblemCode.NOT_A_VERSION:
                return VERSION_MESSAGE
            case ProblemCode.ESCALATION_UNCONFIRMED:
                grant = p.get("grant")
                what = (
                    f"{p['value']} grants more than the earlier {grant}"
                    if grant is not None
                    else f"{p['value']} is a new grant"
                )
                return what + ": type it a second time to confirm the escalation"
            case ProblemCode.VALUE_CHANGED:
                return "changed: use “Use this value instead” to keep it"
            case ProblemCode.NOT_ACKNOWLEDGED:
                return (
                    "must name every changed detail of the world before a confirm; missing: "
                    + ", ".join(p["keys"])
                )
            case ProblemCode.TAIL_NOT_TYPED:
                return f"must be the last {p['length']} characters of the value on record"
            case ProblemCode.EDIT_NOT_REPEATED:
                return (
                    "must equal value: a change of a value that cannot be undone is sent twice"
                    if p.get("given")
                    else "is required: a change of a value that cannot be undone is sent twice"
                )
            case _ as unreachable:
                assert_never(unreachable)
