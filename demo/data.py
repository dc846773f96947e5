"""Demo data: the seed's five task classes, each with a finished run 1 and an open run 2.

Out of the box it shows every journey: alice answers; her bank transfer then waits for two of
the treasury approvers (bob and dave), and her supplier contract for her own passkey
signature; carol and cathy classify; rita reviews.

Together the run-2 plans show every route and every rule:
R0 access.justification, R1 transfer.memo, R2 shipping.item_sku, R3 access.scope,
R4 transfer.amount and access.resource, R5 shipping.shipping_address, R6 transfer.recipient_account
(and the contract counterparty, the consent), R7 the reversible and policy slots.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, User
from django.db import transaction

from beliefs.models import RuntimeAPIKey, TaskClass, TaskInstance
from beliefs.roles import CLASSIFIERS_GROUP, REVIEWERS_GROUP, ensure_role_groups, grant_role
from beliefs.schemas import BeliefIn, TaskClassIn, WorldIn, parse
from beliefs.services import classification, decision_settings
from beliefs.services.audit import SYSTEM, Actor
from beliefs.services.instances import instance_open
from beliefs.services.planning import instance_plan
from beliefs.services.responses import prompt_respond
from beliefs.services.runtimes import runtime_key_create
from beliefs.services.task_classes import task_class_register
from demo.proposals import seed_demo_proposals

DEMO_KEY_NAME = "demo-runtime"
# The group whose members approve the demo's bank transfers (M-of-N approval).
APPROVERS_GROUP = "treasury"

# Demo passwords are public by design: the demo is for trying the product on your own machine.
DEMO_USERS: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("alice", "alice-demo-pass", "end user", ()),
    ("carol", "carol-demo-pass", "classifier", (CLASSIFIERS_GROUP,)),
    ("cathy", "cathy-demo-pass", "second classifier (four-eyes approvals)", (CLASSIFIERS_GROUP,)),
    ("rita", "rita-demo-pass", "reviewer", (REVIEWERS_GROUP,)),
    ("bob", "bob-demo-pass", "approver: treasury (2 approve each bank transfer)", ("treasury",)),
    ("dave", "dave-demo-pass", "approver: treasury (2 approve each bank transfer)", ("treasury",)),
    ("admin", "admin-demo-pass", "staff: /admin/ and /runtimes/", ()),
]
STAFF_USERS = {"admin"}
# Demo emails go to the console (or to SMTP when EMAIL_HOST is set): alice gets hers.
DEMO_EMAILS = {"alice": "alice@example.org"}


@dataclass
class Scenario:
    key: str
    name: str
    # Slots and decisions as a runtime registers them, each with the risk class a classifier
    # sets for it (`_spec`).
    slots: list[dict[str, Any]]
    decisions: list[dict[str, Any]]
    monotonic: tuple[str, ...] = ()
    # Run 1: the world then, and what alice answered for each slot.
    world_1: dict[str, Any] = field(default_factory=dict)
    answers_1: dict[str, Any] = field(default_factory=dict)
    # Run 2: the world now, and what the runtime itself acquired in this run.
    world_2: dict[str, Any] = field(default_factory=dict)
    beliefs_2: list[dict[str, Any]] = field(default_factory=list)
    # Slots the task class gains between run 1 and run 2 (no belief yet in run 2: R0).
    slots_added_2: list[dict[str, Any]] = field(default_factory=list)
    # A decision's own guards, set by the classifier after run 1 (so run 1 went ahead as
    # before) and so asked of run 2: {"decision": {"approvals": (2, "group"),
    # "requires_signature": True, "person_confirms": True}}.
    guards: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def slot_risks(self) -> dict[str, str]:
        return _risks([*self.slots, *self.slots_added_2])

    @property
    def decision_risks(self) -> dict[str, str]:
        return _risks(self.decisions)


def _spec(key: str, label: str, risk: str | None, **more: Any) -> dict[str, Any]:
    """A slot or a decision as the runtime registers it (`more`: its other fields), with the
    risk class the demo's classifier sets for it (None: it stays unclassified)."""
    return {"key": key, "label": label, **more, "risk": risk}


def _risks(specs: list[dict[str, Any]]) -> dict[str, str]:
    """Slot or decision key -> the risk class the demo's classifier sets."""
    return {spec["key"]: spec["risk"] for spec in specs if spec["risk"] is not None}


