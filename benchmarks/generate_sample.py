"""Generate the bundled sample stream in memstream/data/sample/ (deterministic).

    python benchmarks/generate_sample.py [--out DIR]

Three tenants (a fibre ISP, a food-delivery service, a travel agency), eight
users and 28 hand-written sessions of customer-service dialogue carrying facts
(phones, addresses, preferences, appointments), negations in varied forms,
corrections, hedges and chit-chat; CRM webhooks; user actions around the
sessions. The hand-written part is in memstream/data/sample/script/; this module adds
ids, event times and browsing noise from a fixed seed. Same script, same seed,
same bytes: the output is committed and a unit test regenerates it and compares.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memstream.data import sample_dir
from schemas.events import CrmWebhook, DialogueEvent, UserAction
from schemas.topics import CRM_WEBHOOKS, DIALOGUE_EVENTS, USER_ACTIONS

OUT_DIR = sample_dir()
# The hand-written source: dialogues, CRM changes and key actions (the format
# of each is described at the top of its file).
SCRIPT_DIR = OUT_DIR / "script"
# Monday 2 March 2026; all event times are offsets from it.
EPOCH = datetime(2026, 3, 2, tzinfo=UTC)
SEED = 20260302

TENANT_OF = {
    "alice": "northwind-fiber",
    "bob": "northwind-fiber",
    "carol": "northwind-fiber",
    "dana": "greenleaf-eats",
    "eli": "greenleaf-eats",
    "mei": "greenleaf-eats",
    "gabe": "bluesky-travel",
    "hana": "bluesky-travel",
}
USER_ID = {name: f"u-{name}" for name in TENANT_OF}
CRM_SOURCE = {
    "northwind-fiber": "salesforce",
    "greenleaf-eats": "hubspot",
    "bluesky-travel": "zoho",
}
PAGES = {
    "northwind-fiber": ["plans", "installation", "faq/outages", "account/billing", "router-setup"],
    "greenleaf-eats": ["menu", "menu/vegan", "menu/new", "orders", "account/addresses"],
    "bluesky-travel": ["flights", "hotels", "trips/current", "insurance", "account/profile"],
}


@dataclass(frozen=True)
class Session:
    """One scripted conversation, turns as (role, text)."""

    user: str
    day: int
    start: str
    channel: str
    turns: tuple[tuple[str, str], ...]


def read_script(name: str) -> str:
    """A file of SCRIPT_DIR without its comment lines."""
    text = (SCRIPT_DIR / name).read_text(encoding="utf-8")
    return "\n".join(line for line in text.splitlines() if not line.startswith("# "))


def parse_dialogues(script: str) -> list[Session]:
    """Split the dialogue script into sessions."""
    sessions = []
    for block in script.strip().split("## ")[1:]:
        header, *lines = block.strip().splitlines()
        user, *fields = header.split()
        attrs = dict(field.split("=", 1) for field in fields)
        turns: list[tuple[str, str]] = []
        for line in lines:
            if line.startswith(" "):
                role, text = turns.pop()
                turns.append((role, f"{text} {line.strip()}"))
            else:
                prefix, text = line.split(": ", 1)
                turns.append(({"U": "user", "A": "agent", "S": "system"}[prefix], text))
        sessions.append(
            Session(user, int(attrs["day"]), attrs["start"], attrs["channel"], tuple(turns))
        )
    return sessions


def _rows(table: str) -> list[str]:
    """The logical rows of a table: indented lines continue the row above."""
    rows: list[str] = []
    for line in table.strip("\n").splitlines():
        if line.startswith("   "):
            rows[-1] += " " + line.strip()
        else:
            rows.append(line.strip())
    return rows


def _at(day: int, hhmm: str) -> datetime:
    hours, minutes = (int(x) for x in hhmm.split(":"))
    return EPOCH + timedelta(days=day, hours=hours, minutes=minutes)


def _lang(text: str) -> str:
    return "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"


def dialogue_events(rng: random.Random) -> list[DialogueEvent]:
    """Every scripted turn, with increasing turn index and event time per session."""
    events = []
    numbers: dict[str, int] = {}
    for session in parse_dialogues(read_script("dialogues.txt")):
        numbers[session.user] = numbers.get(session.user, 0) + 1
        session_id = f"s-{session.user}-{numbers[session.user]:02d}"
        ts = _at(session.day, session.start)
        for index, (role, text) in enumerate(session.turns):
            # Users type slower than agents answer; gaps in seconds.
            ts += timedelta(seconds=rng.randint(20, 90) if role == "user" else rng.randint(5, 40))
            events.append(
                DialogueEvent(
                    event_id=f"dlg-{session_id}-{index:02d}",
                    tenant_id=TENANT_OF[session.user],
                    user_id=USER_ID[session.user],
                    session_id=session_id,
                    turn_index=index,
                    role=role,
                    text=text,
                    ts=ts,
                    lang=_lang(text),
                    metadata={"channel": session.channel},
                )
            )
    return events


@dataclass(frozen=True)
class _Action:
    ts: datetime
    user: str
    session_id: str | None
    action_type: str
    target_id: str
    duration_ms: int | None = None
    properties: tuple[tuple[str, Any], ...] = ()


def _browsing(rng: random.Random, sessions: dict[str, list[DialogueEvent]]) -> list[_Action]:
    """Views, clicks and searches before each session, and a rating after it."""
    actions = []
    for session_id, turns in sessions.items():
        user = turns[0].user_id.removeprefix("u-")
        pages = PAGES[turns[0].tenant_id]
        ts = turns[0].ts - timedelta(seconds=rng.randint(300, 900))
        for _ in range(rng.randint(2, 4)):
            kind = rng.choice(["view", "view", "scroll", "click", "search"])
            target = f"page/{rng.choice(pages)}"
            actions.append(_Action(ts, user, session_id, kind, target, rng.randint(800, 45_000)))
            ts += timedelta(seconds=rng.randint(30, 200))
        rated = turns[-1].ts + timedelta(seconds=rng.randint(10, 60))
        stars = (("stars", rng.randint(3, 5)),)
        actions.append(
            _Action(rated, user, session_id, "rate", f"session/{session_id}", None, stars)
        )
    return actions


def user_actions(rng: random.Random, dialogue: list[DialogueEvent]) -> list[UserAction]:
    """Browsing around the sessions plus the scripted purchases and confirmations."""
    sessions: dict[str, list[DialogueEvent]] = {}
    for event in dialogue:
        sessions.setdefault(event.session_id, []).append(event)
    actions = _browsing(rng, sessions)
    for row in _rows(read_script("actions.txt")):
        day, hhmm, user, kind, target, props = row.split(None, 5)
        ts = _at(int(day), hhmm)
        # The action belongs to the user's latest session that began before it.
        session_id = max(
            (
                s
                for s, turns in sessions.items()
                if turns[0].user_id == USER_ID[user] and turns[0].ts <= ts
            ),
            key=lambda s: sessions[s][0].ts,
            default=None,
        )
        properties = tuple(json.loads(props).items())
        actions.append(_Action(ts, user, session_id, kind, target, None, properties))
    actions.sort(key=lambda action: (action.ts, action.target_id))
    return [
        UserAction(
            event_id=f"act-{number:04d}",
            tenant_id=TENANT_OF[action.user],
            user_id=USER_ID[action.user],
            session_id=action.session_id,
            action_type=action.action_type,
            target_id=action.target_id,
            duration_ms=action.duration_ms,
            properties=dict(action.properties),
            ts=action.ts,
        )
        for number, action in enumerate(actions, start=1)
    ]


def crm_webhooks() -> list[CrmWebhook]:
    """The CRM changes of script/crm.txt, in time order."""
    events = []
    for row in _rows(read_script("crm.txt")):
        head, *changes = row.split(" | ")
        day, hhmm, user, entity = head.split()
        parsed = {}
        for change in changes:
            name, values = change.split(": ", 1)
            old, new = values.split(" -> ")
            parsed[name] = {"old": json.loads(old), "new": json.loads(new)}
        events.append((_at(int(day), hhmm), user, entity, parsed))
    events.sort(key=lambda event: event[0])
    return [
        CrmWebhook(
            event_id=f"crm-{number:04d}",
            tenant_id=TENANT_OF[user],
            user_id=USER_ID[user],
            source=CRM_SOURCE[TENANT_OF[user]],
            entity=entity,
            changes=changes,
            ts=ts,
        )
        for number, (ts, user, entity, changes) in enumerate(events, start=1)
    ]


def generate(out_dir: Path = OUT_DIR) -> dict[str, int]:
    """Write one JSON-lines file per input topic; return the event count of each."""
    rng = random.Random(SEED)
    dialogue = dialogue_events(rng)
    streams: dict[str, list[Any]] = {
        DIALOGUE_EVENTS: sorted(dialogue, key=lambda e: (e.ts, e.event_id)),
        USER_ACTIONS: user_actions(rng, dialogue),
        CRM_WEBHOOKS: crm_webhooks(),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    for topic, events in streams.items():
        lines = "".join(event.model_dump_json() + "\n" for event in events)
        (out_dir / f"{topic}.jsonl").write_text(lines, encoding="utf-8")
    return {topic: len(events) for topic, events in streams.items()}


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output directory")
    counts = generate(parser.parse_args().out)
    print(", ".join(f"{topic}: {n}" for topic, n in counts.items()))


if __name__ == "__main__":
    main()
