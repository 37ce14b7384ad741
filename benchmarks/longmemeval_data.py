"""LongMemEval questions as memstream sees them: one user per question, one event per turn.

The oracle file (``longmemeval_oracle.json``, never copied into this repo) holds
500 questions, each with its own haystack: a few timestamped sessions of
user/assistant turns, the evidence turns flagged ``has_answer``. This module
reads it, samples it, and turns a question's haystack into the
``DialogueEvent`` records the ingest pipeline consumes, with turn ids that map
every event back to its (session, turn index).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memstream.settings import get_settings
from pipelines.ingest import SourceRecord
from schemas.events import DialogueEvent, Role
from schemas.query import RecallHit
from schemas.topics import DIALOGUE_EVENTS

# MEMSTREAM_BENCHMARKS__LONGMEMEVAL=<path to longmemeval_oracle.json>, or --data.
DEFAULT_DATA = get_settings().benchmarks.longmemeval or Path("longmemeval_oracle.json")
# LongMemEval's timestamp format, e.g. "2023/05/21 (Sun) 19:50" (no zone: read as UTC).
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"
# Abstention questions (ids ending "_abs") ask about something the haystack does
# not hold; their flagged turns are not the answer, so they are not scored.
ABSTENTION_SUFFIX = "_abs"
_ROLES = {"user": Role.USER, "assistant": Role.AGENT}


@dataclass(frozen=True)
class Turn:
    """One haystack turn; ``turn_id`` is ``{session_id}:{index}`` (its lineage key)."""

    session_id: str
    session_at: datetime
    index: int
    role: str
    text: str
    evidence: bool

    @property
    def at(self) -> datetime:
        """Event time: turn ``i`` is stamped ``i`` seconds after its session's date."""
        return self.session_at + timedelta(seconds=self.index)

    @property
    def turn_id(self) -> str:
        """The id the event carries and every memory made from it keeps in its lineage."""
        return f"{self.session_id}:{self.index}"


@dataclass(frozen=True)
class Question:
    """One question with its haystack turns in chronological order."""

    question_id: str
    question_type: str
    question: str
    asked_at: datetime
    turns: tuple[Turn, ...]

    @property
    def evidence(self) -> list[Turn]:
        """The turns flagged ``has_answer``."""
        return [t for t in self.turns if t.evidence]

    @property
    def scored(self) -> bool:
        """Whether recall is measured on it: evidence exists and it is no abstention."""
        return bool(self.evidence) and not self.question_id.endswith(ABSTENTION_SUFFIX)

    def evidence_by_recency(self) -> tuple[set[str], set[str]]:
        """(latest, outdated) evidence turn ids, split by their sessions' dates.

        Latest: the evidence turns of the most recently dated session that holds
        evidence. Outdated: the evidence turns of sessions dated strictly
        earlier. A knowledge-update question states the old value in the earlier
        sessions and the new value in the latest one; either set may be empty
        (evidence in a single session, or several sessions of the same date).
        """
        found = self.evidence
        if not found:
            return set(), set()
        newest = max(t.session_at for t in found)
        latest = {t.turn_id for t in found if t.session_at == newest}
        outdated = {t.turn_id for t in found if t.session_at < newest}
        return latest, outdated


def parse_date(text: str) -> datetime:
    """A LongMemEval timestamp as an aware UTC datetime."""
    return datetime.strptime(text, DATE_FORMAT).replace(tzinfo=UTC)


def question_from_json(raw: dict[str, object]) -> Question:
    """One entry of the oracle file; sessions are ordered by date (stable), as they happened.

    34 of the 500 questions list their sessions out of date order; the pipeline
    decides a user's facts in the order they were said, so it must see them in
    time order. 43 are dated before a session of their own haystack (hours
    earlier on the same day): recall as of that moment could not see the later
    turns, which hold the evidence, so such a question is asked a minute after
    its last turn instead.
    """
    dates = [parse_date(str(d)) for d in _list(raw["haystack_dates"])]
    session_ids = [str(s) for s in _list(raw["haystack_session_ids"])]
    sessions = _list(raw["haystack_sessions"])
    turns: list[Turn] = []
    for at, session_id, session in sorted(
        zip(dates, session_ids, sessions, strict=True), key=lambda row: row[0]
    ):
        for index, turn in enumerate(_list(session)):
            assert isinstance(turn, dict)
            turns.append(
                Turn(
                    session_id=session_id,
                    session_at=at,
                    index=index,
                    role=str(turn["role"]),
                    text=str(turn["content"]),
                    evidence=bool(turn.get("has_answer", False)),
                )
            )
    asked_at = parse_date(str(raw["question_date"]))
    if turns:
        asked_at = max(asked_at, turns[-1].at + timedelta(minutes=1))
    return Question(
        question_id=str(raw["question_id"]),
        question_type=str(raw["question_type"]),
        question=str(raw["question"]),
        asked_at=asked_at,
        turns=tuple(turns),
    )


