"""``memstream trace e_…``: where one remembered turn (an episode) came from.

The episode counterpart of jobs/ops/trace.py: the stored episode (live or
archived, with what outdated it), its source event fetched from Kafka at the
lineage's position and checked by event id, the ``memory.ops`` operations that
wrote or outdated it, and the facts the same turn produced (their ids lead to
``memstream trace f_…``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from connectors.chroma_episodes import user_episodes
from connectors.chroma_memory import ChromaMemory
from connectors.kafka_io import read_topic
from jobs.ops.trace import OPS_READ_TIMEOUT_S, OpSighting, UnknownFact
from jobs.ops.trace_source import SourceFetch, fetch_source
from schemas._base import partition_key
from schemas.episodes import StoredEpisode
from schemas.hits import SearchHit
from schemas.ops import MemoryOperation, OpType
from schemas.topics import Topics

EPISODE_PREFIX = "e_"  # schemas/ids.py: episode_id


@dataclass(frozen=True)
class EpisodeTrace:
    """Everything known about one stored turn."""

    stored: StoredEpisode
    archived: bool
    source: SourceFetch
    ops: list[OpSighting]
    facts: list[SearchHit]  # versions extracted from the same turn
    notes: list[str] = field(default_factory=list)


def find_episode(episode_id: str, chroma: ChromaMemory) -> tuple[StoredEpisode, bool]:
    """The stored episode and whether it sits in the archive; raises UnknownFact."""
    namespace = chroma.namespace or ""
    for collection in chroma.client.list_collections():
        meta = collection.metadata or {}
        if meta.get("memstream_namespace") != namespace or meta.get("memstream_kind") != "episodes":
            continue
        got = collection.get(ids=[episode_id], include=["metadatas"])
        if got["ids"] and got["metadatas"]:
            user = str(got["metadatas"][0]["user"])
            found = next(
                (e for e in user_episodes(collection, user) if e.episode.episode_id == episode_id),
                None,
            )
            if found is not None:
                return found, bool(meta.get("memstream_archive"))
    raise UnknownFact(episode_id, namespace)


def episode_ops(bootstrap: str, namespace: str, stored: StoredEpisode) -> list[OpSighting]:
    """The operations on ``<ns>memory.ops`` that wrote or outdated the episode."""
    episode = stored.episode
    key = partition_key(episode.tenant_id, episode.user_id)
    sightings = []
    for record in read_topic(bootstrap, Topics(namespace).memory_ops, timeout_s=OPS_READ_TIMEOUT_S):
        if record.key != key:
            continue
        op = MemoryOperation.model_validate_json(record.value)
        written = op.op_type is OpType.UPSERT_EPISODE and op.episode is not None
        if (written and op.episode is not None and op.episode.episode_id == episode.episode_id) or (
            op.op_type is OpType.OUTDATE_EPISODE and op.target_fact_id == episode.episode_id
        ):
            sightings.append(OpSighting(record.partition, record.offset, op))
    return sorted(sightings, key=lambda s: (s.partition, s.offset))


def trace_episode(
    episode_id: str, *, bootstrap: str, topic_namespace: str, chroma: ChromaMemory
) -> EpisodeTrace:
    """Trace one episode; raises UnknownFact when no episode collection holds it."""
    stored, archived = find_episode(episode_id, chroma)
    episode = stored.episode
    source = fetch_source(bootstrap, episode.lineage, topic_namespace)
    notes: list[str] = []
    try:
        ops = episode_ops(bootstrap, topic_namespace, stored)
    except KeyError:  # read_topic's "no such topic"
        ops = []
        notes.append(f"topic {Topics(topic_namespace).memory_ops} does not exist")
    facts = [
        hit
        for archived_facts in (False, True)
        for hit in chroma.get(episode.tenant_id, episode.user_id, archived=archived_facts)
        if hit.lineage is not None and hit.lineage.event_id == episode.lineage.event_id
    ]
    facts.sort(key=lambda h: (h.predicate, h.version, h.fact_id))
    return EpisodeTrace(stored, archived, source, ops, facts, notes)


def render_episode(trace: EpisodeTrace, source_lines: list[str]) -> list[str]:
    """The trace as terminal lines; ``source_lines`` as jobs/ops/trace_render.py draws them."""
    episode = trace.stored.episode
    where = "archive" if trace.archived else "live"
    lines = [
        f"EPISODE {episode.episode_id}  {episode.tenant_id}/{episode.user_id}"
        f"  session {episode.session_id} turn {episode.turn_index}  (stored, chroma {where})",
        f"  {episode.role.value} at {episode.ts.isoformat()}: {episode.text}",
    ]
    if episode.context:
        lines.append(f"  answers: {episode.context}")
    if trace.stored.outdated:
        newer = ", ".join(trace.stored.outdated_by) or "an unknown later turn"
        lines.append(f"  outdated by {newer}")
    lines += source_lines
    lines.append(f"OPERATIONS ({len(trace.ops)}, recorded on memory.ops)")
    lines += [f"  {s.partition}/{s.offset} {s.op.op_type.value} {s.op.op_id}" for s in trace.ops]
    lines.append(f"FACTS FROM THIS TURN ({len(trace.facts)})")
    lines += [f"  {h.fact_id} v{h.version} {h.statement()}" for h in trace.facts]
    lines += [f"note: {n}" for n in trace.notes]
    return lines


def episode_json(trace: EpisodeTrace, source: dict[str, Any]) -> dict[str, Any]:
    """The trace as one JSON document; ``source`` as jobs/ops/trace_render.py builds it."""
    return {
        "episode": trace.stored.episode.model_dump(mode="json", exclude={"vector"}),
        "archived": trace.archived,
        "outdated": trace.stored.outdated,
        "outdated_by": list(trace.stored.outdated_by),
        "source": source,
        "ops": [
            {
                "partition": s.partition,
                "offset": s.offset,
                **s.op.model_dump(mode="json", exclude={"episode": {"vector"}}),
            }
            for s in trace.ops
        ],
        "facts": [h.model_dump(mode="json") for h in trace.facts],
        "notes": trace.notes,
    }
