"""A task class's classification as plain data: which changes lower a guard and need a
second classifier, which tighten routing, and what a change would do to open plans.

Pure Python: no Django. The services in `beliefs.services.classification` translate models to
these values and back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

from beliefs.domain import policy
from beliefs.domain.policy import RiskClass, Route

IRREVERSIBLE_LEVEL = policy.risk_level(RiskClass.IRREVERSIBLE)
# The classes a classifier may choose. Going back to `unclassified` is not a classification.
CHOOSABLE_RISKS: tuple[RiskClass, ...] = policy.RISK_ORDER

Target = Literal["slot", "decision"]
ChangeField = Literal["risk_class", "monotonic", "slots", "scope_order"]
ScopeOrder = tuple[str, ...] | None
Value = RiskClass | bool | frozenset[str] | ScopeOrder


# --- a monotonic slot's scope order -------------------------------------------------------------

MAX_SCOPE_LENGTH = 200
SCOPE_ORDER_MESSAGE = (
    "write at least two distinct scopes separated by commas, lowest first "
    "(e.g. read, write, admin), or leave it empty"
)


def parse_scope_order(value: Any) -> list[str] | None:
    """The ranking of a monotonic slot's values, lowest first, from a runtime's list or a
    classifier's "read, write, admin"; None for none ("" or null). Raises ValueError with the
    one message both callers show: the API and the classifier form take the same orders."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",")]
        if value == [""]:
            return None
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise ValueError(SCOPE_ORDER_MESSAGE)
    order = [s.strip() for s in value]
    if (
        len(order) < 2
        or not all(order)
        or len(set(order)) != len(order)
        or any(len(s) > MAX_SCOPE_LENGTH for s in order)
    ):
        raise ValueError(SCOPE_ORDER_MESSAGE)
    return order


def scope_order_weakening(before: ScopeOrder, after: ScopeOrder) -> str | None:
    """Why changing a scope order from `before` to `after` lowers the escalation guard, or None.

    An answer that ranks above the person's earlier grant must be typed twice. A change is no
    weaker exactly when `before` is kept whole, in its order, at the bottom of `after`: setting
    an order where there was none, or adding new scopes above the highest one. Everything else
    lowers the guard and needs a second classifier:
    - clearing the order (no answer is an escalation any more);
    - removing a scope (once it is gone it can be put back anywhere, below what it outranked);
    - reversing any two existing scopes (the higher one becomes reachable by typing it once);
    - adding a scope below an existing one (it is reached from that one by typing it once).
    """
    if not before or before == after:
        return None
    if not after:
        return f"it clears the scope order {' < '.join(before)}"
    reasons = []
    removed = [s for s in before if s not in after]
    if removed:
        reasons.append(f"it removes {', '.join(removed)} from the scope order")
    kept = [s for s in before if s in after]
    rank = {s: i for i, s in enumerate(after)}
    reversed_pairs = [
        (low, high)
        for i, low in enumerate(kept)
        for high in kept[i + 1 :]
        if rank[high] < rank[low]
    ]
    if reversed_pairs:
        low, high = reversed_pairs[0]
        more = len(reversed_pairs) - 1
        reasons.append(
            f"it puts {high} below {low}" + (f" (and {more} more pairs)" if more else "")
        )
    top = max((rank[s] for s in kept), default=-1)
    below = [s for s in after[:top] if s not in before]
    if below:
        reasons.append(
            f"it adds {', '.join(below)} below {after[top]} (new scopes go above the highest)"
        )
    return "; ".join(reasons) or None


# --- the pure part: a task class's classification as plain data ------------------------------


@dataclass(frozen=True)
class Classified:
    """What a slot and a decision both carry: a key and the risk class a classifier set."""

    key: str
    risk: RiskClass


@dataclass(frozen=True)
class SlotClass(Classified):
    monotonic: bool
    scope_order: ScopeOrder = None  # no routing depends on it: it decides what escalates


