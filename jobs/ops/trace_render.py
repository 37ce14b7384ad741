"""How ``memstream trace`` shows a :class:`~jobs.ops.trace.Trace`: plain text lines or JSON.

Pure functions of the trace, so the layout is tested without services. Every
section says where its content comes from: *stored* (read from Neo4j/Chroma),
*fetched* (read from Kafka), *recorded* (written by the reviewer into the
operation's record on ``memory.ops``) or *recomputed* (the pure stages run again
on the fetched event).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from jobs.ops.trace import OpSighting, Trace
from jobs.ops.trace_decisions import Decisions
from jobs.ops.trace_source import SourceFetch
from schemas.facts import ExtractedFact
from schemas.hits import SearchHit
from schemas.memory import MemoryRecord, ReviewStage
from schemas.ops import OpType

_INDENT = "  "


def _when(value: datetime | None) -> str:
    return value.isoformat() if value is not None else "open"


def superseded_by(chain: list[SearchHit], fact_id: str) -> str | None:
    """The id of the version that closed ``fact_id`` (the one naming it in ``supersedes``)."""
    return next((h.fact_id for h in chain if h.supersedes == fact_id), None)


def latest_record(ops: list[OpSighting]) -> MemoryRecord | None:
    """The fact as the last operation that wrote it describes it (a close sets valid_until)."""
    records = [s.op.record for s in ops if s.op.record is not None]
    return records[-1] if records else None


def _fact_lines(trace: Trace) -> list[str]:
    fact, record = trace.fact, latest_record(trace.ops)
    negated = "NOT " if fact.polarity.value == "negated" else ""
    lines = [
        f"FACT {fact.fact_id}  (stored in {', '.join(trace.found_in)})",
        f"{_INDENT}tenant {fact.tenant_id}  user {fact.user_id}  session {fact.session_id or '-'}",
        f"{_INDENT}triple ({fact.subject}, {negated}{fact.predicate}, {fact.object})"
        f"  polarity {fact.polarity.value}  kind {fact.kind.value}  version {fact.version}",
        f"{_INDENT}valid {_when(fact.valid_from)} -> {_when(fact.valid_until)}"
        f"  expires {_when(fact.expires_at)}",
    ]
    if record is not None:
        tiers = ", ".join(t.value for t in record.tiers) or "-"
        lines.append(
            f"{_INDENT}confidence {record.confidence:.2f}  tier {tiers}  state {record.state.value}"
            f"  confirmations {record.confirmations}  (recorded)"
        )
    elif "confidence" in fact.extra:
        lines.append(
            f"{_INDENT}confidence {float(fact.extra['confidence'] or 0):.2f}"
            f"  tier {fact.tier.value}  state {fact.extra.get('state')}  (stored)"
        )
    lines.append(f"{_INDENT}outcome {outcome(trace)}")
    return lines


def outcome(trace: Trace) -> str:
    """The review's verdict in a few words: the gate's decision, then what became of it."""
    written = [
        s.op.record
        for s in trace.ops
        if s.op.record is not None and s.op.op_type is not OpType.CLOSE_FACT
    ]
    gate = [r.decision for r in written[0].review if r.stage is ReviewStage.HITL] if written else []
    parts = [f"{gate[0]} (recorded)" if gate else "review not recorded"]
    closer = superseded_by(trace.chain, trace.fact.fact_id)
    if closer is not None:
        parts.append(f"superseded by {closer}")
    elif trace.fact.valid_until is not None:
        parts.append(f"closed at {_when(trace.fact.valid_until)}")
    if written and written[-1].merged_from:
        parts.append(f"merged from {', '.join(written[-1].merged_from)}")
    return ", ".join(parts)


def source_lines(source: SourceFetch) -> list[str]:
    """The fetched source record, as the fact and episode traces both print it."""
    lineage = source.lineage
    status = "verified" if source.problem is None else "NOT VERIFIED"
    lines = [
        f"SOURCE {source.topic}/{lineage.partition}/{lineage.offset}  event {lineage.event_id}"
        f"  [{status}] (fetched from Kafka)",
    ]
    if source.log_start is not None:
        lines.append(f"{_INDENT}log offsets [{source.log_start}, {source.log_end})")
    if source.timestamp_ms is not None:
        stamp = datetime.fromtimestamp(source.timestamp_ms / 1000, UTC)
        lines.append(f"{_INDENT}record timestamp {stamp.isoformat()}")
    if source.problem is not None:
        lines.append(f"{_INDENT}problem: {source.problem}")
    if source.value is not None:
        key = source.key.decode("utf-8", "replace") if source.key is not None else None
        lines.append(f"{_INDENT}key {key}")
        lines.append(f"{_INDENT}{source.value.decode('utf-8', 'replace')}")
    return lines


def _candidate(fact: ExtractedFact, marker: str) -> str:
    span = fact.source_span
    where = f'[{span.start}:{span.end}] "{span.text}"' if span is not None else "(no span)"
    return (
        f"{_INDENT * 2}{marker} ({fact.subject}, {fact.predicate}, {fact.object}) "
        f"{fact.polarity.value} {fact.kind.value} conf {fact.confidence:.2f} "
        f"by {fact.asserted_by.value}  {where}"
    )


def _decision_lines(decisions: Decisions | None) -> list[str]:
    if decisions is None:
        return [f"{_INDENT}parse/extract: not recomputed (no verified source event)"]
    lines = []
    if decisions.parsed is not None:
        parsed = decisions.parsed
        lines.append(
            f"{_INDENT}parse (recomputed): role {parsed.role.value}  intent {parsed.intent.value}"
            f"  cues {parsed.memory_cues or '-'}  chit-chat {parsed.is_chit_chat}"
        )
        lines += [
            f"{_INDENT * 2}[{s.start}:{s.end}] {s.intent.value}: {s.text}" for s in parsed.sentences
        ]
    context = f", after {decisions.context_turns} earlier turn(s) of the session"
    lines.append(
        f"{_INDENT}extract (recomputed{context if decisions.parsed else ''}): "
        f"{len(decisions.extracted)} candidate(s); stored fact matched: {decisions.match.value}"
    )
    lines += [
        _candidate(f, "*" if i == decisions.matched else "-")
        for i, f in enumerate(decisions.extracted)
    ]
    return lines


def _review_lines(trace: Trace) -> list[str]:
    if not trace.ops:
        return [f"{_INDENT}review: not recorded (no operation left on memory.ops)"]
    lines = []
    for sighting in trace.ops:
        op, record = sighting.op, sighting.op.record
        head = f"{_INDENT}review (recorded, {op.op_type.value} at memory.ops "
        head += f"{sighting.partition}/{sighting.offset}, event {op.lineage.event_id})"
        if record is None:
            lines.append(f"{head}: {op.resolution}")
            continue
        if op.op_type is OpType.CLOSE_FACT:
            # A close carries the record as first written; what it adds is the end.
            lines.append(f"{head}: closed, valid until {_when(record.valid_until)}")
            continue
        outcomes = "; ".join(
            f"{r.stage.value}={r.decision}" + (f" ({r.reason})" if r.reason else "")
            for r in record.review
        )
        lines.append(f"{head}: {outcomes or '-'}  -> state {record.state.value}")
        extra = {
            "supersedes": record.supersedes,
            "merged_from": ", ".join(record.merged_from) or None,
            # confirmed_by starts with the source event; the rest stated it again.
            "stated again by": ", ".join(record.confirmed_by[1:]) or None,
        }
        lines += [f"{_INDENT * 2}{k} {v}" for k, v in extra.items() if v is not None]
    return lines


def _chain_lines(trace: Trace) -> list[str]:
    fact = trace.fact
    lines = [f"CHAIN ({fact.subject}, {fact.predicate}): {len(trace.chain)} version(s) (stored)"]
    for hit in trace.chain:
        mark = "  <= traced" if hit.fact_id == fact.fact_id else ""
        closer = superseded_by(trace.chain, hit.fact_id)
        lines.append(
            f"{_INDENT}v{hit.version} {hit.fact_id} {hit.polarity.value} {hit.object!r}"
            f"  {_when(hit.valid_from)} -> {_when(hit.valid_until)}"
            f"{f'  superseded by {closer}' if closer else ''}  [{hit.tier.value}]{mark}"
        )
    return lines


def render_text(trace: Trace) -> list[str]:
    """The trace as lines for a terminal, sections in the order an operator reads them."""
    return [
        *_fact_lines(trace),
        *source_lines(trace.source),
        "DECISIONS",
        *_decision_lines(trace.decisions),
        *_review_lines(trace),
        *_chain_lines(trace),
        *(f"note: {n}" for n in trace.notes),
    ]


def source_json(source: SourceFetch) -> dict[str, Any]:
    """The fetched source record as JSON (``--json`` of both traces)."""
    return {
        "provenance": "fetched",
        "lineage": source.lineage.model_dump(mode="json"),
        "topic": source.topic,
        "verified": source.problem is None,
        "problem": source.problem,
        "log_start": source.log_start,
        "log_end": source.log_end,
        "timestamp_ms": source.timestamp_ms,
        "key": source.key.decode("utf-8", "replace") if source.key is not None else None,
        "value": source.value.decode("utf-8", "replace") if source.value is not None else None,
    }


def to_json(trace: Trace) -> dict[str, Any]:
    """The trace as one JSON-ready document (``--json``)."""
    source, decisions = trace.source, trace.decisions
    return {
        "fact": trace.fact.model_dump(mode="json"),
        "found_in": trace.found_in,
        "source": source_json(source),
        "decisions": None
        if decisions is None
        else {
            "provenance": {name: "recomputed" for name in decisions.stage_names},
            "parse": decisions.parsed.model_dump(mode="json") if decisions.parsed else None,
            "context_turns": decisions.context_turns,
            "extract": [f.model_dump(mode="json") for f in decisions.extracted],
            "matched": decisions.matched,
            "match": decisions.match.value,
        },
        "review": {
            "provenance": "recorded" if trace.ops else "not recorded",
            "ops": [
                {
                    "partition": s.partition,
                    "offset": s.offset,
                    **s.op.model_dump(mode="json", exclude={"record": {"encoding"}}),
                }
                for s in trace.ops
            ],
        },
        "chain": [
            {
                **h.model_dump(mode="json"),
                "traced": h.fact_id == trace.fact.fact_id,
                "superseded_by": superseded_by(trace.chain, h.fact_id),
            }
            for h in trace.chain
        ],
        "notes": trace.notes,
    }
