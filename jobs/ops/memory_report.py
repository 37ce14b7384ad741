"""The short per-user memory report ``memstream run`` prints: what the pipeline remembered.

Read through the connectors' readers only: current facts and version chains
from the episodic tier (Chroma keeps every version), which of them were promoted
to the semantic tier (Neo4j), the pending items and the working memory (Redis).
Negated facts are printed as negations ("NOT"), never as the positive.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rich.console import Group
from rich.text import Text
from rich.tree import Tree

from connectors.protocols import EpisodicReader, SemanticReader, WorkingMemoryReader
from schemas._base import Scalar
from schemas.hits import SearchHit
from schemas.memory import Polarity
from schemas.ops import WorkingTurn

# Characters of a turn's text shown in the working-memory lines: one terminal line.
TURN_CHARS = 70


@dataclass(frozen=True)
class UserRef:
    """A user to report on and the sessions whose working memory to show."""

    tenant_id: str
    user_id: str
    sessions: tuple[str, ...] = ()


@dataclass(frozen=True)
class UserMemory:
    """Everything the report shows about one user."""

    user: UserRef
    current: list[SearchHit]
    promoted: frozenset[str]  # fact ids of the current versions held in Neo4j
    chains: list[list[SearchHit]]  # chains with more than one version, oldest first
    pending: list[SearchHit]
    statuses: dict[str, Scalar]
    turns: dict[str, list[WorkingTurn]] = field(default_factory=dict)


# A reader of each tier, in this order: ``jobs.stores.open_stores`` gives one
# (its ``Stores``), ``memstream.testing.InMemoryStores`` another.
Readers = tuple[WorkingMemoryReader, EpisodicReader, SemanticReader]


def users_in_events(lines: Iterable[bytes]) -> list[UserRef]:
    """The users (and their sessions) of JSON-lines input events, in first-seen order."""
    sessions: dict[tuple[str, str], list[str]] = {}
    for line in lines:
        try:
            event = json.loads(line)
            key = (str(event["tenant_id"]), str(event["user_id"]))
        except (ValueError, KeyError, TypeError):
            continue  # a line the pipeline dead-letters names nobody
        known = sessions.setdefault(key, [])
        session = event.get("session_id")
        if session and session not in known:
            known.append(str(session))
    return [UserRef(t, u, tuple(s)) for (t, u), s in sessions.items()]


def users_in_files(paths: Iterable[Path]) -> list[UserRef]:
    """:func:`users_in_events` over every line of several JSON-lines files."""
    return users_in_events(line for path in paths for line in path.read_bytes().splitlines())


def read_user(
    user: UserRef,
    working: WorkingMemoryReader,
    episodic: EpisodicReader,
    semantic: SemanticReader,
    at: datetime,
) -> UserMemory:
    """Read one user's memory from the three tiers as it stands at ``at``."""
    tenant, uid = user.tenant_id, user.user_id
    versions = episodic.get(tenant, uid)
    by_chain: dict[str, list[SearchHit]] = {}
    for hit in versions:
        by_chain.setdefault(hit.chain_id, []).append(hit)
    return UserMemory(
        user=user,
        current=sorted(
            (h for h in versions if h.is_current(at)),
            key=lambda h: (h.subject, h.predicate, h.object),
        ),
        promoted=frozenset(h.fact_id for h in semantic.facts_as_of(tenant, uid, at)),
        chains=[
            sorted(chain, key=lambda h: h.version)
            for _, chain in sorted(by_chain.items())
            if len(chain) > 1
        ],
        pending=working.pending(tenant, uid, at),
        statuses=working.statuses(tenant, uid),
        turns={s: working.recent_turns(tenant, uid, s) for s in user.sessions},
    )


def statement(hit: SearchHit) -> Text:
    """The triple, a negation printed as one."""
    text = Text(f"{hit.subject} ")
    if hit.polarity is Polarity.NEGATED:
        text.append("NOT ", style="bold red")
    text.append(f"{hit.predicate} {hit.object}")
    return text


def _day(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


def _validity(hit: SearchHit, at: datetime) -> str:
    """How a version ended: closed by a newer one, expired (TTL), or still current."""
    if hit.valid_until is not None and hit.valid_until <= at:
        return f"until {_day(hit.valid_until)}"
    if hit.expires_at is not None and hit.expires_at <= at:
        return f"expired {_day(hit.expires_at)}"
    return "current"


def render(memory: UserMemory, at: datetime) -> Tree:
    """One user's report as a rich tree."""
    user = memory.user
    root = Tree(Text(f"{user.tenant_id} / {user.user_id}", style="bold"))
    facts = root.add(f"current facts ({len(memory.current)})")
    for hit in memory.current:
        line = statement(hit)
        line.append(f"  v{hit.version}", style="dim")
        if hit.fact_id in memory.promoted:
            line.append("  [semantic]", style="cyan")
        if hit.expires_at is not None:
            line.append(f"  expires {_day(hit.expires_at)}", style="dim")
        facts.add(line)
    chains = root.add(f"version chains ({len(memory.chains)})")
    for chain in memory.chains:
        line = Text(f"{chain[0].subject} {chain[0].predicate}: ")
        for i, hit in enumerate(chain):
            if i:
                line.append(" → ")
            neg = "NOT " if hit.polarity is Polarity.NEGATED else ""
            current = hit.is_current(at)
            line.append(f"{neg}{hit.object}", style="bold" if current else "")
            line.append(f" (v{hit.version}, {_validity(hit, at)})", style="dim")
        chains.add(line)
    pending = root.add(f"pending confirmation ({len(memory.pending)})")
    for hit in memory.pending:
        line = statement(hit)
        line.append(f"  — {hit.extra.get('reason') or 'low confidence'}", style="dim")
        pending.add(line)
    working = root.add("working memory")
    for name, value in sorted(memory.statuses.items()):
        working.add(f"status {name} = {value}")
    for session, turns in memory.turns.items():
        branch = working.add(f"session {session}: last {len(turns)} turn(s)")
        for turn in turns:
            shown = turn.text if len(turn.text) <= TURN_CHARS else turn.text[: TURN_CHARS - 1] + "…"
            intent = f" [{turn.intent}]" if turn.intent else ""
            branch.add(Text(f"#{turn.turn_index} {turn.role}{intent}: {shown}"))
    return root


def report(users: Iterable[UserRef], readers: Readers, at: datetime) -> Group:
    """The report of every user, ready for ``Console.print``."""
    return Group(*(render(read_user(u, *readers, at), at) for u in users))