@dataclass(frozen=True)
class DecisionClass(Classified):
    slots: frozenset[str]


@dataclass(frozen=True)
class Change:
    """One edit of one field of one slot or decision."""

    target: Target
    key: str
    field: ChangeField
    value: Value


@dataclass(frozen=True)
class Classes:
    """Every class of one task class that effective risk depends on, in page order."""

    slots: tuple[SlotClass, ...]
    decisions: tuple[DecisionClass, ...]  # in id order, as `slot_effective_risk` names them

    def slot(self, key: str) -> SlotClass:
        return next(s for s in self.slots if s.key == key)

    def decision(self, key: str) -> DecisionClass:
        return next(d for d in self.decisions if d.key == key)

    def decisions_fed_by(self, slot_key: str) -> list[DecisionClass]:
        return [d for d in self.decisions if slot_key in d.slots]

    def effective(self) -> dict[str, policy.EffectiveRisk]:
        """slot key -> effective risk with its reason."""
        return {
            s.key: policy.effective_risk(
                s.risk,
                [(d.key, d.risk) for d in self.decisions_fed_by(s.key)],
                monotonic=s.monotonic,
            )
            for s in self.slots
        }

    def current(self, change: Change) -> Value:
        if change.target == "slot":
            slot = self.slot(change.key)
            if change.field == "scope_order":
                return slot.scope_order
            return slot.risk if change.field == "risk_class" else slot.monotonic
        decision = self.decision(change.key)
        return decision.risk if change.field == "risk_class" else decision.slots

    def apply(self, change: Change) -> Classes:
        if change.target == "slot":
            slots = tuple(_changed(s, change) if s.key == change.key else s for s in self.slots)
            return Classes(slots, self.decisions)
        decisions = tuple(_changed(d, change) if d.key == change.key else d for d in self.decisions)
        return Classes(self.slots, decisions)


_Item = TypeVar("_Item", SlotClass, DecisionClass)

_FIELD_ATTRIBUTES = {
    ("slot", "risk_class"): "risk",
    ("slot", "monotonic"): "monotonic",
    ("slot", "scope_order"): "scope_order",
    ("decision", "risk_class"): "risk",
    ("decision", "slots"): "slots",
}


def _changed(item: _Item, change: Change) -> _Item:
    attribute: dict[str, Any] = {_FIELD_ATTRIBUTES[change.target, change.field]: change.value}
    return replace(item, **attribute)


def approval_reason(before: Classes, change: Change) -> str | None:
    """Why `change` needs a second classifier (rules 1-4 of the services' docstring), or None."""
    old = before.current(change)
    if change.field == "scope_order":
        assert not isinstance(old, RiskClass | bool | frozenset)
        assert not isinstance(change.value, RiskClass | bool | frozenset)
        return scope_order_weakening(old, change.value)
    if change.field == "monotonic" and old is True and change.value is False:
        return f"it clears monotonic on {change.key}"
    if (
        change.field == "risk_class"
        and isinstance(old, RiskClass)
        and isinstance(change.value, RiskClass)
        and policy.risk_level(old) == IRREVERSIBLE_LEVEL
        and policy.risk_level(change.value) < IRREVERSIBLE_LEVEL
    ):
        return f"it lowers {change.target} {change.key} from {old.value} to {change.value.value}"
    dropped = effective_drops_out_of_irreversible(before, before.apply(change))
    if dropped:
        return f"it lowers the effective risk of {', '.join(dropped)} out of irreversible"
    return None


def effective_drops_out_of_irreversible(before: Classes, after: Classes) -> list[str]:
    was, will = before.effective(), after.effective()
    return [
        key
        for key, eff in was.items()
        if eff.risk is RiskClass.IRREVERSIBLE and will[key].risk is not RiskClass.IRREVERSIBLE
    ]


