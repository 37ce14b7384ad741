"""The predicate vocabulary and the canonical form of objects.

Every fact the NLP rules produce uses a predicate of pipelines/vocabulary; objects are
normalised so the same fact stated twice ("Mondays", "on Monday") yields the
same triple and the same hash. benchmarks/devset/README.md documents the same
rules for the gold triples.
"""

from __future__ import annotations

import re

from pipelines.vocabulary.values import (
    LANGUAGE_NAMES,
    normalise_code,
    normalise_datetime,
    normalise_phone,
    normalise_place,
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
        # "order" in dialogue is almost always something sent to the user ("Maybe
        # I'll order on Sunday evening"), far more often than a table booking.
        frozenset(
            # No "bring": "bring the car in" is a visit as often as a delivery.
            {"deliver", "delivery", "ship", "parcel", "arrive", "courier", "send", "order"}
        ),
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
            {"fly", "flight", "travel", "trip", "holiday", "hotel", "stay", "abroad", "train"}
        ),
    ),
    (
        "payment_date",
        frozenset(
            {"pay", "payment", "debit", "invoice", "bill", "month", "fee", "payday", "charge"}
        ),
    ),
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
PHONE_CUES |= frozenset({"ring"})
CODE_CUES = frozenset({"code", "pin", "passcode", "keysafe", "safe", "lockbox", "combination"})
METER_CUES = frozenset({"meter", "reading"})
ADDRESS_CUES = frozenset({"live", "address", "move", "moved", "home", "flat", "office", "house"})
TRAVEL_CUES = frozenset({"fly", "flying", "travel", "trip", "holiday", "go", "going", "visit"})
TRAVEL_CUES |= frozenset({"hotel", "abroad", "travelling", "traveling", "moving", "back", "flight"})
TRAVEL_CUES |= frozenset({"head", "heading"})

