"""Labelled turns as tagged token sequences, and predicted tags back as typed triples.

A turn is tagged together with the tail of the turn before it, so a bare
"yes" to "Would Tuesday suit?" can point at "Tuesday" in the context. The
words the tagger sees are ``context tokens + [SEPARATOR, role] + turn tokens``.
A span label is the predicate with its polarity and hedge, so one tag decides
all three: ``appointment_time``, ``appointment_time~neg``, ``likes~neg~hedge``.

Gold objects are written in canonical form (benchmarks/devset/LABELLING.md),
not as offsets: each is aligned to the token span whose text the predicate's
value type normalises to the same value (``PredicateSpec.same_value``).
Decoding runs the same normaliser over a predicted span, so what the tagger
learns to mark is exactly what decodes to the gold object.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.extract.learned.compose import composes
from pipelines.extract.learned.windows import closes_range, joins, one_window, time_kinds, widen
from pipelines.vocabulary import TIME_TYPES, PredicateSpec, Vocabulary, default_vocabulary

USER = "user"
AGENT = "agent"
# Between the context and the turn, then the turn's speaker as a word.
SEPARATOR = "|"
# The tail of the previous turn holds the question or offer a turn answers;
# longer context only costs encoder time.
MAX_CONTEXT_TOKENS = 32
MAX_TURN_TOKENS = 160
# Longest span tried in alignment: a full street address with its town.
MAX_SPAN_TOKENS = 16
FLAG_MARK = "~"
NEG = "neg"
HEDGE = "hedge"
OUTSIDE = "O"
# Held-out test data (benchmarks/devset/README.md): never read, listed or trained on.
BLIND_DIR = "blind"
_PLACE_TYPES = frozenset({"address", "place"})
# A house number before a street name: "12", "221b", "7-9".
_HOUSE_NUMBER = re.compile(r"\d{1,5}[a-z]?(?:-\d{1,5})?", re.IGNORECASE)

# An e-mail; a number with its unit, suffix or clock part (10am, 9:30, 30GB,
# 14th); a clitic "'s", split off so "Monday's fine" has a "Monday"; a word
# with inner apostrophes or hyphens (don't, I'm, gluten-free); any other
# single character.
_TOKEN = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
    r"|\d+(?:[:.,/]\d+)*[^\W\d_]*"
    r"|['’]s\b"
    r"|[^\W\d_]+(?:['’](?!s\b)[^\W\d_]+|-[^\W\d_]+)*"
    r"|\S"
)


# -- labelled files -------------------------------------------------------------
@dataclass(frozen=True)
class GoldTriple:
    """One ``+`` line: a fact the turn states about the user."""

    predicate: str
    obj: str
    negated: bool = False
    hedged: bool = False
    update: bool = False
    agent: bool = False


@dataclass(frozen=True)
class Example:
    """One turn with the turn before it in its session, and its gold triples."""

    source: str  # "<file>:<line>"
    conversation: str
    session: str
    turn_index: int
    role: str
    text: str
    previous_text: str = ""
    gold: tuple[GoldTriple, ...] = ()


def labelled_files(data_dir: Path) -> list[Path]:
    """Every ``*.txt`` under ``data_dir`` (sub-folders too) except the blind test folder.

    The blind folder is pruned before it is entered: its files are not even listed.
    """
    found: list[Path] = []
    for root, dirs, names in os.walk(data_dir):
        dirs[:] = sorted(d for d in dirs if d != BLIND_DIR)
        found.extend(Path(root) / name for name in sorted(names) if name.endswith(".txt"))
    return found


def read_examples(path: Path, data_dir: Path | None = None) -> list[Example]:
    """The turns of one file in the dev-set format (benchmarks/devset/README.md)."""
    if BLIND_DIR in path.parts:
        raise ValueError(f"{path}: the blind test split is never read")
    name = str(path.relative_to(data_dir)) if data_dir else path.name
    rows: list[tuple[Example, list[GoldTriple]]] = []
    conversation = session = previous = ""
    index = 0
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("= "):
            conversation = line[2:].split()[0]
        elif line.startswith("@ "):
            session, index, previous = f"{conversation}-{line[2:].split()[0]}", 0, ""
        elif line[:2] in {"U:", "A:"}:
            text = line[2:].strip()
            role = USER if line[0] == "U" else AGENT
            turn = Example(f"{name}:{lineno}", conversation, session, index, role, text, previous)
            rows.append((turn, []))
            index, previous = index + 1, text
        elif line.startswith("+ ") and rows:
            predicate, obj, *rest = [part.strip() for part in line[2:].split("|")]
            flags = set(rest[0].split()) if rest else set()
            rows[-1][1].append(
                GoldTriple(
                    predicate,
                    obj,
                    NEG in flags,
                    HEDGE in flags,
                    "update" in flags,
                    AGENT in flags,
                )
            )
        else:
            raise ValueError(f"{path}:{lineno}: cannot read {raw!r}")
    return [Example(**{**turn.__dict__, "gold": tuple(gold)}) for turn, gold in rows]


# -- tokens and the tagged sequence ---------------------------------------------
@dataclass(frozen=True)
class Token:
    """A token and its character offsets in the text it came from."""

    text: str
    start: int
    end: int


def tokenise(text: str) -> list[Token]:
    """Words, numbers with their units, e-mails and single punctuation marks."""
    return [Token(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def normalise_role(role: str) -> str:
    """``user`` for the user (``U``, ``Role.USER``); every other speaker is ``agent``."""
    return USER if str(role).casefold() in {USER, "u"} else AGENT


@dataclass(frozen=True)
class Encoded:
    """The words of one tagged sequence and where each segment sits in them."""

    previous_text: str
    text: str
    role: str
    context: tuple[Token, ...]
    current: tuple[Token, ...]

    @property
    def words(self) -> list[str]:
        """Context tokens, the separator, the speaker, the turn's tokens."""
        return (
            [t.text for t in self.context] + [SEPARATOR, self.role] + [t.text for t in self.current]
        )

    @property
    def current_start(self) -> int:
        """Index of the turn's first token among ``words``."""
        return len(self.context) + 2

    def segment(self, from_context: bool) -> tuple[tuple[Token, ...], str, int]:
        """A segment's tokens, its text and the word index of its first token."""
        if from_context:
            return self.context, self.previous_text, 0
        return self.current, self.text, self.current_start


