"""One evaluation cycle: find which rules hold, then open, repeat and resolve alerts and send notices.

Reads, whatever the number of rules and streams: the enabled rules, the firing alerts,
the streams watched, their progress (one grouped query, partitions.progress), at most
one query per rule kind (conditions.py), the active silences, and the channels of the
rules that send something this cycle. Writes happen only where something changed: an
alert opens, is sent again, or resolves.

Two evaluations at once stay correct: an alert opens under a unique constraint (one
FIRING per rule and stream), and every later change is a conditional UPDATE whose row
count says which evaluation sends the notice.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NamedTuple, Protocol

from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from partitions.progress import progress_of
from streams.models import Stream

from .conditions import KINDS, PROGRESS_KINDS, Finding, Scope
from .models import Alert, AlertRule, DeliveryAttempt, Silence

E = DeliveryAttempt.Event
# What an evaluation reads of rules and streams: a cycle over 1,000 of each builds 2,000
# model instances, and every other column (a stream has nine timestamps) costs parsing.
RULE_FIELDS = ("id", "name", "kind", "stream_id", "threshold_seconds", "for_minutes", "retention_hours",
               "repeat_minutes")  # fmt: skip
# source_kind and connection: the retention rule asks the stream's kind for its retention.
STREAM_FIELDS = ("id", "name", "state", "state_reason", "state_changed_at", "paused_at", "end_at",
                 "consecutive_failures", "next_retry_at", "source_kind", "connection")  # fmt: skip


class Open(NamedTuple):
    """A FIRING alert as the evaluation needs it."""

    pk: int
    rule_id: int
    stream_id: int
    last_sent_at: datetime | None
    silenced: bool


class Mutes:
    """The active silences, indexed: a rule, a stream, or a rule on a stream."""

    def __init__(self, silences: list[Silence]) -> None:
        self.keys = {(s.rule_id, s.stream_id) for s in silences}

    def cover(self, rule_id: int, stream_id: int) -> bool:
        """Return True if a silence mutes the rule's alert on the stream."""
        return bool({(rule_id, None), (None, stream_id), (rule_id, stream_id)} & self.keys)


class Outbox(Protocol):
    """Where a notice goes once decided: tasks.CeleryOutbox queues a delivery after the commit."""

    def send(self, alert_id: int, channel_id: int, event: str, notice: str) -> None: ...


@dataclass
class Cycle:
    """What one evaluation did, for beat's log and the benchmark."""

    rules: int = 0
    holding: int = 0
    fired: int = 0
    repeated: int = 0
    resolved: int = 0
    silenced: int = 0
    notices: list[tuple[int, int, str]] = field(default_factory=list)  # (alert, rule, event)

    def counts(self) -> dict[str, int]:
        """Return the figures as a JSON-friendly dict."""
        return {**{k: v for k, v in self.__dict__.items() if k != "notices"}, "notices": len(self.notices)}


def load_scope(rules: list[AlertRule], now: datetime) -> Scope:
    """Return the streams the rules watch and, for kinds that need it, their progress (two queries)."""
    streams = Stream.objects.only(*STREAM_FIELDS)
    if not any(rule.stream_id is None for rule in rules):
        streams = streams.filter(pk__in={rule.stream_id for rule in rules})
    by_id = {stream.pk: stream for stream in streams}
    scope = Scope(now, by_id, {})
    wanting = {s.pk: s for rule in rules if rule.kind in PROGRESS_KINDS for s in scope.targets(rule)}
    return Scope(now, by_id, progress_of(wanting.values(), now) if wanting else {})


def find(rules: list[AlertRule], scope: Scope) -> dict[tuple[int, int], Finding]:
    """Return {(rule id, stream id): finding} of every rule that holds, one kind at a time."""
    by_kind: dict[str, list[AlertRule]] = defaultdict(list)
    for rule in rules:
        by_kind[rule.kind].append(rule)
    found: dict[tuple[int, int], Finding] = {}
    for kind, kind_rules in by_kind.items():
        found.update(KINDS[kind](kind_rules, scope))
    return found


def load_rules(**filters) -> dict[int, AlertRule]:
    """Return {id: rule} with `sends`: whether the rule has an enabled channel (one query)."""
    links = AlertRule.channels.through.objects.filter(alertrule_id=OuterRef("pk"), channel__enabled=True)
    rules = AlertRule.objects.filter(**filters).only(*RULE_FIELDS).annotate(sends=Exists(links))
    return {rule.pk: rule for rule in rules}


def evaluate(outbox: Outbox, now: datetime | None = None) -> Cycle:
    """Evaluate every enabled rule against the stored data and act on what changed."""
    now = now or timezone.now()
    rules = load_rules(enabled=True)
    fields = ("pk", "rule_id", "stream_id", "last_sent_at", "silenced")
    rows = Alert.objects.filter(state=Alert.State.FIRING).order_by().values_list(*fields)
    firing = {(row[1], row[2]): Open(*row) for row in rows}
    cycle = Cycle(rules=len(rules))
    if not rules and not firing:
        return cycle
    findings = find(list(rules.values()), load_scope(list(rules.values()), now)) if rules else {}
    cycle.holding = len(findings)
    orphans = {rule_id for rule_id, _ in firing} - set(rules)  # disabled: their alerts resolve
    everyone = {**rules, **load_rules(pk__in=orphans)} if orphans else rules
    mutes = Mutes(list(Silence.objects.filter(starts_at__lte=now, ends_at__gt=now)))
    plans = plan(findings, firing, everyone, mutes, now)
    sending = {p.rule.pk for p in plans if p.event}
    senders = channels_of(sending) if sending else {}
    with transaction.atomic():
        apply_all(plans, senders, outbox, cycle, now)
    return cycle