def _registered(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Slot or decision specs as the runtime sends them: the risk is a classifier's to set."""
    return [{k: v for k, v in spec.items() if k != "risk"} for spec in specs]


SCENARIOS = [
    Scenario(
        key="payments.transfer",
        name="Send a bank transfer",
        slots=[
            # The account's own class is only policy: it inherits irreversible from the
            # decision.
            _spec("recipient_account", "Recipient account (IBAN)", "policy"),
            _spec("amount", "Amount (EUR)", "irreversible", value_type="number"),
            _spec("execution_date", "Execution date", "reversible", value_type="date"),
            _spec("memo", "Memo", "cosmetic", suggested_risk="cosmetic"),
        ],
        decisions=[
            _spec(
                "send_transfer",
                "Send the transfer",
                "irreversible",
                slots=["recipient_account", "amount"],
            )
        ],
        world_1={"recipient_account": {"account_holder": "Bob Example", "bank": "ING"}},
        answers_1={
            "recipient_account": "NL91ABNA0417164300",
            "amount": 250,
            "execution_date": "2026-11-02",
            "memo": "Rent November",
        },
        world_2={"recipient_account": {"account_holder": "B. Exampel Holdings", "bank": "ING"}},
        beliefs_2=[{"slot": "amount", "value": 275, "source": "tool", "turn": 1}],
        # M-of-N approval: two of the treasury approvers approve each transfer.
        guards={"send_transfer": {"approvals": (2, APPROVERS_GROUP)}},
    ),
    Scenario(
        key="commerce.ship_order",
        name="Ship an order",
        slots=[
            _spec("item_sku", "Item", "reversible"),
            # Left unclassified (A3): it is treated as irreversible.
            _spec("shipping_address", "Shipping address", None, suggested_risk="policy"),
            _spec(
                "delivery_speed", "Delivery speed", "reversible", choices=["standard", "express"]
            ),
            _spec("gift_wrap", "Gift wrap", "cosmetic", value_type="boolean"),
        ],
        decisions=[
            _spec("ship", "Ship the parcel", "reversible", slots=["item_sku", "delivery_speed"])
        ],
        answers_1={
            "item_sku": "SKU-1234 Kettle",
            "shipping_address": "12 Old Street, Leeds LS1 4AB",
            "delivery_speed": "standard",
            "gift_wrap": False,
        },
        beliefs_2=[{"slot": "item_sku", "value": "SKU-2040 Teapot", "source": "user", "turn": 1}],
    ),
    Scenario(
        key="legal.sign_contract",
        name="Sign a supplier contract",
        # A4: the composite counterparty's parts are policy on their own, irreversible through
        # the decision they feed.
        slots=[
            _spec("counterparty_name", "Counterparty name", "policy"),
            _spec("counterparty_entity_id", "Counterparty entity id (LEI)", "policy"),
            _spec("counterparty_jurisdiction", "Counterparty jurisdiction", "policy"),
            _spec("renewal_reminder", "Renewal reminder", "reversible", value_type="boolean"),
        ],
        decisions=[
            _spec(
                "sign_contract",
                "Sign the contract",
                "irreversible",
                slots=["counterparty_name", "counterparty_entity_id", "counterparty_jurisdiction"],
            )
        ],
        world_1={
            "counterparty_name": {"registry": "GLEIF", "legal_name": "Acme Supplies B.V."},
            "counterparty_entity_id": {"registry": "GLEIF", "lei": "724500VKKSH9QOLTFR81"},
            "counterparty_jurisdiction": {"registry": "GLEIF", "country": "NL"},
        },
        answers_1={
            "counterparty_name": "Acme Supplies B.V.",
            "counterparty_entity_id": "724500VKKSH9QOLTFR81",
            "counterparty_jurisdiction": "NL",
            "renewal_reminder": True,
        },
        world_2={
            "counterparty_name": {"registry": "GLEIF", "legal_name": "Acme Supplies B.V."},
            "counterparty_entity_id": {"registry": "GLEIF", "lei": "894500WOTA5040KHGX73"},
            "counterparty_jurisdiction": {"registry": "GLEIF", "country": "NL"},
        },
        # A contract is signed with the person's passkey.
        guards={"sign_contract": {"requires_signature": True}},
    ),
    Scenario(
        key="privacy.data_consent",
        name="Share data under a consent",
        slots=[
            _spec("consent", "Consent to share data", "irreversible", value_type="boolean"),
            _spec("contact_channel", "Contact channel", "reversible", choices=["email", "sms"]),
        ],
        decisions=[_spec("share_data", "Share the data", "irreversible", slots=["consent"])],
        # A5: the value stays "yes", the scope and the policy it referred to changed.
        world_1={"consent": {"scope": "analytics", "policy_version": "v3", "date": "2026-03-01"}},
        answers_1={"consent": True, "contact_channel": "email"},
        world_2={
            "consent": {
                "scope": "analytics+marketing",
                "policy_version": "v4",
                "date": "2026-11-20",
            }
        },
    ),
    Scenario(
        key="iam.grant_access",
        name="Grant access to a system",
        slots=[
            _spec("resource", "Resource", "irreversible"),
            _spec("scope", "Access scope", "irreversible", scope_order=["read", "write", "admin"]),
            _spec("duration_days", "Duration (days)", "policy", value_type="number"),
        ],
        decisions=[
            _spec("authorize", "Authorize access", "irreversible", slots=["resource", "scope"])
        ],
        monotonic=("scope",),
        world_1={"resource": {"system": "billing-db", "owner": "finance"}},
        answers_1={"resource": "billing-db", "scope": "admin", "duration_days": 30},
        slots_added_2=[_spec("justification", "Justification", "reversible")],
        world_2={"resource": {"system": "billing-db", "owner": "finance"}},
        beliefs_2=[
            {"slot": "resource", "value": "billing-db-replica", "source": "tool", "turn": 1}
        ],
    ),
    Scenario(
        key="events.book_venue",
        name="Book a venue",
        slots=[
            _spec("venue", "Venue", "irreversible"),
            # Only dates from today on: a date that has passed is asked again (R9).
            _spec("event_date", "Event date", "reversible", value_type="date", future=True),
            _spec("headcount", "Headcount", "reversible", value_type="number"),
        ],
        decisions=[_spec("book", "Book the venue", "irreversible", slots=["venue", "headcount"])],
        world_1={"venue": {"quote": "Q-2026-118", "hall": "Harbour Hall"}},
        answers_1={"venue": "Harbour Hall", "event_date": "2027-03-12", "headcount": 80},
        world_2={"venue": {"quote": "Q-2026-118", "hall": "Harbour Hall"}},
        beliefs_2=[
            # The venue's quote ran out (R8), the booking tool proposes a date that has
            # passed (R9), and the runtime reports a headcount as alice's answer, which this
            # decision has her confirm in the console (R10).
            {
                "slot": "venue",
                "value": "Harbour Hall",
                "source": "tool",
                "turn": 1,
                "world_ref": {"quote": "Q-2026-118", "valid_until": "2026-11-01"},
            },
            {"slot": "event_date", "value": "2026-11-20", "source": "tool", "turn": 1},
            {"slot": "headcount", "value": 120, "source": "user", "turn": 1},
        ],
        guards={"book": {"person_confirms": True}},
    ),
]


def _classify(scenario: Scenario, task_class: TaskClass, carol: Actor, cathy: Actor) -> None:
    """Set the scenario's classes through the classifier services, as carol would.

    Classifying an unclassified slot or decision below irreversible lowers a guard, so it waits
    for a second classifier (four eyes): cathy approves each such request. Values already set
    are left alone, so running the demo again writes nothing.
    """
    reason = "demo classification"

    def settle(result: classification.ChangeResult) -> None:
        if result.outcome == "requested" and result.request is not None:
            classification.risk_change_request_approve(
                change_request=result.request, reason="demo: second classifier", actor=cathy
            )

    for decision in task_class.decisions.all():
        risk = scenario.decision_risks.get(decision.key)
        if risk is not None:
            settle(
                classification.decision_set_risk(
                    decision=decision, risk_class=risk, reason=reason, actor=carol
                )
            )
    for slot in task_class.slots.all():
        risk = scenario.slot_risks.get(slot.key)
        if risk is not None:
            settle(
                classification.slot_set_risk(slot=slot, risk_class=risk, reason=reason, actor=carol)
            )
        if slot.key in scenario.monotonic:
            settle(
                classification.slot_set_monotonic(
                    slot=slot, monotonic=True, reason=reason, actor=carol
                )
            )


def _guard(scenario: Scenario, task_class: TaskClass, carol: Actor) -> None:
    """Switch on the scenario's decision guards through the classifier services, as carol
    would (each tightens, so it takes effect at once; set already, it writes nothing)."""
    reason = "demo: show approvals and signatures"
    for decision in task_class.decisions.all():
        guard = scenario.guards.get(decision.key, {})
        if "approvals" in guard:
            required, group = guard["approvals"]
            decision_settings.decision_set_approvals(
                decision=decision,
                approvals_required=required,
                approvers=group,
                reason=reason,
                actor=carol,
            )
        if guard.get("requires_signature"):
            decision_settings.decision_set_requires_signature(
                decision=decision, requires_signature=True, reason=reason, actor=carol
            )
        if guard.get("person_confirms"):
            decision_settings.decision_set_person_confirms(
                decision=decision, person_confirms=True, reason=reason, actor=carol
            )


def _answer_everything(instance: TaskInstance, user: User, scenario: Scenario) -> None:
    for prompt in instance.prompts.blocking_open().select_related("slot"):
        value = scenario.answers_1[prompt.slot.key]
        prompt_respond(
            prompt_id=prompt.pk,
            user=user,
            action="answer",
            version=prompt.version,
            value=value,
            value_confirmation=value,
        )


def _seed_scenario(scenario: Scenario, alice: User, runtime: Actor) -> None:
    users = get_user_model().objects
    if TaskInstance.objects.filter(task_class__key=scenario.key, principal=alice).exists():
        # Already seeded: the demo is idempotent (a demo loaded before the guards gains them).
        task_class = TaskClass.objects.get(key=scenario.key)
        _guard(scenario, task_class, Actor(user=users.get(username="carol")))
        return
    # The seed registers and opens what a runtime would send, through the API's own checks.
    registration = parse(
        TaskClassIn,
        {
            "name": scenario.name,
            "slots": _registered(scenario.slots),
            "decisions": _registered(scenario.decisions),
        },
        key=scenario.key,
    )
    task_class = task_class_register(key=scenario.key, **registration, actor=runtime)
    carol = Actor(user=users.get(username="carol"))
    cathy = Actor(user=users.get(username="cathy"))
    _classify(scenario, task_class, carol, cathy)

    run_1 = instance_open(
        task_class_key=scenario.key,
        principal="alice",
        world=parse(WorldIn, {"world": scenario.world_1})["world"],
        actor=runtime,
    )
    instance_plan(instance=run_1, actor=runtime)
    _answer_everything(run_1, alice, scenario)
    if scenario.slots_added_2:
        # The runtime's next version of the task asks for more than run 1 did.
        added = parse(TaskClassIn, {"slots": _registered(scenario.slots_added_2)}, key=scenario.key)
        task_class_register(key=scenario.key, **added, actor=runtime)
        _classify(scenario, task_class, carol, cathy)
    _guard(scenario, task_class, carol)
    run_2 = instance_open(
        task_class_key=scenario.key,
        principal="alice",
        world=parse(WorldIn, {"world": scenario.world_2})["world"],
        beliefs=[parse(BeliefIn, belief) for belief in scenario.beliefs_2],
        actor=runtime,
    )
    instance_plan(instance=run_2, actor=runtime)


def demo_runtime_key() -> str:
    """A fresh demo runtime key; earlier demo keys are revoked (a key is shown only once)."""
    RuntimeAPIKey.objects.filter(runtime__name=DEMO_KEY_NAME, revoked=False).update(revoked=True)
    _, key = runtime_key_create(runtime_name=DEMO_KEY_NAME, actor=SYSTEM)
    return key


@transaction.atomic
def seed_demo() -> dict[str, Any]:
    ensure_role_groups()
    user_model = get_user_model()
    for username, password, _, groups in DEMO_USERS:
        user, created = user_model.objects.get_or_create(username=username)
        if created or not user.check_password(password):
            user.set_password(password)
        user.email = DEMO_EMAILS.get(username, user.email)
        if username in STAFF_USERS:
            user.is_staff = user.is_superuser = True
        user.save()
        for group in groups:
            if group == APPROVERS_GROUP:
                user.groups.add(Group.objects.get_or_create(name=APPROVERS_GROUP)[0])
            else:
                grant_role(user, group)
    alice = user_model.objects.get(username="alice")
    key = demo_runtime_key()
    api_key = RuntimeAPIKey.objects.get_from_key(key)
    assert isinstance(api_key, RuntimeAPIKey)
    runtime = Actor(key=api_key)
    for scenario in SCENARIOS:
        _seed_scenario(scenario, alice, runtime)
    proposals_added = seed_demo_proposals()
    return {"users": DEMO_USERS, "runtime_key": key, "proposals_added": proposals_added}