def encode(previous_text: str, text: str, role: str) -> Encoded:
    """The sequence the tagger reads for a turn and its previous turn."""
    context = tokenise(previous_text)[-MAX_CONTEXT_TOKENS:]
    return Encoded(
        previous_text,
        text,
        normalise_role(role),
        tuple(context),
        tuple(tokenise(text)[:MAX_TURN_TOKENS]),
    )


# -- span labels --------------------------------------------------------------------
def span_label(predicate: str, negated: bool = False, hedged: bool = False) -> str:
    """``appointment_time``, ``appointment_time~neg``, ``likes~neg~hedge``."""
    return predicate + (FLAG_MARK + NEG if negated else "") + (FLAG_MARK + HEDGE if hedged else "")


def parse_span_label(label: str) -> tuple[str, bool, bool]:
    """``(predicate, negated, hedged)`` of a span label."""
    predicate, *flags = label.split(FLAG_MARK)
    return predicate, NEG in flags, HEDGE in flags


@dataclass(frozen=True)
class LabelledSpan:
    """A span label over word indices ``[start, end)`` of an ``Encoded`` sequence."""

    label: str
    start: int
    end: int
    score: float = 1.0


def bio_tags(length: int, spans: Iterable[LabelledSpan]) -> list[str]:
    """BIO tags (``B-appointment_time~neg``, ``I-...``, ``O``) for ``length`` words."""
    tags = [OUTSIDE] * length
    for span in spans:
        tags[span.start] = f"B-{span.label}"
        for i in range(span.start + 1, span.end):
            tags[i] = f"I-{span.label}"
    return tags


# A word right after an open value stays in it while ``O`` is below this and
# the word leans inside rather than to a value of its own: the tagger cut
# "mile end", "jd sports" and "knee replacement" after their first word with
# the second at 0.5-0.6 outside. Over the ten never-trained first-sight splits
# pooled, triple F1 0.649 at 0.5 (no extension), 0.652 at 0.6 and 0.7, 0.653 at 0.8
# (precision up, recall flat); 0.6 changes least (benchmarks/devset/README.md, "Stop 45").
EXTEND_OUTSIDE = 0.6


