"""The predicate vocabulary and the canonical form of objects.

Every fact the NLP rules produce uses one of ``PREDICATES``; objects are
normalised so the same fact stated twice ("Mondays", "on Monday") yields the
same triple and the same hash. benchmarks/devset/README.md documents the same
rules for the gold triples.
"""

from __future__ import annotations

import re

from schemas.memory import MemoryKind

# predicate -> the kind a plain affirmed statement of it has.
PREDICATES: dict[str, MemoryKind] = {
    "phone_number": MemoryKind.FACT,
    "email": MemoryKind.FACT,
    "address": MemoryKind.FACT,
    "door_code": MemoryKind.FACT,
    "meter_reading": MemoryKind.FACT,
    "allergy": MemoryKind.FACT,
    "diet": MemoryKind.PREFERENCE,
    "likes": MemoryKind.PREFERENCE,
    "contact_channel": MemoryKind.PREFERENCE,
    "payment_method": MemoryKind.PREFERENCE,
    "plan": MemoryKind.FACT,
    "contact_time": MemoryKind.PREFERENCE,
    "installation_time": MemoryKind.STATUS,
    "delivery_time": MemoryKind.STATUS,
    "appointment_time": MemoryKind.STATUS,
    "travel_time": MemoryKind.STATUS,
    "payment_date": MemoryKind.FACT,
    "travel": MemoryKind.STATUS,
    "order_status": MemoryKind.STATUS,
    "callback_time": MemoryKind.COMMITMENT,
}
# A negated time or channel is a standing constraint ("no calls before 9").
RULE_WHEN_NEGATED = frozenset(
    {
        "contact_time",
        "contact_channel",
        "installation_time",
        "delivery_time",
        "appointment_time",
        "travel_time",
    }
)

# "send an engineer on Saturday" is a visit, not a delivery: a person sent (or
# coming) makes the time an appointment whatever delivery verb carries it.
VISIT_CUES = frozenset({"engineer", "technician", "repairman", "person", "plumber", "fitter"})
# Topic cues (lemmas or lower-cased words) that say what a TIME is the time of.
# Checked in this order: the first topic found in the clause, then the sentence,
# then the session's recent turns (pipelines/extract/context.py) win; without
# any cue a time is an appointment time.
TIME_TOPICS: tuple[tuple[str, frozenset[str]], ...] = (
    ("installation_time", frozenset({"install", "installation", "installer", "fibre", "router"})),
    (
        "delivery_time",
        frozenset({"deliver", "delivery", "ship", "parcel", "arrive", "courier", "send"}),
    ),
    (
        "contact_time",
        frozenset({"call", "ring", "phone", "contact", "text", "reach", "email", "newsletter"}),
    ),
    (
        "travel_time",
        frozenset(
            # No "move": in support chat "move it to Friday" reschedules far more
            # often than it means moving house.
            {"fly", "flight", "travel", "trip", "holiday", "hotel", "stay", "abroad"}
        ),
    ),
    ("payment_date", frozenset({"pay", "payment", "debit", "invoice", "bill", "month"})),
    # Last: the default predicate, listed so a booking cue resets a turn-context topic.
    (
        "appointment_time",
        frozenset({"appointment", "book", "booking", "visit", "table"}) | VISIT_CUES,
    ),
)
DEFAULT_TIME_PREDICATE = "appointment_time"


def time_topic(lemmas: set[str]) -> str | None:
    """The predicate the topic cues among ``lemmas`` point to, or None without a cue."""
    topic = next((predicate for predicate, cues in TIME_TOPICS if lemmas & cues), None)
    if topic == "delivery_time" and lemmas & VISIT_CUES:
        return DEFAULT_TIME_PREDICATE
    return topic


PHONE_CUES = frozenset({"number", "phone", "mobile", "call", "reach", "text", "landline", "cell"})
CODE_CUES = frozenset({"code"})
METER_CUES = frozenset({"meter", "reading"})
ADDRESS_CUES = frozenset({"live", "address", "move", "moved", "home", "flat", "office", "house"})
TRAVEL_CUES = frozenset({"fly", "flying", "travel", "trip", "holiday", "go", "going", "visit"})
TRAVEL_CUES |= frozenset({"hotel", "abroad", "travelling", "traveling", "moving", "back", "flight"})
TRAVEL_CUES |= frozenset({"head", "heading"})

# Closed lists for objects that are not NER spans.
DIETS = ("gluten-free", "vegetarian", "vegan", "pescatarian", "halal", "kosher", "lactose-free")
PAYMENT_METHODS = {
    "credit card": "credit card",
    "debit card": "debit card",
    "paypal": "paypal",
    "cash": "cash",
    "bank transfer": "bank transfer",
}
CONTACT_CHANNELS = {
    r"\btext(?:s|ed)? me\b|\btext messages?\b|\bsms\b": "sms",
    r"\b(?:by|via) e-?mail\b|\be-?mail (?:is better|only)\b": "email",
    r"\bpaper letters?\b|\bby post\b|\bletters\b": "letter",
    r"\bnewsletters?\b": "newsletter",
}
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")

_TIME_PLURALS = {
    f"{day}s": day
    for day in [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "weekend",
        "weekday",
        "morning",
        "afternoon",
        "evening",
        "night",
    ]
}
_TIME_DROP = re.compile(r"^(?:(?:on|at|in|the|this|every|any|around|about|by|from|of)\s+)+")
# "next Monday" is just Monday; "next week" keeps its "next" (else it is any week).
_NEXT_DAY = re.compile(
    r"^next\s+(?=(?:mon|tues|wednes|thurs|fri|satur|sun)day|weekend|morning|afternoon|evening)"
)
_CLOCK = re.compile(r"\b(\d{1,2}(?::\d{2})?)\s*([ap])\.?\s*m\b\.?")


def canonical_time(text: str) -> str:
    """'Next Mondays' -> 'monday'; '9 a.m.' -> '9am'; 'before 9' stays 'before 9'."""
    value = _CLOCK.sub(lambda m: f"{m.group(1)}{m.group(2)}m", text.lower())
    value = _TIME_DROP.sub("", value.strip(" .,!?;:")).strip()
    value = _NEXT_DAY.sub("", _TIME_DROP.sub("", value)).strip()
    return " ".join(_TIME_PLURALS.get(word, word) for word in value.split())


def canonical_phone(text: str) -> str:
    """Digits only, with a leading '+' kept: '+44 7700 900456' -> '+447700900456'."""
    digits = re.sub(r"\D", "", text)
    return f"+{digits}" if text.strip().startswith("+") else digits


def canonical_place(text: str) -> str:
    """Lower case, single spaces, ', ' between address parts, no leading 'the'."""
    value = re.sub(r"\s*,\s*", ", ", " ".join(text.lower().split())).strip(" .,!?;:")
    return re.sub(r"^(?:the|to|in|at)\s+", "", value)


def canonical_code(text: str) -> str:
    """Codes and readings: the characters without spaces or punctuation at the ends."""
    return re.sub(r"\s+", "", text.strip(" .,!?;:")).lower()


def is_phone_like(text: str) -> bool:
    """At least 7 digits: shorter numbers are codes, sizes, amounts."""
    return len(re.sub(r"\D", "", text)) >= 7
