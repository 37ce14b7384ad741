"""The layout of ``memstream trace`` (jobs.ops.trace_render) over a hand-built trace."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from jobs.ops.trace import OpSighting, Trace
from jobs.ops.trace_decisions import Decisions, Match
from jobs.ops.trace_render import latest_record, render_text, superseded_by, to_json
from jobs.ops.trace_source import SourceFetch
from pipelines.parse import Intent, ParsedSentence, ParsedTurn
from schemas.events import Role
from schemas.facts import ExtractedFact, Span
from schemas.hits import SearchHit
from schemas.lineage import SourceLineage
from schemas.memory import MemoryKind, MemoryRecord, Polarity, ReviewOutcome, ReviewStage, Tier
from schemas.ops import MemoryOperation, OpType

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
T1 = T0 + timedelta(minutes=2)
TEXT = "My phone number is 07700 900123."
LINEAGE = SourceLineage(topic="dialogue.events", partition=1, offset=7, event_id="e-0")
LATER = SourceLineage(topic="dialogue.events", partition=1, offset=9, event_id="e-2")
VALUE = json.dumps({"event_id": "e-0", "text": TEXT}).encode()


def record(fact_id: str, obj: str, at: datetime, **extra: object) -> MemoryRecord:
    return MemoryRecord.model_validate(
        {
            "fact_id": fact_id,
            "chain_id": "c_1",
            "tenant_id": "t",
            "user_id": "u",
            "subject": "user",
            "predicate": "phone_number",
            "object": obj,
            "confidence": 0.9,
            "valid_from": at,
            "recorded_at": at,
            "tiers": [Tier.EPISODIC],
            "lineage": LINEAGE,
            "review": [
                ReviewOutcome(stage=ReviewStage.FACT_CHECK, decision="pass"),
                ReviewOutcome(stage=ReviewStage.HITL, decision="commit", reason="0.90 >= 0.82"),
            ],
            **extra,
        }
    )


OLD = record("f_old", "07700900123", T0)
NEW = record("f_new", "07700900999", T1, supersedes="f_old", version=2)
CLOSED = OLD.model_copy(update={"valid_until": T1})
CHAIN = [SearchHit.from_record(r, Tier.EPISODIC) for r in (CLOSED, NEW)]


def op(kind: OpType, rec: MemoryRecord, lineage: SourceLineage) -> MemoryOperation:
    return MemoryOperation(
        op_id=f"o_{kind.value}",
        op_type=kind,
        tenant_id="t",
        user_id="u",
        tiers=[Tier.EPISODIC],
        lineage=lineage,
        at=rec.valid_from,
        record=rec,
    )


def extracted(obj: str) -> ExtractedFact:
    return ExtractedFact(
        tenant_id="t",
        user_id="u",
        event_id="e-0",
        event_ts=T0,
        subject="user",
        predicate="phone_number",
        object=obj,
        confidence=0.9,
        source_span=Span(label="SENTENCE", text=TEXT, start=0, end=len(TEXT)),
    )


def make_trace(source: SourceFetch, decisions: Decisions | None) -> Trace:
    ops = [
        OpSighting(0, 3, op(OpType.UPSERT_FACT, OLD, LINEAGE)),
        OpSighting(0, 5, op(OpType.CLOSE_FACT, CLOSED, LATER)),
    ]
    return Trace(CHAIN[0], ["chroma"], source, ops, CHAIN, decisions)


PARSED = ParsedTurn(
    event_id="e-0",
    role=Role.USER,
    session_id="s1",
    turn_index=0,
    lang="en",
    sentences=[ParsedSentence(text=TEXT, start=0, end=len(TEXT), intent=Intent.INFORM)],
    intent=Intent.INFORM,
)
DECISIONS = Decisions(["parse", "extract"], PARSED, 0, [extracted("07700900123")], 0, Match.EXACT)
VERIFIED = SourceFetch(
    LINEAGE, "ns_dialogue.events", 0, 12, b"t:u", VALUE, int(T0.timestamp() * 1000)
)


def test_the_chain_marks_the_traced_version_and_who_superseded_it() -> None:
    lines = render_text(make_trace(VERIFIED, DECISIONS))
    chain = lines[lines.index(next(x for x in lines if x.startswith("CHAIN"))) + 1 :]
    assert chain[0].startswith("  v1 f_old") and chain[0].endswith("<= traced")
    assert "superseded by f_new" in chain[0]
    assert "<= traced" not in chain[1] and "superseded by" not in chain[1]
    assert "  outcome commit (recorded), superseded by f_new" in lines


def test_text_says_which_parts_are_fetched_recorded_and_recomputed() -> None:
    text = "\n".join(render_text(make_trace(VERIFIED, DECISIONS)))
    assert "SOURCE ns_dialogue.events/1/7  event e-0  [verified] (fetched from Kafka)" in text
    assert "parse (recomputed): role user  intent inform" in text
    assert (
        f'* (user, phone_number, 07700900123) affirmed fact conf 0.90 by user  [0:32] "{TEXT}"'
        in text
    )
    assert "review (recorded, upsert_fact at memory.ops 0/3, event e-0)" in text
    assert "hitl=commit (0.90 >= 0.82)" in text
    assert "close_fact at memory.ops 0/5, event e-2): closed, valid until " + T1.isoformat() in text
    assert VALUE.decode() in text


def test_a_source_gone_from_the_log_still_shows_what_the_stores_know() -> None:
    gone = SourceFetch(
        LINEAGE, "ns_dialogue.events", 8, 12, problem="offset 7 is below the log start 8"
    )
    lines = render_text(make_trace(gone, None))
    assert "SOURCE ns_dialogue.events/1/7  event e-0  [NOT VERIFIED] (fetched from Kafka)" in lines
    assert "  problem: offset 7 is below the log start 8" in lines
    assert "  parse/extract: not recomputed (no verified source event)" in lines
    assert lines[0] == "FACT f_old  (stored in chroma)"
    no_ops = Trace(CHAIN[1], ["neo4j"], gone, [], CHAIN)
    assert "  outcome review not recorded" in render_text(no_ops)
    doc = to_json(make_trace(gone, None))
    assert doc["source"]["verified"] is False and doc["source"]["value"] is None
    assert doc["decisions"] is None


def test_json_carries_the_exact_bytes_and_the_provenance_of_each_part() -> None:
    doc = json.loads(json.dumps(to_json(make_trace(VERIFIED, DECISIONS))))
    assert doc["source"]["value"].encode() == VALUE
    assert doc["decisions"]["provenance"] == {"parse": "recomputed", "extract": "recomputed"}
    assert doc["review"]["provenance"] == "recorded"
    assert [(o["offset"], o["op_type"]) for o in doc["review"]["ops"]] == [
        (3, "upsert_fact"),
        (5, "close_fact"),
    ]
    assert "encoding" not in doc["review"]["ops"][0]["record"]
    assert [(c["fact_id"], c["traced"], c["superseded_by"]) for c in doc["chain"]] == [
        ("f_old", True, "f_new"),
        ("f_new", False, None),
    ]


def test_helpers_pick_the_closer_and_the_last_written_record() -> None:
    trace = make_trace(VERIFIED, DECISIONS)
    assert superseded_by(trace.chain, "f_old") == "f_new"
    assert superseded_by(trace.chain, "f_new") is None
    assert latest_record(trace.ops) == CLOSED
    assert latest_record([]) is None
    assert MemoryKind.FACT is trace.fact.kind and trace.fact.polarity is Polarity.AFFIRMED