def spans_from_marginals(
    outside: Sequence[float],
    begins: Sequence[Sequence[float]],
    insides: Sequence[Sequence[float]],
    labels: Sequence[str],
) -> list[LabelledSpan]:
    """Spans of a tagger's per-word tag probabilities, each labelled as a whole.

    Per-word argmax breaks a value where one word's probability is spread over
    several predicates: "May 12 to 14" came out as ``may`` + ``to 14`` when
    "12" leaned 0.32 to ``appointment_time`` inside a ``travel_time`` run. Here a word is in
    a value when ``O`` is less likely than all the ``B-``/``I-`` tags together;
    a value starts where the ``B-`` mass beats the ``I-`` mass (or after ``O``);
    and the span takes the predicate with the most probability summed over its
    words. Its score is that predicate's mean probability per word. A word
    right after a value that leans inside it joins it even at ``O`` up to
    ``EXTEND_OUTSIDE``.
    ``begins[w][j]`` / ``insides[w][j]`` are word w's ``B-``/``I-`` probabilities of ``labels[j]``.
    """
    spans: list[LabelledSpan] = []
    start = -1
    mass: list[float] = []

    def close(end: int) -> None:
        if start >= 0:
            best = max(range(len(labels)), key=mass.__getitem__)
            spans.append(LabelledSpan(labels[best], start, end, mass[best] / (end - start)))

    for w, out in enumerate(outside):
        begin, inside = begins[w], insides[w]
        continues = start >= 0 and out < EXTEND_OUTSIDE and sum(inside) > sum(begin)
        if out >= 1.0 - out and not continues:
            close(w)
            start = -1
            continue
        if start < 0 or sum(begin) > sum(inside):
            close(w)
            start, mass = w, [0.0] * len(labels)
        mass = [m + b + i for m, b, i in zip(mass, begin, inside, strict=True)]
    close(len(outside))
    return spans


# Contractions texted without their apostrophe. The training turns seldom drop
# it, so MiniLM reads "dont" as an unknown word and misses the negation that
# "don't" carries; "im"/"ive" likewise. Only forms that are no other English
# word ("wont" and "cant" are rare as nouns; "ill", "its", "well" are left).
_APOSTROPHES = {
    word: word[:-1] + "'" + word[-1]
    for word in [
        "dont",
        "cant",
        "wont",
        "didnt",
        "doesnt",
        "isnt",
        "wasnt",
        "werent",
        "arent",
        "havent",
        "hasnt",
        "hadnt",
        "couldnt",
        "wouldnt",
        "shouldnt",
        "aint",
    ]
} | {"im": "i'm", "ive": "i've"}


def with_apostrophe(word: str) -> str:
    """``word`` as the model knows it: "dont" -> "don't", "Im" -> "I'm"; other words as they are."""
    spelled = _APOSTROPHES.get(word.lower())
    if spelled is None:
        return word
    return spelled[0].upper() + spelled[1:] if word[0].isupper() else spelled


# -- values -------------------------------------------------------------------------
# Words the labelling guide leaves out of a free-text object (LABELLING.md,
# "Objects"): "a beagle called Biscuit" -> ``beagle biscuit``; "my brother's
# wedding is on 14 June" -> ``brother's wedding 14 june``.
_NAMING_WORDS = frozenset({"called", "named"})
# Types read as free text, said in parts and joined ("a cat ... called Pickle",
# "Margaret, the wife"): a pet's ``animal`` and a family member's ``relative``
# types are text with their own normal forms.
_FREE_TEXT_TYPES = frozenset({"text", "animal", "relative"})
_BEFORE_TIME_WORDS = frozenset({"on", "in", "at", "is", "the", "from"})


def canonical(spec: PredicateSpec, text: str) -> str:
    """A span's value: the predicate type's normal form, free text without naming fillers."""
    value = spec.normalise(text)
    if spec.type not in _FREE_TEXT_TYPES:
        return value
    words = [w for w in value.split() if w not in _NAMING_WORDS]
    kept: list[str] = []
    # Backwards, so a run of fillers before a date goes whole ("is on the 12th").
    for i in range(len(words) - 1, -1, -1):
        before_time = bool(kept) and bool(time_kinds(kept[-1]))
        if not (i and before_time and words[i] in _BEFORE_TIME_WORDS):
            kept.append(words[i])
    return " ".join(reversed(kept))


