"""The blind recall sets in benchmarks/recallset/ as LongMemEval-style questions.

Format (each file's header says who wrote it and that it was written blind):
``= conv tenant user`` starts a conversation, ``@ session ISO-time`` a session,
``U:``/``A:`` are turns (user / agent, or the memory's owner / the friend),
``* q1 q2`` marks the turn above as evidence for those questions, and
``? q1 text`` / ``?u q1 text`` (a knowledge update: the latest evidence holds
the answer) ask them after the conversation. Each question becomes one
``Question`` whose haystack is its whole conversation, asked a day after the
last session, so ``bench_longmemeval.py --recallset FILE`` scores it the way it
scores LongMemEval.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

from longmemeval_data import Question, Turn  # benchmarks/ sibling

RECALLSET_DIR = Path(__file__).parent / "recallset"
_ROLES = {"U": "user", "A": "assistant"}


def load_recallset(path: Path) -> list[Question]:
    """Every question of a recall-set file, with its conversation as the haystack."""
    questions: list[Question] = []
    turns: list[Turn] = []
    evidence: list[set[str]] = []
    asked: list[tuple[str, str, bool]] = []
    conversation, session, session_at = "", "", None

    def flush() -> None:
        if not conversation:
            return
        last = max(t.at for t in turns)
        for qid, text, update in asked:
            flagged = tuple(
                replace(t, evidence=qid in marks) for t, marks in zip(turns, evidence, strict=True)
            )
            kind = ("update" if update else "single") if "friends" not in path.name else "friends"
            questions.append(
                Question(
                    question_id=f"{conversation}-{qid}",
                    question_type=("knowledge-update" if update else kind),
                    question=text,
                    asked_at=last + timedelta(days=1),
                    turns=flagged,
                )
            )

    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("= "):
            flush()
            conversation = line.split()[1]
            turns, evidence, asked = [], [], []
        elif line.startswith("@ "):
            _, session, stamp = line.split(maxsplit=2)
            session_at = datetime.fromisoformat(stamp)
        elif line[:2] in ("U:", "A:"):
            assert session_at is not None, f"{path}: a turn before any session"
            index = sum(t.session_id == f"{conversation}-{session}" for t in turns)
            turns.append(
                Turn(
                    f"{conversation}-{session}",
                    session_at,
                    index,
                    _ROLES[line[0]],
                    line[2:].strip(),
                    False,
                )
            )
            evidence.append(set())
        elif line.startswith("* "):
            evidence[-1].update(line.split()[1:])
        elif line.startswith("?u ") or line.startswith("? "):
            head, qid, text = line.split(maxsplit=2)
            asked.append((qid, text, head == "?u"))
    flush()
    return questions