@dataclass
class Plan:
    """What to do about one (rule, stream): open, keep or resolve its alert, and which notice to send."""

    rule: AlertRule
    stream_id: int
    alert: Open | None
    finding: Finding | None
    muted: bool
    event: str | None


def decide(alert: Open | None, finding: Finding | None, rule: AlertRule, muted: bool, now) -> str | None:
    """Return the notice due: firing when it opens (or a silence ended), repeat when due, resolved.

    None while muted, and for a rule with no enabled channel (nothing to send it to).
    """
    if muted or not getattr(rule, "sends", True):
        return None
    if finding is None:
        return E.RESOLVED if alert is not None and alert.last_sent_at is not None else None
    if alert is None or alert.last_sent_at is None:
        return E.FIRING
    if rule.repeat_minutes and now - alert.last_sent_at >= timedelta(minutes=rule.repeat_minutes):
        return E.REPEAT
    return None


def plan(findings, firing, rules, mutes: Mutes, now) -> list[Plan]:
    """Pair every finding and every firing alert into a plan."""
    keys = set(findings) | set(firing)
    plans = []
    for rule_id, stream_id in sorted(keys):
        alert, finding = firing.get((rule_id, stream_id)), findings.get((rule_id, stream_id))
        rule, muted = rules[rule_id], mutes.cover(rule_id, stream_id)
        plans.append(Plan(rule, stream_id, alert, finding, muted, decide(alert, finding, rule, muted, now)))
    return plans


def channels_of(rule_ids: set[int]) -> dict[int, list[int]]:
    """Return {rule id: [enabled channel ids]} (one query)."""
    links = AlertRule.channels.through.objects.filter(alertrule_id__in=rule_ids, channel__enabled=True)
    found: dict[int, list[int]] = defaultdict(list)
    for rule_id, channel_id in links.values_list("alertrule_id", "channel_id"):
        found[rule_id].append(channel_id)
    return found


def apply_all(plans: list[Plan], senders: dict, outbox: Outbox, cycle: Cycle, now: datetime) -> None:
    """Apply every plan: the new alerts in one INSERT, then each change to an open alert."""
    opens = [p for p in plans if p.alert is None]
    for p, alert in zip(opens, _open_many(opens, senders, now), strict=True):
        cycle.fired += alert is not None
        _notify(p, alert, senders.get(p.rule.pk, []), outbox, cycle)
    for p in plans:
        if p.alert is not None:
            apply(p, senders.get(p.rule.pk, []), outbox, cycle, now)


def apply(p: Plan, channels: list[int], outbox: Outbox, cycle: Cycle, now: datetime) -> None:
    """Write the plan's change; send its notice to every channel if this evaluation won the change."""
    sending = bool(p.event and channels)
    if p.alert is None:
        alert = _open_one(_new_alert(p, sending, now))
        cycle.fired += alert is not None
    elif p.finding is None:
        won = Alert.objects.filter(pk=p.alert.pk, state=Alert.State.FIRING).update(
            state=Alert.State.RESOLVED, resolved_at=now, silenced=p.muted
        )
        alert = p.alert if won else None
        cycle.resolved += bool(won)
    else:
        alert = _keep(p, sending, now)
        cycle.repeated += alert is not None and p.event == E.REPEAT
    _notify(p, alert, channels, outbox, cycle)


def _notify(p: Plan, alert, channels: list[int], outbox: Outbox, cycle: Cycle) -> None:
    """Send the plan's notice to every channel, if there is one and this evaluation made the change."""
    cycle.silenced += p.muted and p.finding is not None
    if alert is None or not (p.event and channels):
        return
    for channel_id in channels:
        outbox.send(alert.pk, channel_id, p.event, str(uuid.uuid4()))
    cycle.notices.append((alert.pk, p.rule.pk, p.event))


def _new_alert(p: Plan, sending: bool, now: datetime) -> Alert:
    return Alert(
        rule_id=p.rule.pk, stream_id=p.stream_id, kind=p.rule.kind, summary=p.finding.summary[:300],
        evidence=p.finding.evidence, silenced=p.muted, fired_at=now,
        last_sent_at=now if sending else None, notices=int(sending),
    )  # fmt: skip


def _open_many(plans: list[Plan], senders: dict, now: datetime) -> list[Alert | None]:
    """Create the plans' FIRING alerts in one INSERT; one at a time if another evaluation got there first."""
    rows = [_new_alert(p, bool(p.event and senders.get(p.rule.pk)), now) for p in plans]
    if not rows:
        return []
    try:
        with transaction.atomic():
            return Alert.objects.bulk_create(rows)
    except IntegrityError:  # some already FIRING (alert_one_firing): open the others
        return [_open_one(row) for row in rows]


def _open_one(row: Alert) -> Alert | None:
    """Create one FIRING alert; None if another evaluation opened it first."""
    try:
        with transaction.atomic():
            row.save(force_insert=True)
            return row
    except IntegrityError:
        return None


def _keep(p: Plan, sending: bool, now: datetime) -> Alert | None:
    """Send a held alert again if due (its evidence refreshed); return it if this evaluation sends."""
    alert = p.alert
    if not sending:
        if alert.silenced != p.muted:
            Alert.objects.filter(pk=alert.pk, state=Alert.State.FIRING).update(silenced=p.muted)
        return None
    won = Alert.objects.filter(pk=alert.pk, state=Alert.State.FIRING, last_sent_at=alert.last_sent_at).update(
        last_sent_at=now, notices=F("notices") + 1, silenced=False,
        summary=p.finding.summary[:300], evidence=p.finding.evidence,
    )  # fmt: skip
    return alert if won else None
