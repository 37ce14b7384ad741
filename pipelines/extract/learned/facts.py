"""The learned tagger's triples as extracted facts, and how the rules add to them.

The tagger (pipelines/extract/learned/model.py) gives typed triples with
polarity, hedge and its own confidence. Here they become ``ExtractedFact``s
with the kind the vocabulary gives (a negated constraint is a standing rule),
the speaker's voice, and a confidence on the review gate's scale, and are
joined with the rules' facts (pipelines/extract/extractor.py) by ``combine``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipelines.extract.learned.tagging import LearnedTriple
from pipelines.parse.model import ParsedTurn
from pipelines.vocabulary import default_vocabulary
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact, Span, origin, statement
from schemas.memory import Polarity

# On the review gate's scale (commit >= 0.82, pending >= 0.55): a confident tag
# commits like a rule's plain statement, a doubtful one waits for the user, a
# hedge never commits, and a value taken from the turn before (a "yes" to an
# offer) ranks just under a stated one, as the rules' confirmed offers do.
CONFIDENCE_SURE = 0.88
CONFIDENCE_UNSURE = 0.7
CONFIDENCE_HEDGED = 0.6
CONFIDENCE_FROM_CONTEXT = 0.86
# A rule's fact read by an explicit cue word (pipelines/extract/extractor.py).
CONFIDENCE_CUED = 0.9
# The tagger's own score (its softmax, or the CRF's marginal) from which a tag is sure.
SURE_TAG_SCORE = 0.6
_VOICES = {Role.USER: Assertor.USER, Role.AGENT: Assertor.AGENT, Role.SYSTEM: Assertor.SYSTEM}
# The structured-field name of each value type: what hashed exact matching and
# the dialogue context (a time sets the session's topic) read.
_FIELDS = {"datetime": "TIME", "date": "TIME", "place": "PLACE", "address": "PLACE"}
_FIELDS |= {"phone": "PHONE", "email": "EMAIL", "code": "CODE", "money": "MONEY"}


def learned_fact(
    event: DialogueEvent,
    parsed: ParsedTurn,
    triple: LearnedTriple,
    *,
    update: bool,
    source: Span | None = None,
) -> ExtractedFact:
    """One tagged triple of ``event`` as a candidate fact about the user."""
    spec = default_vocabulary().spec(triple.predicate)
    polarity = Polarity.NEGATED if triple.negated else Polarity.AFFIRMED
    kind = spec.kind_of(triple.obj, negated=triple.negated)
    if triple.hedged:
        confidence = CONFIDENCE_HEDGED
    elif triple.from_context:
        confidence = CONFIDENCE_FROM_CONTEXT
    else:
        sure = triple.confidence >= SURE_TAG_SCORE
        confidence = CONFIDENCE_SURE if sure else CONFIDENCE_UNSURE
    return ExtractedFact(
        **origin(event),
        subject="user",
        predicate=spec.name,
        object=triple.obj,
        polarity=polarity,
        kind=kind,
        confidence=confidence,
        text=statement(spec.name, triple.obj, polarity),
        intent=parsed.intent.value,
        asserted_by=_VOICES[event.role],
        hedged=triple.hedged,
        is_update=update,
        fields={_FIELDS.get(spec.type, "VALUE"): triple.obj},
        source_span=source,
    )


# Value types whose form a pattern pins down (digits, an address with "@",
# an amount with its currency, a reference code, a closed list of channels or
# languages, an age): there the rules' regexes are precise, and they add what
# the tagger missed. Everywhere else the tagger's reading is kept. Measured on
# the first-sight splits (benchmarks/devset/README.md, "Tagger first").
CLOSED_FORM_TYPES = frozenset({"phone", "email", "money", "code", "channel", "language", "age"})


def combine(
    learned: Sequence[ExtractedFact], rules: Sequence[ExtractedFact]
) -> list[ExtractedFact]:
    """The tagger's facts, then the rules' closed-form values the tagger did not state.

    The fine-tuned tagger reads new domains and personal chat far better than
    the rules, which were written for customer service: on the nine older
    first-sight splits the rules-first hybrid scored triple F1 0.421, the
    tagger first 0.485 (benchmarks/devset/README.md, "Tagger first"). A tagger fact is kept
    when the tagger is sure of it, took it from the turn before (an answer),
    or marked it hedged (held for the user, never committed); an unsure one
    alone was more often wrong than right, and is kept, as sure, only where the
    rules read the same value with the same polarity (an agent question before
    "i hate swimming lol" leaves the tagger unsure; seen splits pooled, friends
    F1 0.531 -> 0.533, negation recall 0.537 -> 0.543). A rule's value of a closed-form
    type is added when the tagger did not state it and, for a single-valued
    predicate, gave it no other value in this turn (two values of one
    predicate in one turn would make a version chain of one turn).
    """
    vocab = default_vocabulary()

    def agreed(fact: ExtractedFact) -> bool:
        spec = vocab.spec(fact.predicate)
        return any(
            vocab.canonical(r.predicate) == spec.name
            and r.polarity is fact.polarity
            and spec.same_value(fact.object, r.object)
            for r in rules
        )

    sure = [f for f in learned if f.confidence > CONFIDENCE_UNSURE or f.hedged]
    kept = [
        f if f in sure else f.model_copy(update={"confidence": CONFIDENCE_SURE})
        for f in learned
        if f in sure or agreed(f)
    ]

    def stated(rule: ExtractedFact) -> bool:
        spec = vocab.spec(rule.predicate)
        same = [f for f in kept if vocab.canonical(f.predicate) == spec.name]
        if not spec.multi_valued and any(f.polarity is rule.polarity for f in same):
            return True
        return any(spec.same_value(f.object, rule.object) for f in same)

    added = [
        r for r in rules if vocab.spec(r.predicate).type in CLOSED_FORM_TYPES and not stated(r)
    ]
    # One string of digits, two readings: where a rule read it by its cue ("call
    # me on 0151 234 5678") as another closed-form type than the tagger did (a
    # reference number), the cue's reading replaces the tagger's.
    retyped = {
        id(f)
        for f in kept
        for r in added
        if r.confidence >= CONFIDENCE_CUED
        and vocab.spec(f.predicate).type in CLOSED_FORM_TYPES
        and _digits(f.object)
        and _digits(f.object) == _digits(r.object)
    }
    return [*(f for f in kept if id(f) not in retyped), *added]


def _digits(value: str) -> str:
    return "".join(ch for ch in value if ch.isdigit())