def _list(value: object) -> list[object]:
    assert isinstance(value, list)
    return value


def load_questions(path: Path) -> list[Question]:
    """Every question of the file at ``path``; a clear error when it is not there."""
    if not path.is_file():
        raise SystemExit(
            f"LongMemEval data not found at {path}: pass --data PATH to longmemeval_oracle.json "
            "or set MEMSTREAM_BENCHMARKS__LONGMEMEVAL (the file of the LongMemEval release; "
            "it is read in place, never copied into the repository)"
        )
    raw = json.loads(path.read_text(encoding="utf-8"))
    return [question_from_json(entry) for entry in raw]


def sample(
    questions: Sequence[Question], *, per_type: int | None, limit: int | None, seed: int
) -> list[Question]:
    """Scored questions only: ``per_type`` of each type, then at most ``limit``, seeded."""
    pool = [q for q in questions if q.scored]
    random.Random(seed).shuffle(pool)
    if per_type is not None:
        taken: dict[str, int] = {}
        kept = []
        for question in pool:
            if taken.get(question.question_type, 0) < per_type:
                taken[question.question_type] = taken.get(question.question_type, 0) + 1
                kept.append(question)
        pool = kept
    return pool[:limit] if limit is not None else pool


def with_distractors(questions: Sequence[Question], sessions: int, seed: int) -> list[Question]:
    """Each question's haystack padded with ``sessions`` sessions of other questions.

    As LongMemEval_S does: one user then holds about 500 turns. Each borrowed
    session keeps its turns, loses its evidence flags, gets an id of its own
    and a date drawn within the question's haystack span (before its question).
    """
    if sessions <= 0:
        return list(questions)
    pool: list[tuple[str, list[Turn]]] = []
    for question in questions:
        by_session: dict[str, list[Turn]] = {}
        for turn in question.turns:
            by_session.setdefault(turn.session_id, []).append(turn)
        pool += [(question.question_id, turns) for turns in by_session.values()]
    rng = random.Random(seed)
    padded = []
    for question in questions:
        first = min(t.session_at for t in question.turns)
        last = max(t.session_at for t in question.turns)
        span = max((last - first).total_seconds(), 86_400.0)
        others = [entry for entry in pool if entry[0] != question.question_id]
        borrowed: list[Turn] = []
        for n, (owner, turns) in enumerate(rng.sample(others, min(sessions, len(others)))):
            at = first + timedelta(seconds=rng.uniform(0.0, span))
            session = f"d{n}-{owner}-{turns[0].session_id}"[:120]
            borrowed += [Turn(session, at, t.index, t.role, t.text, evidence=False) for t in turns]
        turns = sorted([*question.turns, *borrowed], key=lambda t: (t.at, t.session_id))
        padded.append(
            Question(
                question_id=question.question_id,
                question_type=question.question_type,
                question=question.question,
                asked_at=question.asked_at,
                turns=tuple(turns),
            )
        )
    return padded


def events(question: Question, tenant_id: str) -> list[DialogueEvent]:
    """The question's turns as dialogue events of user ``question_id``, in time order."""
    return [
        DialogueEvent(
            event_id=f"lme-{question.question_id}-{turn.turn_id}",
            tenant_id=tenant_id,
            user_id=question.question_id,
            session_id=turn.session_id,
            turn_index=turn.index,
            turn_id=turn.turn_id,
            role=_ROLES[turn.role],
            text=turn.text,
            ts=turn.at,
        )
        for turn in question.turns
    ]


def records(dialogue: Iterable[DialogueEvent]) -> list[SourceRecord]:
    """The events as ``dialogue.events`` records: one partition, offsets in time order."""
    return [
        SourceRecord(
            DIALOGUE_EVENTS, 0, offset, event.key.encode(), event.model_dump_json().encode()
        )
        for offset, event in enumerate(dialogue)
    ]


def haystack_key(question: Question) -> tuple[object, ...]:
    """What identifies a question's haystack: its turns and the moment it is asked."""
    return (tuple(t.turn_id for t in question.turns), question.asked_at)


def by_haystack(questions: Sequence[Question]) -> list[Question]:
    """The questions with those of one haystack together, in first-seen order (stable)."""
    first: dict[tuple[object, ...], int] = {}
    for question in questions:
        first.setdefault(haystack_key(question), len(first))
    return sorted(questions, key=lambda q: first[haystack_key(q)])


def turn_of(hit: RecallHit) -> str | None:
    """The turn a hit hands the agent: a fact's source turn (the one it ranked by), else its own."""
    lineage = hit.source_lineage or hit.lineage
    return lineage.turn_id if lineage else None