# -- alignment --------------------------------------------------------------------
@dataclass(frozen=True)
class Alignment:
    """A turn's sequence, its labelled spans and how its gold triples were placed."""

    encoded: Encoded
    spans: tuple[LabelledSpan, ...]
    # The turn's gold as it is scored: older two-fact times merged into windows
    # (pipelines/extract/learned/windows.py), duplicates dropped.
    gold: tuple[GoldTriple, ...]
    unaligned: tuple[GoldTriple, ...] = ()
    merged: int = 0  # gold pairs read as one window
    in_context: int = 0  # gold objects found in the previous turn

    @property
    def tags(self) -> list[str]:
        """BIO tags over ``encoded.words``."""
        return bio_tags(len(self.encoded.words), self.spans)


@dataclass
class _Placed:
    gold: GoldTriple
    spec: PredicateSpec
    spans: list[LabelledSpan]
    from_context: bool


@dataclass
class _Segment:
    tokens: tuple[Token, ...]
    text: str
    offset: int
    from_context: bool
    cache: dict[tuple[str, int, int], str] = field(default_factory=dict)

    def text_of(self, first: int, last: int) -> str:
        return self.text[self.tokens[first].start : self.tokens[last - 1].end]

    def span_text(self, span: LabelledSpan) -> str:
        return self.text_of(span.start - self.offset, span.end - self.offset)

    def normalised(self, spec: PredicateSpec, first: int, last: int) -> str:
        key = (spec.type, first, last)
        if key not in self.cache:
            self.cache[key] = canonical(spec, self.text_of(first, last))
        return self.cache[key]


def _is_word(token: Token) -> bool:
    return any(ch.isalnum() for ch in token.text)


def _matches(
    spec: PredicateSpec, target: str, segment: _Segment, taken: set[int]
) -> list[tuple[int, int]]:
    """Free token spans of a segment that normalise to ``target``, best first.

    An exact canonical form beats a same-value one ("30 GB" over "30" for
    ``30gb``); then the shorter span (no "the" or "on" around it); then the earlier.
    """
    found: list[tuple[tuple[int, int, int], tuple[int, int]]] = []
    tokens = segment.tokens
    for first in range(len(tokens)):
        if not _is_word(tokens[first]) and tokens[first].text not in "+£$€¥₹":
            continue
        for last in range(first + 1, min(len(tokens), first + MAX_SPAN_TOKENS) + 1):
            if not _is_word(tokens[last - 1]):
                continue
            if set(range(segment.offset + first, segment.offset + last)) & taken:
                break
            value = segment.normalised(spec, first, last)
            if value and value == target:
                found.append(((0, last - first, first), (first, last)))
            elif value and spec.same_value(value, target):
                found.append(((1, last - first, first), (first, last)))
    return [span for _, span in sorted(found)]


def _span(segment: _Segment, label: str, first: int, last: int) -> LabelledSpan:
    return LabelledSpan(label, segment.offset + first, segment.offset + last)


def _gap(segment: _Segment, a: LabelledSpan, b: LabelledSpan) -> list[str]:
    return [t.text for t in segment.tokens[a.end - segment.offset : b.start - segment.offset]]


def _place_two(
    spec: PredicateSpec,
    gold: GoldTriple,
    target: str,
    segment: _Segment,
    taken: set[int],
) -> list[LabelledSpan] | None:
    """A value said in two parts, each its own span.

    A time window ("10am on Monday": windows.py) or a free-text value ("a cat
    ... called Pickle": compose.py); the same rule joins the parts when decoding.
    """
    is_time = spec.type in TIME_TYPES
    part_value = spec.normalise if is_time else (lambda text: canonical(spec, text))
    label = span_label(spec.name, gold.negated, gold.hedged)
    words = target.split()
    for cut in range(1, len(words)):
        for head in _matches(spec, part_value(" ".join(words[:cut])), segment, taken):
            claimed = taken | set(range(segment.offset + head[0], segment.offset + head[1]))
            for tail in _matches(spec, part_value(" ".join(words[cut:])), segment, claimed):
                a, b = sorted(
                    [_span(segment, label, *head), _span(segment, label, *tail)],
                    key=lambda s: s.start,
                )
                first, second, gap = segment.span_text(a), segment.span_text(b), _gap(segment, a, b)
                if (one_window if is_time else composes)(first, second, gap):
                    return [a, b]
    return None