# Closed lists for objects that are not NER spans.
DIETS = ("gluten-free", "vegetarian", "vegan", "pescatarian", "halal", "kosher", "lactose-free")
# Pattern -> canonical method. A bare "card" is a payment method only after "by"
# or "with (my) card": "gift card", "SIM card" and "card reader" are not.
PAYMENT_METHODS = {
    r"\bcredit cards?\b": "credit card",
    r"\bdebit cards?\b": "debit card",
    r"\b(?:by|with)(?: my| a)? card\b": "card",
    r"\bdirect debits?\b": "direct debit",
    r"\bpaypal\b": "paypal",
    r"\bcash\b": "cash",
    r"\bbank transfers?\b": "bank transfer",
    # Card brands are named as the method ("I'll pay with my Amex").
    r"\bamex\b|\bamerican express\b": "amex",
    r"\bmastercard\b": "mastercard",
}
CONTACT_CHANNELS = {
    r"\btext(?:s|ed)? me\b|\btext (?:messages?|alerts?)\b|\btexts\b|\bsms\b"
    r"|\btext (?:it|them) to me\b|\btext(?:'s| is) (?:fine|best|better|great|good|grand|ok|okay)\b"
    r"|^\W*text(?: me)?(?: pls| please)?\W*$": "sms",
    r"\b(?:by|via) e-?mail\b|\be-?mail (?:is better|only)\b"
    r"|\be-?mail me\b(?! (?:any |the )?newsletters?)"
    r"|\be-?mail(?:'s|\s+is|\s+works)?\s+(?:fine|best|better|great|good|grand|ok|okay)\b"
    r"|\bon e-?mail\b|\bto my e-?mail\b|^\W*e-?mail(?: me)?,? (?:pls|please)\b"
    r"|\be-?mail (?:it|them|the \w+)\b": "email",
    # "not by phone", "don't ring to confirm", "text me rather than calling".
    r"\bby (?:tele)?phone\b|(?<=rather than )(?:calling|ringing)\b"
    r"|(?<=instead of )(?:calling|ringing)\b"
    r"|\bring (?:me )?to confirm\b"
    # "please don't call me", "dont phone me in class", "never ring the landline": a
    # refused call is the channel. Not when a time or place bounds it ("don't call
    # before 9" is a contact time), nor "didn't call me back" (a complaint).
    r"|(?:(?<=don't )|(?<=dont )|(?<=do not )|(?<=never ))(?:call|ring|phone)(?: me| us)?\b"
    r"(?! ?back\b)(?![^.!?,;]*\b(?:before|after|until|till|between|during|at|on|early|late"
    r"|mornings?|afternoons?|evenings?|nights?|weekends?|weekdays?)\b)": "call",
    # "a call is better", "phone calls are fine": the channel, not a time ("call me at 5").
    r"\b(?:a|phone) calls? (?:is|are|would be) (?:better|fine|best)\b": "call",
    r"\bpaper letters?\b|\bby post\b|\bletters\b"
    r"|\ba letter(?:'s| is| would be) (?:fine|best|better|great|good)\b"
    r"|\b(?:post|mail) (?:anything|it|them|letters?) (?:to|out)\b": "letter",
    r"\bnewsletters?\b": "newsletter",
    r"\bvoice ?mails?\b": "voicemail",
    r"\bwhats ?app\b": "whatsapp",
}
# A language named as the one to use, or one the user speaks. Names come from the
# vocabulary's language type (pipelines/vocabulary/values.py).
_LANGUAGE_NAMES = "|".join(
    sorted((name for name in LANGUAGE_NAMES if " " not in name), key=len, reverse=True)
)
_FINE = r"(?:fine|ok|okay|good|great|better|best|please|only)"
LANGUAGE_PREFERENCE = re.compile(
    rf"\b(?P<a>{_LANGUAGE_NAMES})(?:'s| is| would be| works)? {_FINE}\b"
    rf"|\b(?:in|prefer|rather|use|switch to|speak to me in) (?P<b>{_LANGUAGE_NAMES})\b",
    re.IGNORECASE,
)
_SPEAK = r"(?:speak|can speak|also speak|grew up speaking)(?: (?:some|a bit of|fluent|basic))?"
LANGUAGE_SPOKEN = re.compile(
    rf"\bi {_SPEAK} (?P<a>{_LANGUAGE_NAMES})\b"
    rf"|\b(?:my (?:first|native|mother) (?:language|tongue) is) (?P<b>{_LANGUAGE_NAMES})\b",
    re.IGNORECASE,
)
# A channel named as a thing liked ("a text on the day would be great") is the channel.
CHANNEL_NOUNS = {"text": "sms", "sms": "sms", "email": "email", "e-mail": "email"}
CHANNEL_NOUNS |= {"call": "call", "phone call": "call", "letter": "letter", "post": "letter"}
# A flat or unit number leading an address ("Apt 3B, 52 Bellwood Avenue").
ADDRESS_UNITS = ("flat ", "apt ", "apartment ", "unit ", "suite ")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")

_UNIT = re.compile(r"(\d)\s+(gb|mb|tb|mbps|gbps|gig)\b")


# A data or speed allowance chosen as a plan: "the 500Mb one", "drop down to 10GB",
# "500Mb, no more dithering" (not "I only get 5Mb", a measurement).
PLAN_SIZE = re.compile(
    r"(?:^|\b(?:the|to|for|take|want|get)\s+)\d+\s?(?:gb|mb|mbps|gbps|tb)\b",
    re.IGNORECASE,
)


def canonical_plan(text: str) -> str:
    """Lower case, a number and its unit joined: '30 GB' -> '30gb' (tokenised apart)."""
    return _UNIT.sub(r"\1\2", " ".join(text.lower().split()))


# One normaliser per value type (pipelines/vocabulary/values.py); these names stay
# for the extraction rules that call them.
canonical_phone = normalise_phone
canonical_time = normalise_datetime
canonical_place = normalise_place


canonical_code = normalise_code


def is_phone_like(text: str) -> bool:
    """At least 7 digits: shorter numbers are codes, sizes, amounts."""
    return len(re.sub(r"\D", "", text)) >= 7
