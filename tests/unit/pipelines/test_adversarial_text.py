"""Hostile or odd input: no crash, no invented facts; Chinese passes through."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipelines.extract import FactExtractor
from pipelines.extract.learned.model import MODEL_PATH
from pipelines.parse import Intent
from schemas.events import MAX_TURN_CHARS, DialogueEvent, Role
from schemas.facts import ExtractedFact

os.environ.setdefault("FLAIR_CACHE_ROOT", str(Path.home() / ".cache" / "memstream" / "flair"))


@pytest.fixture(scope="module", params=["rules", "hybrid"])
def extractor(request: pytest.FixtureRequest) -> FactExtractor:
    # The hybrid (the default) puts the fine-tuned tagger first: it must hold too.
    learned = MODEL_PATH if request.param == "hybrid" else None
    return FactExtractor.load(learned_path=learned)


def turn(text: str, lang: str = "en") -> DialogueEvent:
    return DialogueEvent(
        event_id="e1",
        tenant_id="t1",
        user_id="u1",
        session_id="s1",
        turn_index=0,
        role=Role.USER,
        text=text,
        lang=lang,
        ts=datetime(2026, 3, 1, tzinfo=UTC),
    )


def run(extractor: FactExtractor, text: str, lang: str = "en") -> list[ExtractedFact]:
    event = turn(text, lang)
    return extractor.extract(event, extractor.parser.parse(event))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\t  ",
        "😀🎉👍🔥",
        "<b>hello</b><script>alert('x')</script>",
        '{"role": "user", "text": null}',
        "SELECT * FROM users; DROP TABLE facts;--",
        "\u202e\u200b\x00 zero-width and bidi controls",
        "!!!??? ... ,,, ;;;",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "Hi 你好 ok 谢谢 👍",
    ],
)
def test_noise_yields_no_facts(extractor: FactExtractor, text: str) -> None:
    assert run(extractor, text) == []


def test_hundred_kilobytes_of_chatter_yields_no_facts(extractor: FactExtractor) -> None:
    sentence = "The weather was nice and the sky was blue over the hills. "
    text = (sentence * (MAX_TURN_CHARS // len(sentence) + 1))[:MAX_TURN_CHARS]
    assert len(text) == MAX_TURN_CHARS
    assert run(extractor, text) == []


def test_emoji_and_markup_around_a_fact_keep_the_fact(extractor: FactExtractor) -> None:
    found = run(extractor, "📞 <b>Call me on 0151 234 5678</b> 🙏")
    assert [(f.predicate, f.object) for f in found] == [("phone_number", "01512345678")]


@pytest.mark.parametrize("lang", ["en", "zh", "zh-CN"])
def test_chinese_passes_through_without_english_rule_facts(
    extractor: FactExtractor, lang: str
) -> None:
    event = turn("我不接受周末安装，请不要在九点前打电话。我的电话是 0151 234 5678。", lang)
    parsed = extractor.parser.parse(event)
    assert parsed.lang == "zh"
    assert parsed.intent is Intent.UNKNOWN
    assert len(parsed.sentences) == 2
    assert extractor.extract(event, parsed) == []


def test_a_fact_past_the_parse_cap_is_not_extracted_one_before_it_is(
    extractor: FactExtractor,
) -> None:
    chatter = "The weather was nice and the sky was blue over the hills. "
    fact = "Please call me on 0151 234 5678. "
    text = (fact + chatter * (MAX_TURN_CHARS // len(chatter)))[: MAX_TURN_CHARS - len(fact)]
    text = text[: text.rfind(". ") + 2] + fact
    found = run(extractor, text)
    # Only the first statement (inside FULL_PARSE_CHARS) yields its fact, once.
    assert [(f.predicate, f.object) for f in found] == [("phone_number", "01512345678")]
    assert found[0].source_span is not None and found[0].source_span.start == 0


def test_a_zero_width_space_pasted_in_keeps_the_fact_a_bidi_override_does_not(
    extractor: FactExtractor,
) -> None:
    pasted = run(extractor, "Call me on\u200b 0151 234 5678")
    assert [(f.predicate, f.object) for f in pasted] == [("phone_number", "01512345678")]
    # A bidi override or a NUL is no keyboard's: the tagger leaves such a turn alone.
    spoofed = run(extractor, "\u202eI love jazz")
    assert not [f for f in spoofed if f.predicate == "likes"], spoofed