def _place(
    spec: PredicateSpec, gold: GoldTriple, segments: Sequence[_Segment], taken: set[int]
) -> _Placed | None:
    target = spec.normalise(gold.obj)
    label = span_label(spec.name, gold.negated, gold.hedged)
    for segment in segments:
        found = _matches(spec, target, segment, taken)
        if found:
            return _Placed(gold, spec, [_span(segment, label, *found[0])], segment.from_context)
    if (spec.type in _FREE_TEXT_TYPES or spec.type in TIME_TYPES) and len(target.split()) > 1:
        for segment in segments:
            parts = _place_two(spec, gold, target, segment, taken)
            if parts is not None:
                return _Placed(gold, spec, parts, segment.from_context)
    return None


def _merge_windows(
    placed: list[_Placed], segments: Sequence[_Segment]
) -> tuple[list[_Placed], int]:
    """Old separate times ("monday", "10am") that the window rule joins, as one window."""
    by_segment = {s.from_context: s for s in segments}
    singles = sorted(
        (p for p in placed if len(p.spans) == 1 and p.spec.type in TIME_TYPES),
        key=lambda p: p.spans[0].start,
    )
    groups: list[list[_Placed]] = []
    for item in singles:
        group = groups[-1] if groups else []
        if group and group[0].from_context == item.from_context:
            segment = by_segment[item.from_context]
            last, span = group[-1].spans[0], item.spans[0]
            kinds = frozenset().union(*(time_kinds(segment.span_text(g.spans[0])) for g in group))
            if last.label == span.label and joins(
                kinds, segment.span_text(span), _gap(segment, last, span)
            ):
                group.append(item)
                continue
        groups.append([item])
    merged: list[_Placed] = []
    used: set[int] = set()
    for group in (g for g in groups if len(g) > 1):
        head, segment = group[0], by_segment[group[0].from_context]
        first, last = group[0].spans[0], group[-1].spans[0]
        value = head.spec.normalise(" ".join(segment.span_text(g.spans[0]) for g in group))
        whole = head.spec.normalise(
            segment.span_text(LabelledSpan(first.label, first.start, last.end))
        )
        # One span when the covering text reads as the window ("Monday at 10am").
        spans = (
            [LabelledSpan(first.label, first.start, last.end)]
            if head.spec.same_value(whole, value)
            else [g.spans[0] for g in group]
        )
        window = GoldTriple(
            head.gold.predicate,
            value,
            head.gold.negated,
            head.gold.hedged,
            any(g.gold.update for g in group),
            all(g.gold.agent for g in group),
        )
        merged.append(_Placed(window, head.spec, spans, head.from_context))
        used |= {id(g) for g in group}
    kept = [p for p in placed if id(p) not in used]
    return kept + merged, sum(len(g) - 1 for g in groups)


def align(example: Example, vocab: Vocabulary | None = None) -> Alignment:
    """Place each gold object of a turn on a token span, in the turn or else in its context."""
    vocab = vocab or default_vocabulary()
    encoded = encode(example.previous_text, example.text, example.role)
    segments = [
        _Segment(*encoded.segment(from_context=False), from_context=False),
        _Segment(*encoded.segment(from_context=True), from_context=True),
    ]
    golds: dict[tuple[str, str, bool, bool], GoldTriple] = {}
    for gold in example.gold:
        spec = vocab.spec(gold.predicate)
        golds.setdefault(
            (spec.name, spec.key(spec.normalise(gold.obj)), gold.negated, gold.hedged), gold
        )
    # Longer objects first: "saturday morning" claims its words before a bare "morning".
    ordered = sorted(golds.values(), key=lambda g: -len(g.obj.split()))
    placed: list[_Placed] = []
    unaligned: list[GoldTriple] = []
    taken: set[int] = set()
    for gold in ordered:
        found = _place(vocab.spec(gold.predicate), gold, segments, taken)
        if found is None:
            unaligned.append(gold)
            continue
        placed.append(found)
        for span in found.spans:
            taken |= set(range(span.start, span.end))
    placed, merged = _merge_windows(placed, segments)
    spans = sorted((s for p in placed for s in p.spans), key=lambda s: s.start)
    return Alignment(
        encoded=encoded,
        spans=tuple(spans),
        gold=tuple([p.gold for p in placed] + unaligned),
        unaligned=tuple(unaligned),
        merged=merged,
        in_context=sum(1 for p in placed if p.from_context),
    )


