"""The prompt-ready memory block an agent pastes into its prompt.

Recalled facts are grouped by relevance, relative to the best hit of this
recall (totals are not comparable across queries: a short query scores lower
cosines than a long one):

- **key** — within KEY_SHARE of the best total: what the answer should rest on;
- **background** — within BACKGROUND_SHARE: likely useful context;
- **reference** — the rest of the k recalled: there if needed.

Every line names its source (Kafka topic/partition/offset, event id and turn
id when known), the tier it came from and when it started to hold; a version
no longer current says until when; a pending item says it is unconfirmed.
Negations stay negations: lines use ``RecallHit.statement``. Facts come
first, then the turns themselves ("From the conversations": the episodes
recalled and the turns the facts were read from).
"""

from __future__ import annotations

from collections.abc import Sequence

from schemas.memory import MemoryState
from schemas.query import RecallHit

# Our choice (docs/architecture.md and issue 6 give no numbers): a hit within 80% of the
# best total trails it by less than the time weight (0.1) or a third of the
# keyword weight can move a score; at half the best it still shares most signal.
KEY_SHARE = 0.8
BACKGROUND_SHARE = 0.5
GROUPS = ("Key", "Background", "Reference")
EMPTY = "No stored memory about this user matches the query."
EPISODES = "From the conversations"


def source_of(hit: RecallHit) -> str:
    """``dialogue.events/0/42 event e-1 turn t-3`` (what a human needs to trace it)."""
    if hit.lineage is None:
        return "source unknown"
    where = f"{hit.lineage.trace_id} event {hit.lineage.event_id}"
    return f"{where} turn {hit.lineage.turn_id}" if hit.lineage.turn_id else where


def line_of(hit: RecallHit) -> str:
    """One bullet: the statement, its state and validity, then its source."""
    notes = []
    if hit.state is MemoryState.PENDING:
        notes.append("unconfirmed")
    since = hit.valid_from.date().isoformat()
    if hit.valid_until is not None:
        notes.append(f"valid {since} to {hit.valid_until.date().isoformat()}")
    else:
        notes.append(f"since {since}")
    return f"- {hit.statement} ({'; '.join(notes)}) [{hit.tier.value}: {source_of(hit)}]"


def group(hits: Sequence[RecallHit]) -> dict[str, list[RecallHit]]:
    """Hits by group name, each group in the given (ranked) order."""
    groups: dict[str, list[RecallHit]] = {name: [] for name in GROUPS}
    totals = [h.score.total if h.score else 0.0 for h in hits]
    best = max(totals, default=0.0)
    for hit, total in zip(hits, totals, strict=True):
        if best > 0 and total >= KEY_SHARE * best:
            groups["Key"].append(hit)
        elif best > 0 and total >= BACKGROUND_SHARE * best:
            groups["Background"].append(hit)
        else:
            groups["Reference"].append(hit)
    return groups


def episode_line(hit: RecallHit) -> str:
    """One bullet for a turn as said: when, what, and its source."""
    said = hit.valid_from.date().isoformat()
    note = "; a later turn changed this" if hit.outdated else ""
    return f"- {said}: {hit.statement} ({'outdated' + note if note else 'said'}) [{source_of(hit)}]"


def source_line(hit: RecallHit) -> str:
    """One bullet for the turn a fact was read from, as said (``hit.source``)."""
    at = hit.source_at or hit.valid_from
    where = hit.source_lineage or hit.lineage
    trace = source_of(hit.model_copy(update={"lineage": where}))
    return f"- {at.date().isoformat()}: {hit.source} (said; holds: {hit.statement}) [{trace}]"


def turns_said(hits: Sequence[RecallHit]) -> list[str]:
    """The turns behind the hits in rank order: each episode, and each fact's source turn, once.

    A fact that stood for its turn in the ranking (one slot per turn,
    docs/recall.md) states only part of it ("user has family member sister"
    for "For my sister's birthday I got her a yellow dress"); the turn itself
    is what an agent answers from.
    """
    lines, seen = [], set()
    for hit in hits:
        if hit.hit_kind == "episode" and hit.statement not in seen:
            seen.add(hit.statement)
            lines.append(episode_line(hit))
        elif hit.source and hit.source not in seen:
            seen.add(hit.source)
            lines.append(source_line(hit))
    return lines


def render_context(query: str, hits: Sequence[RecallHit]) -> str:
    """The memory block for ``query``: a heading, the facts by group, then the turns said.

    Facts come first (what the pipeline established, negations as negations),
    then the turns (what was said, in rank order: the episodes and the
    facts' source turns) as the evidence behind them and whatever no fact holds.
    """
    heading = f'Memory about this user relevant to "{" ".join(query.split())}":'
    if not hits:
        return f"{heading}\n{EMPTY}"
    parts = [heading]
    facts = [h for h in hits if h.hit_kind == "fact"]
    for name, members in group(facts).items():
        if members:
            parts.append(f"{name}:")
            parts.extend(line_of(hit) for hit in members)
    said = turns_said(hits)
    if said:
        parts.append(f"{EPISODES}:")
        parts.extend(said)
    return "\n".join(parts)
