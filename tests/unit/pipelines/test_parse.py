"""Parse stage: dialogue acts, memory cues, chit-chat, batching and pass-through."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipelines.parse import DialogueParser, Intent, ParsedTurn
from pipelines.parse.parser import FULL_PARSE_CHARS, parsed_head
from schemas.events import DialogueEvent, Role


def turn(text: str, role: Role = Role.USER, index: int = 0, lang: str = "en") -> DialogueEvent:
    return DialogueEvent(
        event_id=f"e{index}",
        tenant_id="t1",
        user_id="u1",
        session_id="s1",
        turn_index=index,
        role=role,
        text=text,
        lang=lang,
        ts=datetime(2026, 3, 1, 9, 0, tzinfo=UTC),
    )


@pytest.fixture(scope="module")
def parser() -> DialogueParser:
    return DialogueParser.load()


@pytest.mark.parametrize(
    ("text", "role", "intent"),
    [
        ("Never mind, no need.", Role.USER, Intent.CANCEL_REQUEST),
        ("I've registered it for you.", Role.AGENT, Intent.CONFIRM_ACTION),
        ("Actually my new number is 0151 987 6543.", Role.USER, Intent.CORRECTION),
        ("I changed my mind, Friday is better.", Role.USER, Intent.CORRECTION),
        ("This is unacceptable, the router stopped working again.", Role.USER, Intent.COMPLAINT),
        ("What time do you open on Sundays?", Role.USER, Intent.INQUIRY),
        ("I'd like to order two pizzas.", Role.USER, Intent.ORDER),
        ("I prefer red wine.", Role.USER, Intent.PREFERENCE),
        ("I'll call you on Monday.", Role.AGENT, Intent.COMMITMENT),
        ("Please send me the invoice.", Role.USER, Intent.REQUEST),
        ("I live in Glasgow.", Role.USER, Intent.INFORM),
        ("Hi there, thanks a lot!", Role.USER, Intent.CHIT_CHAT),
        ("ok cool 👍", Role.USER, Intent.CHIT_CHAT),
    ],
)
def test_dialogue_acts(parser: DialogueParser, text: str, role: Role, intent: Intent) -> None:
    assert parser.parse(turn(text, role)).intent is intent


def test_a_user_saying_done_is_not_an_agent_confirmation(parser: DialogueParser) -> None:
    assert parser.parse(turn("Done, I booked it myself.")).intent is not Intent.CONFIRM_ACTION


def test_memory_cues(parser: DialogueParser) -> None:
    parsed = parser.parse(turn("As I said last time, remember that I'm vegan."))
    assert parsed.memory_cues == ["as i said", "last time", "remember"]
    assert parsed.sentences[0].memory_cues == parsed.memory_cues
    assert parser.parse(turn("I'm vegan.")).memory_cues == []


def test_chit_chat_turn_is_flagged_and_summary_drops_content(parser: DialogueParser) -> None:
    parsed = parser.parse(turn("Hello! Thank you so much, bye."))
    assert parsed.is_chit_chat
    assert parsed.summary == "user/chit_chat"
    assert not parser.parse(turn("Hello! My number is 0151 234 5678.")).is_chit_chat


def test_structure_copied_and_offsets_point_into_text(parser: DialogueParser) -> None:
    event = turn("Hi. I don't accept weekend installation. Call me on Monday.", Role.USER, 4)
    parsed = parser.parse(event)
    assert (parsed.event_id, parsed.role, parsed.session_id, parsed.turn_index) == (
        "e4",
        Role.USER,
        "s1",
        4,
    )
    assert [s.intent for s in parsed.sentences] == [
        Intent.CHIT_CHAT,
        Intent.REQUEST,
        Intent.REQUEST,
    ]
    for sentence in parsed.sentences:
        assert event.text[sentence.start : sentence.end] == sentence.text
    assert parsed.summary.startswith("user/request")
    assert "installation" in parsed.summary


def test_parse_batch_matches_single_parses_in_order(parser: DialogueParser) -> None:
    events = [
        turn("I'm flying to Berlin tomorrow.", index=0),
        turn("我想修改我的地址。", index=1),
        turn("Noted, I've registered it for you.", Role.AGENT, index=2),
    ]
    batch = parser.parse_batch(events)
    assert [p.turn_index for p in batch] == [0, 1, 2]
    assert [p.model_dump() for p in batch] == [parser.parse(e).model_dump() for e in events]


def test_chinese_passes_through_tagged_with_its_language(parser: DialogueParser) -> None:
    parsed = parser.parse(turn("你好！我不接受周末安装。谢谢", lang="en"))
    assert parsed.lang == "zh"
    assert parsed.intent is Intent.UNKNOWN
    assert [s.text for s in parsed.sentences] == ["你好！", "我不接受周末安装。", "谢谢"]
    assert parsed.doc is None
    tagged = parser.parse(turn("hello", lang="zh-CN"))
    assert tagged.lang == "zh"


def test_parsed_turn_round_trips_as_json_without_the_doc(parser: DialogueParser) -> None:
    parsed = parser.parse(turn("Please don't call me before 9."))
    assert parsed.doc is not None
    again = ParsedTurn.model_validate_json(parsed.model_dump_json())
    assert again.model_dump() == parsed.model_dump()
    assert again.doc is None


def test_a_huge_turn_is_fully_parsed_only_up_to_the_cap(parser: DialogueParser) -> None:
    filler = "The sky was blue over the hills. "
    head = filler * (FULL_PARSE_CHARS // len(filler) + 3)
    text = head + "As I said last time, I hate waiting. " + filler * 10
    parsed = parser.parse(turn(text))
    assert parsed.doc is not None
    assert len(parsed.doc.text) <= FULL_PARSE_CHARS
    assert parsed.doc.text.endswith(".")
    # Past the cap sentences still get offsets into the text, acts and memory cues.
    assert len(parsed.sentences) == text.count(". ")
    assert all(text[s.start : s.end] == s.text for s in parsed.sentences)
    assert parsed.memory_cues == ["as i said", "last time"]
    assert parsed.sentences[-1].end <= len(text)


def test_parsed_head_cuts_at_a_sentence_end_or_a_space() -> None:
    assert parsed_head("short turn") == "short turn"
    marked = "Hello there. " * 400
    assert parsed_head(marked).endswith("there.")
    assert len(parsed_head(marked)) <= FULL_PARSE_CHARS
    unmarked = "word " * 1000
    assert len(parsed_head(unmarked)) <= FULL_PARSE_CHARS
    assert parsed_head(unmarked).endswith("word")
    assert parsed_head("x" * 5000) == "x" * FULL_PARSE_CHARS


@pytest.mark.parametrize(
    "text", ["Can we move the visit to Monday?", "Could I change the delivery to the 9th?"]
)
def test_a_rescheduling_question_is_a_request(parser: DialogueParser, text: str) -> None:
    assert parser.parse(turn(text)).intent is Intent.REQUEST