@dataclass(frozen=True)
class Coverage:
    """How many gold triples of a set of turns were placed on a span."""

    total: int
    aligned: int
    merged: int
    in_context: int
    unaligned: tuple[tuple[str, GoldTriple], ...]  # (source, gold)


def coverage(examples: Sequence[Example], alignments: Sequence[Alignment]) -> Coverage:
    """Gold counted as written in the files: a merged window counts both its lines."""
    total = sum(len(e.gold) for e in examples)
    missing = tuple(
        (e.source, g) for e, a in zip(examples, alignments, strict=True) for g in a.unaligned
    )
    duplicates = sum(
        len(e.gold) - len(a.gold) - a.merged for e, a in zip(examples, alignments, strict=True)
    )
    return Coverage(
        total=total,
        aligned=total - len(missing) - duplicates,
        merged=sum(a.merged for a in alignments),
        in_context=sum(a.in_context for a in alignments),
        unaligned=missing,
    )


# -- decoding ---------------------------------------------------------------------
@dataclass(frozen=True)
class LearnedTriple:
    """A fact decoded from tags: typed, canonical, with the tagger's confidence."""

    predicate: str
    obj: str
    negated: bool
    hedged: bool
    confidence: float
    from_context: bool
    # Where the value's words are in its segment's text (the turn's, or the
    # previous turn's when ``from_context``): what reads its sentence.
    start: int = 0
    end: int = 0


def _clip(encoded: Encoded, span: LabelledSpan) -> tuple[bool, int, int] | None:
    """A predicted span kept inside the segment of its first word (never across the separator)."""
    if span.start < len(encoded.context):
        return True, span.start, min(span.end, len(encoded.context))
    if span.start >= encoded.current_start:
        return False, span.start - encoded.current_start, span.end - encoded.current_start
    return None


def decode(
    encoded: Encoded, spans: Sequence[LabelledSpan], vocab: Vocabulary | None = None
) -> list[LearnedTriple]:
    """Typed triples of predicted spans: values normalised by their predicate's type.

    Values that do not fit the type (``spec.problem``) are dropped; two parts
    of a time window are joined (windows.py); a value found twice keeps its
    best score.
    """
    vocab = vocab or default_vocabulary()
    parts: list[tuple[bool, int, int, LabelledSpan]] = []
    for span in sorted(spans, key=lambda s: s.start):
        clipped = _clip(encoded, span)
        if clipped is not None:
            parts.append((*clipped, span))
    triples: list[LearnedTriple] = []
    i = 0
    while i < len(parts):
        in_context, first, last, span = parts[i]
        predicate, negated, hedged = parse_span_label(span.label)
        spec = vocab.spec(predicate)
        tokens, text, _ = encoded.segment(in_context)
        if spec.type == "address" and first > 0 and _HOUSE_NUMBER.fullmatch(tokens[first - 1].text):
            # "12 Birch Court" tagged from "Birch": a street's number leans to O
            # alone, and an address without it names no house.
            first -= 1
        if spec.type in TIME_TYPES:
            first, last = widen([token.text for token in tokens], first, last)
        if spec.type in _FREE_TEXT_TYPES:
            last = _content_end(tokens, first, last)
        raw = text[tokens[first].start : tokens[last - 1].end]
        start = tokens[first].start
        score = span.score
        kinds = time_kinds(raw) if spec.type in TIME_TYPES else frozenset()
        i += 1
        while i < len(parts) and parts[i][0] == in_context and parts[i][1] < last:
            # A part the time expression just widened over goes; what it tagged
            # beyond the expression stays ("2nd, after 3" after "Friday the 2nd").
            rest = last
            while rest < parts[i][2] and not _is_word(tokens[rest]):
                rest += 1
            if rest >= parts[i][2]:
                del parts[i]
            else:
                parts[i] = (in_context, rest, parts[i][2], parts[i][3])
                break
        while i < len(parts) and kinds:
            n_context, n_first, n_last, n_span = parts[i]
            if n_context != in_context or n_span.label != span.label:
                break
            n_raw = text[tokens[n_first].start : tokens[n_last - 1].end]
            gap = [t.text for t in tokens[last:n_first]]
            opening = [t.text for t in tokens[max(first - 1, 0) : last]]
            if closes_range(opening, n_raw, gap):
                # The range's own words stay: "between 8am and noon", "9 to 5".
                opener = (
                    first - 1 if first and tokens[first - 1].text.casefold() == "between" else first
                )
                raw = text[tokens[opener].start : tokens[n_last - 1].end]
            elif joins(kinds, n_raw, gap):
                raw = f"{raw} {n_raw}"
            else:
                break
            score, last = min(score, n_span.score), n_last
            kinds |= time_kinds(n_raw)
            i += 1
        if i < len(parts) and spec.type in _FREE_TEXT_TYPES and parts[i][0] == in_context:
            # "a cat, her name is Pickle" tagged as two parts is one value (compose.py).
            _, n_first, n_last, n_span = parts[i]
            n_raw = text[tokens[n_first].start : tokens[n_last - 1].end]
            gap = [t.text for t in tokens[last:n_first]]
            if n_span.label == span.label and composes(raw, n_raw, gap):
                raw, score, last = f"{raw} {n_raw}", min(score, n_span.score), n_last
                i += 1
        while i < len(parts) and spec.type in _PLACE_TYPES:
            # "200 Market Street, 7th floor" tagged as two spans is one address.
            n_context, n_first, n_last, n_span = parts[i]
            gap = [t.text for t in tokens[last:n_first]]
            if n_context != in_context or n_span.label != span.label or not _joins_place(gap):
                break
            raw = text[start : tokens[n_last - 1].end]
            score, last = min(score, n_span.score), n_last
            i += 1
        value = canonical(spec, _without_dangling(raw))
        if not value or spec.problem(value) is not None:
            continue
        end = tokens[last - 1].end
        triples.append(
            LearnedTriple(spec.name, value, negated, hedged, score, in_context, start, end)
        )
    return _dedupe(triples, vocab)