def tightens(before: Classes, after: Classes) -> bool:
    """Does some slot route under stricter inputs (higher effective risk, or monotonic set)?"""
    was, will = before.effective(), after.effective()
    for slot in after.slots:
        if policy.risk_level(will[slot.key].risk) > policy.risk_level(was[slot.key].risk):
            return True
        if slot.monotonic and not before.slot(slot.key).monotonic:
            return True
    return False


@dataclass(frozen=True)
class EffectiveChange:
    slot: str
    before: str
    after: str


def held_risks(before: Classes, after: Classes, changes: Iterable[Change]) -> list[str]:
    """The slots whose guard `changes` lower (a slot's own class or monotonic, a decision it
    feeds, or its link to one) but whose effective risk stays what it was because of something
    else, in words: "The effective risk of amount stays irreversible: inherited from decision
    send_transfer (irreversible)". A classifier who lowers a guard sees that it did not move,
    and why."""
    lowered: list[str] = []
    for change in changes:
        lowered += [k for k in _lowered_by(before, after, change) if k not in lowered]
    was, will = before.effective(), after.effective()
    return [
        f"The effective risk of {key} stays {will[key].risk.value}: {will[key].why.text}"
        for key in lowered
        if will[key].risk is was[key].risk and will[key].why.kind is not policy.RiskReasonKind.OWN
    ]


def _lowered_by(before: Classes, after: Classes, change: Change) -> list[str]:
    """The slots whose own guard, or a decision's guard over them, `change` lowers."""
    level = policy.risk_level
    if change.target == "slot":
        old, new = before.slot(change.key), after.slot(change.key)
        down = level(new.risk) < level(old.risk) or (old.monotonic and not new.monotonic)
        return [change.key] if down else []
    old_d, new_d = before.decision(change.key), after.decision(change.key)
    if level(new_d.risk) < level(old_d.risk):
        return [s.key for s in before.slots if s.key in old_d.slots]
    return [s.key for s in before.slots if s.key in old_d.slots - new_d.slots]


def effective_changes(before: Classes, after: Classes) -> list[EffectiveChange]:
    was, will = before.effective(), after.effective()
    return [
        EffectiveChange(key, was[key].risk.value, will[key].risk.value)
        for key in was
        if was[key].risk is not will[key].risk
    ]


# --- impact preview -------------------------------------------------------------------------


@dataclass(frozen=True)
class SlotRun:
    """What routing needs of one slot of one open instance, read once."""

    instance_id: Any
    slot_key: str
    facts: policy.BeliefFacts | None


@dataclass(frozen=True)
class Snapshot:
    classes: Classes
    open_instances: int
    planned_instances: int  # planned and open: the ones an upgrade re-plans now
    runs: tuple[SlotRun, ...]


