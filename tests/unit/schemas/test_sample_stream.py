"""The bundled sample stream validates, is reproducible and holds what it promises."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from memstream.data import sample_dir
from schemas.events import CrmWebhook, DialogueEvent, InputEvent, UserAction
from schemas.topics import CRM_WEBHOOKS, DIALOGUE_EVENTS, INPUT_TOPICS, USER_ACTIONS
from schemas.validate import decode_event

REPO = Path(__file__).resolve().parents[3]
SAMPLE = sample_dir()


def load(topic: str) -> list[InputEvent]:
    lines = (SAMPLE / f"{topic}.jsonl").read_bytes().splitlines()
    return [decode_event(topic, line) for line in lines]  # raises on any bad line


@pytest.fixture(scope="module")
def dialogue() -> list[DialogueEvent]:
    return [e for e in load(DIALOGUE_EVENTS) if isinstance(e, DialogueEvent)]


def test_every_line_of_every_file_validates() -> None:
    counts = {topic: len(load(topic)) for topic in INPUT_TOPICS}
    assert sorted(path.stem for path in SAMPLE.glob("*.jsonl")) == sorted(INPUT_TOPICS)
    assert 350 <= sum(counts.values()) <= 450, counts
    assert all(n > 0 for n in counts.values()), counts


def test_generator_reproduces_the_committed_files(tmp_path: Path) -> None:
    script = REPO / "benchmarks" / "generate_sample.py"
    subprocess.run([sys.executable, str(script), "--out", str(tmp_path)], check=True, cwd=REPO)
    for topic in INPUT_TOPICS:
        name = f"{topic}.jsonl"
        assert (tmp_path / name).read_bytes() == (SAMPLE / name).read_bytes(), name


def test_tenants_users_and_sessions(dialogue: list[DialogueEvent]) -> None:
    everything = [*dialogue, *load(USER_ACTIONS), *load(CRM_WEBHOOKS)]
    assert len({e.tenant_id for e in everything}) == 3
    assert len({e.key for e in everything}) == 8
    assert len({e.session_id for e in dialogue}) >= 25
    assert len({e.event_id for e in everything}) == len(everything)


def test_turns_increase_in_index_and_time_per_session(dialogue: list[DialogueEvent]) -> None:
    sessions: dict[str, list[DialogueEvent]] = defaultdict(list)
    for event in dialogue:
        sessions[event.session_id].append(event)
    for turns in sessions.values():
        turns.sort(key=lambda e: e.turn_index)
        assert [t.turn_index for t in turns] == list(range(len(turns)))
        assert all(a.ts < b.ts for a, b in zip(turns, turns[1:], strict=False))
        assert {t.role.value for t in turns} >= {"user", "agent"}


def test_mostly_english_with_a_few_chinese_turns(dialogue: list[DialogueEvent]) -> None:
    chinese = [e for e in dialogue if e.lang == "zh"]
    assert 2 <= len(chinese) <= 3
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in e.text) for e in chinese)


@pytest.mark.parametrize(
    "phrase",
    [
        "I don't accept weekend installation",  # negation
        "no calls before 9",  # "no" as determiner
        "but not Friday",  # contrastive negation
        "never send SMS",
        "Actually my new number is 555-0199",  # correction
        "I changed my mind",
        "maybe next week",  # hedges
        "I might switch",
        "I'm vegan",
        "double bacon burger",  # contradicts the vegan preference
        "I travel to Berlin tomorrow",  # short-lived status
    ],
)
def test_dialogue_carries_the_phenomena_the_pipeline_must_handle(
    dialogue: list[DialogueEvent], phrase: str
) -> None:
    assert any(phrase.lower() in e.text.lower() and e.role.value == "user" for e in dialogue)


def test_actions_and_crm_cover_their_kinds() -> None:
    actions = [e for e in load(USER_ACTIONS) if isinstance(e, UserAction)]
    kinds = {a.action_type.value for a in actions}
    assert kinds >= {"view", "click", "purchase", "confirm_memory", "reject_memory"}
    changed = {
        field for e in load(CRM_WEBHOOKS) if isinstance(e, CrmWebhook) for field in e.changes
    }
    assert changed >= {"phone", "address", "plan", "tier"}