# Words that only link a value to what follows it. A span the tagger cut
# mid-phrase ends in one ("april 15 between", "moving to"); it says nothing
# of the value, and no gold value ends in one (benchmarks/devset/LABELLING.md).
_DANGLING = frozenset(
    {"between", "from", "and", "or", "to", "at", "on", "in", "by", "until", "till", "for"}
    | {"with", "of", "the", "a", "an", "my", "our", "your", "his", "her", "their"}
)


def _without_dangling(raw: str) -> str:
    """``raw`` without the linking words it ends in."""
    words = raw.split()
    kept = len(words)
    while kept and words[kept - 1].casefold().strip(",;:") in _DANGLING:
        kept -= 1
    return raw if kept == len(words) else " ".join(words[:kept])


def _content_end(tokens: Sequence[Token], first: int, last: int) -> int:
    """``last`` moved back over the punctuation and linking words a span ends in.

    The tagger often runs a span on into what follows its value ("Margaret, the
    | wife"); cut there, the next part of the same value is close enough to
    join it (compose.py), and the gap holds the words that were cut.
    """
    while last - first > 1 and (
        not _is_word(tokens[last - 1]) or tokens[last - 1].text.casefold() in _DANGLING
    ):
        last -= 1
    return last


def _joins_place(gap: Sequence[str]) -> bool:
    """Whether two place spans with these tokens between are parts of one place.

    Only a comma (or nothing) joins: "Leeds, West Yorkshire"; "Leeds or York"
    and "Leeds to York" are two places.
    """
    return len(gap) <= 1 and all(word == "," for word in gap)


def _dedupe(triples: list[LearnedTriple], vocab: Vocabulary) -> list[LearnedTriple]:
    best: dict[tuple[str, str, bool], LearnedTriple] = {}
    for triple in triples:
        spec = vocab.spec(triple.predicate)
        key = (triple.predicate, spec.key(triple.obj), triple.negated)
        held = best.get(key)
        # The turn's own words over its context's; then the higher score.
        if held is None or (held.from_context, -held.confidence) > (
            triple.from_context,
            -triple.confidence,
        ):
            best[key] = triple
    return list(best.values())