@dataclass(frozen=True)
class Impact:
    """What changes would do to the open instances of their task class, computed without
    writing: every open instance's slots routed under the classes before and after (after
    every change took effect, the approved ones included)."""

    open_instances: int
    instances_altered: int
    prompts_altered: int
    become_blocking: int
    stop_blocking: int  # would stop blocking under the new classes, but are held as they are
    transitions: tuple[tuple[str, str, int], ...]  # (route before, route after, how many)
    effective: tuple[EffectiveChange, ...]
    held: tuple[str, ...]  # `held_risks`: touched, yet their effective risk stays (and why)
    needs_approval: tuple[str, ...]  # why some change waits for a second classifier
    replans: bool  # a change that takes effect at once tightens routing: open instances re-plan

    @property
    def unchanged(self) -> bool:
        return not self.effective and not self.prompts_altered and not self.needs_approval

    @property
    def lines(self) -> list[str]:
        """The impact in plain words, for the page."""
        lines = [
            f"{c.slot}: effective risk {c.before} \N{RIGHTWARDS ARROW} {c.after}"
            for c in self.effective
        ]
        lines += self.held
        if self.stop_blocking:
            verb = "stays" if self.stop_blocking == 1 else "stay"
            lines.append(
                f"{plural(self.stop_blocking, 'blocking prompt')} {verb} blocking: a downgrade "
                "releases nothing already asked of a person"
            )
        if not self.prompts_altered:
            lines.append(
                f"No other prompt of the {plural(self.open_instances, 'open instance')} "
                "would change."
                if self.stop_blocking
                else f"No prompt of the {plural(self.open_instances, 'open instance')} "
                "would change."
            )
            return lines
        lines.append(
            f"{plural(self.prompts_altered, 'prompt')} in "
            f"{plural(self.instances_altered, 'open instance')} would change"
            f" (of {self.open_instances} open):"
        )
        if self.become_blocking:
            verb = "becomes" if self.become_blocking == 1 else "become"
            lines.append(f"{plural(self.become_blocking, 'prompt')} {verb} blocking")
        for old, new, count in self.transitions:
            verb = "becomes" if count == 1 else "become"
            lines.append(f"{count} {old} {verb} {new}")
        return lines

    @property
    def when(self) -> str:
        if self.needs_approval:
            return (
                f"Needs a second classifier's approval: {'; '.join(self.needs_approval)}. "
                "Once approved it binds nothing retroactively: prompts already planned stay as "
                "they are; later plans use the new class."
            )
        if self.replans:
            return "Takes effect at once: open instances are re-planned now."
        if self.stop_blocking or any(
            policy.risk_level(RiskClass(c.after)) < policy.risk_level(RiskClass(c.before))
            for c in self.effective
        ):
            return (
                "Takes effect at once and binds nothing retroactively: prompts already planned "
                "stay as they are; later plans use the new class."
            )
        return "Takes effect at once."


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def impact_of(snapshot: Snapshot, changes: Iterable[Change]) -> Impact:
    """Pure: re-route every slot of every open instance with the hypothetical classes.

    Changes are taken in order, as the services would take them: each one that needs a second
    classifier waits (it does not count for what takes effect now), the others apply.
    """
    changes = list(changes)
    before = now = final = snapshot.classes
    approvals: list[str] = []
    replans = False
    for change in changes:
        if now.current(change) == change.value:
            continue
        why = approval_reason(now, change)
        if why is None:
            replans = replans or tightens(now, now.apply(change))
            now = now.apply(change)
        else:
            approvals.append(why)
        final = final.apply(change)
    was, will = before.effective(), final.effective()
    monotonic_before = {s.key: s.monotonic for s in before.slots}
    monotonic_after = {s.key: s.monotonic for s in final.slots}
    transitions: Counter[tuple[str, str]] = Counter()
    instances: set[Any] = set()
    become = stop = 0
    for run in snapshot.runs:
        old = policy.route(
            was[run.slot_key].risk, monotonic=monotonic_before[run.slot_key], belief=run.facts
        )
        new = policy.route(
            will[run.slot_key].risk, monotonic=monotonic_after[run.slot_key], belief=run.facts
        )
        if old.route is new.route:
            continue
        if old.blocking and not new.blocking:
            # Planning holds a blocking prompt whose belief has not changed (services._plan):
            # a downgrade never releases what was already asked of a person.
            stop += 1
            continue
        transitions[(old.route.value, new.route.value)] += 1
        instances.add(run.instance_id)
        if new.blocking and not old.blocking:
            become += 1
    return Impact(
        open_instances=snapshot.open_instances,
        instances_altered=len(instances),
        prompts_altered=sum(transitions.values()),
        become_blocking=become,
        stop_blocking=stop,
        transitions=tuple(
            (old, new, count) for (old, new), count in sorted(transitions.items(), key=_by_route)
        ),
        effective=tuple(effective_changes(before, final)),
        held=tuple(held_risks(before, final, changes)),
        needs_approval=tuple(approvals),
        replans=replans,
    )


_ROUTE_RANK = {route.value: i for i, route in enumerate(Route)}


def _by_route(item: tuple[tuple[str, str], int]) -> tuple[int, int]:
    (old, new), _ = item
    return (_ROUTE_RANK[old], _ROUTE_RANK[new])
