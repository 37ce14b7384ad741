"""Value types of the predicate vocabulary: one canonical form, one identity, one check.

Each type answers three questions about a value, purely from its text:

- ``normalise``: the one canonical form the value is stored in ("+44 7700
  900456" -> "+447700900456", "500 Mbps" -> "500mbps", "zh" -> "chinese");
- ``key``: the identity used to tell whether two surface forms are the same
  value ("500mbps" / "fiber-500" / "500mbps fiber" all share the key of a
  500 Mbps fiber plan, so a re-statement is a confirmation, not a version);
- ``problem``: why a value does not fit the type (None when it does). The
  review holds such a fact for a human with that reason: an address of
  "1 gbps" is never committed.

Checks are shapes, not lists of known good values, wherever the world is
open (addresses, names, free text); closed sets (languages, channels, enum
values) are checked by membership.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

# -- shared lexicons ----------------------------------------------------------
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = (
    "january", "february", "march", "april", "may", "june", "july",
    "august", "september", "october", "november", "december",
)  # fmt: skip
_MONTH_SHORT = {m[:3]: m for m in MONTHS} | {"sept": "september"}
_DAY_PARTS: tuple[str, ...] = ("morning", "afternoon", "evening", "night", "noon", "midday")
_DAY_PARTS += ("midnight", "lunch", "lunchtime", "teatime", "dinnertime", "daytime", "overnight")
_DAY_PARTS += ("tonight",)
_DAY_SHORT = {"mon": "monday", "tue": "tuesday", "tues": "tuesday", "thu": "thursday"}
_DAY_SHORT |= {"thur": "thursday", "thurs": "thursday", "fri": "friday", "weds": "wednesday"}
_DAY_SHORT |= {"sat": "saturday", "sun": "sunday", "arvo": "afternoon", "wed": "wednesday"}
_DAY_SHORT |= {"wkend": "weekend", "wkends": "weekend", "b4": "before", "tmrw": "tomorrow"}
_DAY_SHORT |= {"tmr": "tomorrow", "tomoz": "tomorrow", "2moro": "tomorrow", "eve": "evening"}
_PLURALS = {f"{w}s": w for w in (*WEEKDAYS, "weekend", "weekday", *_DAY_PARTS)}
# Words a time expression is made of: a value of only these (and numbers) is a time.
_TIME_WORDS = frozenset(
    {*WEEKDAYS, *MONTHS, *_DAY_PARTS, *_MONTH_SHORT, "weekend", "weekday", "week", "month"}
    | {"year", "day", "days", "today", "tomorrow", "yesterday", "now", "asap", "soon", "later"}
    | {"next", "this", "last", "coming", "following", "every", "each", "other", "any", "anytime"}
    | {"before", "after", "until", "till", "til", "by", "from", "to", "between", "and", "or"}
    | {"around", "about", "at", "on", "in", "of", "the", "a", "an", "early", "late", "mid"}
    | {"end", "start", "beginning", "middle", "first", "second", "third", "fourth", "last"}
    | {"thing", "o'clock", "oclock", "half", "quarter", "past", "am", "pm", "ish", "sharp"}
    | {"fortnight", "weeks", "months", "hour", "hours", "minutes", "time", "times", "slot"}
    | {"christmas", "easter", "new", "eve", "holidays", "holiday", "term", "summer", "winter"}
    | {"spring", "autumn", "fall", "weekdays", "weekends", "nights", "mornings", "daily"}
    | {"only", "either", "latest", "earliest", "onwards", "later", "date", "same", "whenever"}
    | {"school", "run", "work", "lunch", "dinner", "breakfast", "midweek", "tonite", "tues"}
)
_UNITS = {
    "gb": "gb", "gig": "gb", "gigs": "gb", "mb": "mb", "tb": "tb", "kb": "kb",
    "mbps": "mbps", "gbps": "gbps", "mbit": "mbps", "meg": "mb", "megs": "mb",
    "kg": "kg", "g": "g", "lb": "lb", "lbs": "lb", "km": "km", "m": "m", "cm": "cm",
    "mi": "mi", "miles": "mi", "mile": "mi", "l": "l", "ml": "ml", "kwh": "kwh",
    "min": "min", "mins": "min", "minutes": "min", "hours": "h", "hrs": "h", "h": "h",
    "years": "years", "yrs": "years", "months": "months", "days": "days", "%": "%",
}  # fmt: skip
_CURRENCY_SIGNS = {"£": "gbp", "$": "usd", "€": "eur", "¥": "jpy", "₹": "inr"}
_CURRENCY_SIGNS |= {"₦": "ngn", "₱": "php"}
# A dollar sign with its country in front ("A$40", "NZ$300"), and "R" or "Rs"
# before an amount ("R5,000" is rand, "Rs 45,000" rupees).
_DOLLAR_COUNTRIES = {"a": "aud", "au": "aud", "c": "cad", "ca": "cad", "nz": "nzd"}
_DOLLAR_COUNTRIES |= {"hk": "hkd", "s": "sgd", "us": "usd"}
_CURRENCY_PREFIXES = (
    *((re.compile(rf"\b{country}\$"), code) for country, code in _DOLLAR_COUNTRIES.items()),
    (re.compile(r"\brs\.?\s?(?=\d)"), "inr"),
    (re.compile(r"(?<![\w$])r\s?(?=\d)"), "zar"),
)
_CURRENCY_WORDS = {
    "gbp": "gbp", "pound": "gbp", "pounds": "gbp", "quid": "gbp", "usd": "usd",
    "dollar": "usd", "dollars": "usd", "bucks": "usd", "eur": "eur", "euro": "eur",
    "euros": "eur", "jpy": "jpy", "yen": "jpy", "inr": "inr", "rupees": "inr",
    "cad": "cad", "aud": "aud", "chf": "chf", "nzd": "nzd", "sek": "sek", "nok": "nok",
    "rupee": "inr", "rand": "zar", "zar": "zar", "naira": "ngn", "ngn": "ngn", "cedi": "ghs",
    "cedis": "ghs", "ghs": "ghs", "kes": "kes", "ksh": "kes", "shillings": "kes", "php": "php",
    "pesos": "php", "sgd": "sgd", "hkd": "hkd", "aed": "aed", "dirhams": "aed", "yuan": "cny",
    "rmb": "cny", "cny": "cny", "zloty": "pln", "pln": "pln", "francs": "chf",
}  # fmt: skip
# An amount said in words: "twelve hundred pounds", "four and a half thousand",
# "ten grand", "a tenner", "320k".
_AMOUNT_UNITS = {
    word: n
    for n, word in enumerate(
        ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
        + ("eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen")
        + ("eighteen", "nineteen")
    )
} | {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70}
_AMOUNT_UNITS |= {"eighty": 80, "ninety": 90, "tenner": 10, "fiver": 5}
_AMOUNT_SCALES = {"hundred": 100, "thousand": 1_000, "grand": 1_000, "k": 1_000, "m": 1_000_000}
_AMOUNT_SCALES |= {"million": 1_000_000, "mil": 1_000_000, "bn": 1_000_000_000}
_AMOUNT_SCALES |= {"billion": 1_000_000_000}
# "a" is an amount before these: "a hundred", "a half", "a tenner".
_A_COUNTS = frozenset({"half", "tenner", "fiver"})
_AMOUNT_TOKEN = re.compile(r"\d+(?:\.\d+)?(?=k\b|m\b|bn\b)|\d+(?:\.\d+)?|[a-z]+")


def _alternatives(words: Iterable[str]) -> str:
    """A regex alternation of ``words``, longest first so that none hides a longer one."""
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_SPOKEN_AMOUNTS = _alternatives(w for w in _AMOUNT_UNITS if w != "zero" and w not in _A_COUNTS)
_CURRENCY_NAMES = _alternatives(_CURRENCY_WORDS)
_CURRENCY_CODES = _alternatives(w for w in _CURRENCY_WORDS if len(w) == 3)
_SIGNS = "".join(_CURRENCY_SIGNS)
# An amount of money as said in a sentence, with the same signs, codes, words and
# scales the money normaliser reads: "£1,200", "CAD 600", "R5,000", "NZ$300",
# "2k", "320k", "ten grand", "four and a half thousand", "twelve hundred
# pounds", "a tenner", "500 rupees". For stages that look for money in text.
MONEY_PATTERN = (
    rf"(?:(?:[{_SIGNS}]|(?:{_alternatives(_DOLLAR_COUNTRIES)})\$|(?:{_CURRENCY_CODES}|rs\.?|r)\s?)"
    r"\d[\d,]*(?:\.\d+)?(?:k|m)?"
    rf"|\d[\d,]*(?:\.\d+)?(?:k|m)?(?:\s?(?:{_CURRENCY_NAMES}|grand|thousand)\b)?"
    rf"|(?:a|{_SPOKEN_AMOUNTS})(?:(?:\s+and\s+a\s+half)?\s+(?:hundred|thousand|grand))+"
    rf"(?:\s+(?:{_CURRENCY_NAMES})\b)?"
    r"|a\s+(?:tenner|fiver))"
)
LANGUAGES = {
    "en": "english", "zh": "chinese", "cn": "chinese", "mandarin": "chinese",
    "es": "spanish", "fr": "french", "de": "german", "it": "italian",
    "pt": "portuguese", "ja": "japanese", "jp": "japanese", "ko": "korean",
    "ar": "arabic", "hi": "hindi", "ru": "russian", "nl": "dutch", "pl": "polish",
    "tr": "turkish", "cy": "welsh", "ga": "irish", "gd": "gaelic", "ur": "urdu",
    "bn": "bengali", "pa": "punjabi", "ta": "tamil", "vi": "vietnamese",
    "th": "thai", "sv": "swedish", "no": "norwegian", "da": "danish",
    "fi": "finnish", "el": "greek", "he": "hebrew", "yue": "cantonese",
    "uk": "ukrainian", "ro": "romanian", "hu": "hungarian", "cs": "czech",
    "fa": "persian", "farsi": "persian", "sw": "swahili", "tl": "tagalog",
    "id": "indonesian", "ms": "malay", "gu": "gujarati", "te": "telugu",
}  # fmt: skip
LANGUAGE_NAMES = frozenset(LANGUAGES.values()) | {
    "cantonese", "filipino", "afrikaans", "zulu", "xhosa", "yoruba", "igbo",
    "hausa", "amharic", "somali", "nepali", "sinhala", "malayalam", "kannada",
    "marathi", "catalan", "basque", "galician", "scots", "cornish", "icelandic",
    "serbian", "croatian", "bosnian", "slovak", "slovenian", "bulgarian",
    "lithuanian", "latvian", "estonian", "albanian", "armenian", "georgian",
    "kurdish", "pashto", "dari", "tigrinya", "maltese", "bsl", "sign language",
    "british sign language", "asl", "latin", "esperanto", "mandarin chinese",
}  # fmt: skip
CHANNELS = {
    "sms": "sms", "text": "sms", "texts": "sms", "text message": "sms",
    "text messages": "sms", "texting": "sms", "email": "email", "e-mail": "email",
    "emails": "email", "mail": "email", "call": "call", "calls": "call",
    "phone": "call", "phone call": "call", "phone calls": "call", "calling": "call",
    "ringing": "call", "telephone": "call", "letter": "letter", "letters": "letter",
    "post": "letter", "paper letter": "letter", "paper letters": "letter",
    "newsletter": "newsletter", "newsletters": "newsletter", "voicemail": "voicemail",
    "voice mail": "voicemail", "whatsapp": "whatsapp", "whats app": "whatsapp",
    "push": "push", "push notification": "push", "push notifications": "push",
    "app": "push", "app notification": "push", "app notifications": "push",
    "chat": "chat", "live chat": "chat", "video call": "video call", "video": "video call",
}  # fmt: skip
_ADDRESS_ABBREVIATIONS = {
    "apt": "apartment", "apt.": "apartment", "st": "street", "st.": "street",
    "rd": "road", "rd.": "road", "ave": "avenue", "ave.": "avenue", "ln": "lane",
    "blvd": "boulevard", "dr": "drive", "ct": "court", "sq": "square",
    "pl": "place", "cres": "crescent", "hwy": "highway",
}  # fmt: skip
# Words of a plan or product that name no feature of it ("the 30GB plan").
_PRODUCT_FILLER = frozenset(
    {"the", "a", "an", "my", "plan", "package", "tariff", "deal", "bundle", "option", "one"}
    | {"subscription", "contract", "tier", "broadband", "internet", "service", "speed"}
)
_LEADING_DETERMINERS = re.compile(r"^(?:(?:a|an|the|my|our|some|to|in|at)\s+)+")
# Words that end a sentence, not a value: discourse particles of many Englishes
# ("charge nurse pala", "farm technician noo", "bland food sha") and adverbs of
# time ("teacher now", "vegan already").
_TRAILING_PARTICLES = re.compile(
    r"(?:\s+(?:(?:for\s+)?now|noo|already|anymore|again|too|pala|na|po|sha|o|lah|lor|leh|la|sia|yaar"
    r"|da|innit|tho|tbh|fr|ngl|lol|haha|hehe|bro|mate|eh|ae|ya|like))+$"
)
_SPELLINGS = {"fibre": "fiber", "colour": "color", "centre": "center", "favourite": "favorite"}
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_CLOCK = re.compile(r"\b(\d{1,2})(?:[:.]([0-5]\d))?\s*([ap])\.?\s*m\b\.?")
# "10.45" is a clock time in British usage, "10:45" (a date's "12.05.2026" is not).
_DOTTED_CLOCK = re.compile(r"(?<![\d.])(\d{1,2})\.([0-5]\d)(?![\d.])")
# Words that soften a time without changing it: "around 8am" is "8am".
_ABOUT = re.compile(r"\b(?:around|about|approximately|approx\.?|roughly|circa)\s+(?=\d)")
_PUNCT_ENDS = " .,!?;:\"'()[]{}"
MAX_VALUE_CHARS = 200


def _squash(text: str) -> str:
    return " ".join(text.split())


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9£$€¥₹%@.'+-]+", text.casefold())


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("shes", "ches", "xes", "sses", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


# -- normalisers ---------------------------------------------------------------
def normalise_text(text: str) -> str:
    """Lower case, single spaces, no determiner in front, no punctuation at the ends."""
    value = _squash(text.casefold()).strip(_PUNCT_ENDS)
    value = _TRAILING_PARTICLES.sub("", _LEADING_DETERMINERS.sub("", value).strip(_PUNCT_ENDS))
    return value.strip(_PUNCT_ENDS)


def normalise_phone(text: str) -> str:
    """Digits only, with a leading '+' kept: '+44 7700 900456' -> '+447700900456'."""
    digits = re.sub(r"\D", "", text)
    return f"+{digits}" if text.strip().startswith("+") else digits


def normalise_email(text: str) -> str:
    """Lower case, no surrounding punctuation or mailto:."""
    return re.sub(r"^mailto:", "", text.strip(_PUNCT_ENDS + "<>").casefold())


def normalise_place(text: str) -> str:
    """Lower case, single spaces, ', ' between parts, no leading 'the/to/in/at'."""
    value = re.sub(r"\s*,\s*", ", ", _squash(text.casefold())).strip(_PUNCT_ENDS)
    return _TRAILING_PARTICLES.sub("", re.sub(r"^(?:the|to|in|at|near)\s+", "", value))


def normalise_address(text: str) -> str:
    """A place with street abbreviations spelled out ('Apt 3B' -> 'apartment 3b').

    Its parts are comma-separated however it was said: "22 agincourt avenue
    belfast bt7 1qa" is "22 agincourt avenue, belfast, bt7 1qa", the form
    written with commas (benchmarks/devset/LABELLING.md, "places and addresses").
    """
    parts = []
    for part in normalise_place(text).split(", "):
        words = part.split()
        # Not the first word: "St Albans" and "Dr Patel's surgery" keep theirs.
        words = [
            _ADDRESS_ABBREVIATIONS.get(word, word) if i or word in {"apt", "apt."} else word
            for i, word in enumerate(words)
        ]
        parts.extend(_address_parts(words))
    return ", ".join(parts)


# The word that ends a street's name ("14 albert street"), in the spellings
# of _ADDRESS_ABBREVIATIONS and the usual British, Irish and American others.
_STREET_ENDS = frozenset(
    {"street", "road", "avenue", "lane", "boulevard", "drive", "court", "square", "place"}
    | {"crescent", "highway", "grove", "close", "way", "terrace", "gardens", "row", "mews"}
    | {"parade", "walk", "hill", "park", "rise", "vale", "green", "wynd", "circle", "quay"}
)
_COMPASS = frozenset({"n", "s", "e", "w", "ne", "nw", "se", "sw", "north", "south", "east", "west"})
# A UK postcode, written with or without its space ("bt7 1qa", "bt71qa").
_POSTCODE = re.compile(r"([a-z]{1,2}\d[a-z\d]?)\s*(\d[a-z]{2})")


def _address_parts(words: list[str]) -> list[str]:
    """One comma-free stretch of an address, split where its parts meet.

    A trailing postcode is a part of its own, and so is a street that starts
    with its house number ("14 albert street brunswick"): a town after the
    street's last word is split off. Only the first street end not followed by
    another ("12 park road leeds") splits, so street names stay whole.
    """
    tail: list[str] = []
    for size in (2, 1):  # "bt7 1qa" said in two words or in one
        postcode = _POSTCODE.fullmatch("".join(words[-size:]))
        if postcode is not None and len(words) >= size:
            words, tail = words[:-size], [" ".join(postcode.groups())]
            break
    if len(words) > 3 and re.fullmatch(r"\d+[a-z]?", words[0]):
        for i in range(2, len(words) - 1):
            if words[i] in _STREET_ENDS and words[i + 1] not in _STREET_ENDS:
                end = i + 2 if words[i + 1] in _COMPASS else i + 1  # "queen street west"
                if end < len(words):
                    return [" ".join(words[:end]), " ".join(words[end:]), *tail]
    return [" ".join(words), *tail] if words else tail


def normalise_datetime(text: str) -> str:
    """'Next Mondays' -> 'monday'; '2:00 p.m.' -> '2pm'; 'before 9' stays 'before 9'.

    A window keeps its parts in the order said ("monday 2pm"); "next" goes
    before a weekday or part of day but stays in "next week".
    """

    def clock(match: re.Match[str]) -> str:
        minutes = match.group(2)
        hm = match.group(1) if minutes in (None, "00") else f"{match.group(1)}:{minutes}"
        return f"{hm}{match.group(3)}m"

    iso = _iso_window(text)
    if iso is not None:
        return iso
    value = _CLOCK.sub(clock, spoken_clock(text.casefold()))
    value = _ABOUT.sub("", _DOTTED_CLOCK.sub(r"\1:\2", value))
    # "Friday 16th, evening" is one window: its parts need no comma.
    value = re.sub(r"\s*,\s*", " ", value.strip(_PUNCT_ENDS))
    # "Monday at 2pm" is one window, "monday 2pm".
    value = re.sub(
        r"\s+(?:at|@)\s+(?=\d|(?:" + "|".join(_DAY_PARTS) + r")\b)", " ", value.strip(_PUNCT_ENDS)
    )
    value = re.sub(r"^(?:(?:on|at|in|the|this|every|any|around|about|by|from|of)\s+)+", "", value)
    value = re.sub(
        r"^next\s+(?=(?:mon|tues|wednes|thurs|fri|satur|sun)day|weekend|morning|afternoon|evening)",
        "",
        value,
    )
    # "Saturday the 25th" is "saturday 25th", as "on the 25th" is "25th".
    value = re.sub(r"\bthe\s+(?=\d{1,2}(?:st|nd|rd|th)\b)", "", value)
    value = _day_of_month(value)
    words = [_DAY_SHORT.get(word.rstrip("."), word) for word in value.split()]
    # "tomorrow am": a day's "am" is its morning (a clock's "9am" is one word).
    words = [
        "morning" if word == "am" and i and not words[i - 1][-1:].isdigit() else word
        for i, word in enumerate(words)
    ]
    return " ".join(_PLURALS.get(word, word) for word in words)


# The hours of a clock in words, one to twelve ("two o'clock", "half past nine").
HOURS: tuple[str, ...] = ("one", "two", "three", "four", "five", "six", "seven", "eight")
HOURS += ("nine", "ten", "eleven", "twelve")
_HOUR_WORD = {word: str(hour) for hour, word in enumerate(HOURS, 1)}
_HOUR = r"(\d{1,2}|" + "|".join(HOURS) + r")"
_SPOKEN_AM = r"in\s+the\s+morning"
_SPOKEN_PM = r"in\s+the\s+(?:afternoon|evening)|at\s+night|tonight"
_HALF_PAST = re.compile(r"\b(half|quarter)\s+past\s+" + _HOUR + r"\b")
_QUARTER_TO = re.compile(r"\bquarter\s+to\s+" + _HOUR + r"\b")
_O_CLOCK = re.compile(r"\b" + _HOUR + r"\s*o'?clock\b")
_O_CLOCK_BEFORE_PART = re.compile(
    r"\b(\d{1,2}) o'clock(?=\s+(?:" + _SPOKEN_AM + "|" + _SPOKEN_PM + r"))"
)
_DAY_PART_CLOCK = re.compile(
    r"\b(\d{1,2}(?::\d{2})?)\s+(?:(" + _SPOKEN_AM + r")|" + _SPOKEN_PM + r")\b"
)
_SPOKEN_DAY_PART = re.compile(r"\b(?:in\s+the|at)\s+(morning|afternoon|evening|night)s?\b")


def spoken_clock(value: str) -> str:
    """A clock time said in words, as it is written (lower-case input).

    "two o'clock in the afternoon" -> "2pm", "half past nine in the morning"
    -> "9:30am", "quarter to five" -> "4:45", "Tuesday in the afternoon" ->
    "tuesday afternoon". Labellers and agents write the clock form
    (benchmarks/devset/LABELLING.md, "Objects"); a value said the long way
    would otherwise fail the type and be lost. "8 o'clock" alone keeps its
    o'clock: without a part of the day it names no am or pm.
    """

    def hour(word: str) -> int:
        return int(_HOUR_WORD.get(word, word))

    value = _HALF_PAST.sub(lambda m: f"{hour(m[2])}:{'30' if m[1] == 'half' else '15'}", value)
    value = _QUARTER_TO.sub(lambda m: f"{(hour(m[1]) - 2) % 12 + 1}:45", value)
    value = _O_CLOCK.sub(lambda m: f"{hour(m[1])} o'clock", value)
    value = _O_CLOCK_BEFORE_PART.sub(r"\1", value)

    def clock(m: re.Match[str]) -> str:
        # "may 3 in the afternoon" is a day and a part of it, not 3pm.
        if _ENDS_WITH_MONTH.search(value[: m.start()]):
            return m[0]
        return f"{m[1]}{'am' if m[2] else 'pm'}"

    value = _DAY_PART_CLOCK.sub(clock, value)
    return _SPOKEN_DAY_PART.sub(r"\1", value)


# A month named in full or short ("aug", "sept."), for a day of the month beside it.
_MONTH = r"(?:" + "|".join([*MONTHS, *_MONTH_SHORT]) + r")\b\.?"
_DAY_BEFORE_MONTH = re.compile(
    r"\b(?:the\s+)?(\d{1,2})(?:st|nd|rd|th)?(?:\s+of)?(?=\s+" + _MONTH + ")"
)
_A_MONTH = re.compile(r"\b" + _MONTH)
_ENDS_WITH_MONTH = re.compile(r"\b" + _MONTH + r"\s*$")
_DAY_ORDINAL = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)\b")
_DAY_AFTER_MONTH = re.compile(r"\b(" + _MONTH + r"\s+)(?:the\s+)?(\d{1,2})(?:st|nd|rd|th)\b")


def _day_of_month(value: str) -> str:
    """A day beside its month as a plain number: 'the 28th of august' -> '28 august'.

    'March 14th', 'march 14' and '14 March' are one date (the key ignores the
    order); a day said without its month ('the 15th') keeps its suffix, which
    is all that tells it from an hour. With a month, every day is a number.
    """
    if _A_MONTH.search(value) is None:
        return value
    # The first day of a range too: "4th to 18th april".
    return _DAY_ORDINAL.sub(r"\1", dated_form(value))


def dated_form(value: str) -> str:
    """A dated value's date in the one form of times: 'op 10th of march' -> 'op 10 march'.

    Only a day beside its month changes: the "70th" of "mum's 70th" stays.
    """
    if _A_MONTH.search(value) is None:
        return value
    return _DAY_AFTER_MONTH.sub(r"\1\2", _DAY_BEFORE_MONTH.sub(r"\1", value))


_ISO = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?")


def _iso_window(text: str) -> str | None:
    """A machine timestamp (CRM, agent tools) as a date and a clock time, in its own zone."""
    if (
        re.fullmatch(r"\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?", text.strip())
        is None
    ):
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    date = moment.date().isoformat()
    if len(text.strip()) == 10 or (moment.hour, moment.minute) == (0, 0):
        return date
    hour = moment.hour % 12 or 12
    minutes = f":{moment.minute:02d}" if moment.minute else ""
    return f"{date} {hour}{minutes}{'am' if moment.hour < 12 else 'pm'}"


def normalise_quantity(text: str) -> str:
    """A number and its unit joined, lower case: '500 Mbps' -> '500mbps'."""
    value = _squash(text.casefold()).strip(_PUNCT_ENDS)

    def unit(match: re.Match[str]) -> str:
        return f"{match.group(1)}{_UNITS.get(match.group(2), match.group(2))}"

    return re.sub(r"(\d)\s*(" + "|".join(map(re.escape, _UNITS)) + r")\b", unit, value)


def normalise_product(text: str) -> str:
    """A plan or product: a quantity's number and unit joined, spelling unified."""
    words = [_SPELLINGS.get(word, word) for word in normalise_quantity(text).split()]
    value = " ".join(words)
    value = re.sub(r"\b(?:plan|tariff|package)\b", "", value)
    return _LEADING_DETERMINERS.sub("", _squash(value)).strip(_PUNCT_ENDS)


def normalise_money(text: str) -> str:
    """'£15', '15 quid', 'GBP 15.00' -> '15 gbp', '£35k' -> '35000 gbp', 'ten grand' -> '10000'.

    A bare number stays a number: the currency is the one said, or none.
    """
    value = text.casefold().replace(",", "")
    amount = _amount(value)
    if amount is None:
        return _squash(value).strip(_PUNCT_ENDS)
    number = f"{amount:.2f}".rstrip("0").rstrip(".")
    code = next((c for pattern, c in _CURRENCY_PREFIXES if pattern.search(value)), None)
    code = code or next((c for sign, c in _CURRENCY_SIGNS.items() if sign in value), None)
    code = code or next((_CURRENCY_WORDS[w] for w in _words(value) if w in _CURRENCY_WORDS), None)
    return f"{number} {code}" if code else number


def _amount(value: str) -> float | None:
    """The first amount said in ``value``, in digits or words, with its scale ("k", "thousand")."""
    tokens = _AMOUNT_TOKEN.findall(value)
    total = current = 0.0
    said = False
    for n, word in enumerate(tokens):
        after = tokens[n + 1] if n + 1 < len(tokens) else ""
        if word[0].isdigit() or word in _AMOUNT_UNITS:
            if said and current and word[0].isdigit():
                break  # "2 for 1": a second number is another amount
            current += float(word) if word[0].isdigit() else _AMOUNT_UNITS[word]
        elif word == "half" and said:
            current += 0.5
        elif word in _AMOUNT_SCALES and said:
            scale = _AMOUNT_SCALES[word]
            if scale == 100:
                current = (current or 1) * scale
            else:
                total += (current or 1) * scale
                current = 0.0
        elif word in {"a", "an"} and (after in _AMOUNT_SCALES or after in _A_COUNTS):
            current += 1 if after in _AMOUNT_SCALES else 0
            said = True
            continue
        elif word == "and" and said:
            continue
        elif said:
            break
        else:
            continue
        said = True
    return total + current if said else None


def normalise_language(text: str) -> str:
    """A language's English name: 'zh' -> 'chinese', 'English' -> 'english'."""
    value = normalise_text(text)
    value = re.sub(r"\s+(?:language|please)$", "", value)
    return LANGUAGES.get(value, value)


def normalise_channel(text: str) -> str:
    """'text messages' -> 'sms', 'by post' -> 'letter', 'phone calls' -> 'call'."""
    value = re.sub(r"^(?:by|via|through|over|on)\s+", "", normalise_text(text))
    return CHANNELS.get(value, value)


def normalise_code(text: str) -> str:
    """Codes and readings: no spaces, lower case, no punctuation at the ends."""
    return re.sub(r"\s+", "", text.strip(_PUNCT_ENDS)).casefold()


# Parents and grandparents as people who switch into another language call
# them in English chat ("Amma is living with us", "mi mamá still lives there",
# "my nene lives in Izmir"). Only words that are no English word or common
# name: not "far" (Swedish), "anne" (Turkish), "dada" or "mor".
_SAID_ABROAD = {
    "mother": ("amma", "ammi", "ammu", "mamá", "mami", "maman", "mutti", "nanay", "inay")
    + ("annem", "eomma", "umma", "madre", "mãe"),
    "father": ("appa", "abba", "abbu", "baba", "babá", "tatay", "itay", "papá", "padre", "babam"),
    "grandmother": ("lola", "nonna", "abuela", "abuelita", "yiayia", "yaya", "babcia", "halmeoni")
    + ("dadi", "nani", "nain", "ouma", "oma", "nene", "mormor", "farmor"),
    "grandfather": ("lolo", "nonno", "abuelo", "abuelito", "pappou", "dziadek", "taid", "oupa")
    + ("opa", "dede", "morfar", "farfar"),
}
# One word for each relation, however it is said: "my mum", "my mom" and "my
# mother" are one person, "our boy Elie" is a son. Only the relation word at
# the front of a value is read ("mum" in "mum's friend" is not the value's kind).
_KIN = {
    "mother": ("mum", "mom", "mam", "mama", "mamma", "momma", "mummy", "mommy", "ma", "maw")
    + _SAID_ABROAD["mother"],
    "father": ("dad", "da", "daddy", "papa", "pa", "pops", "old man") + _SAID_ABROAD["father"],
    "son": ("boy", "lad", "wee boy", "hijo"),
    "daughter": ("girl", "lass", "wee girl", "hija"),
    "grandmother": ("gran", "granny", "grandma", "grandmom", "grandmum", "nan", "nana", "nanna")
    + _SAID_ABROAD["grandmother"],
    "grandfather": ("grandad", "granddad", "grandpa", "grampa", "gramps", "grandpop")
    + _SAID_ABROAD["grandfather"],
    "grandchild": ("grandkid", "grandbaby"),
    "husband": ("hubby", "esposo", "marido"),
    "wife": ("wifey", "missus", "missis", "esposa"),
    "brother": ("bro", "hermano"),
    "sister": ("sis", "hermana"),
    "fiance": ("fiancé",),
    "fiancee": ("fiancée",),
    "partner": ("other half",),
}
KIN_WORDS = {said: kin for kin, forms in _KIN.items() for said in forms} | {
    f"{said}s": f"{kin}s"
    for kin, forms in _KIN.items()
    for said in forms
    if " " not in said and not kin.endswith("child")  # "grandchilds" is no word
}
_KIN_FRONT = re.compile(
    r"^(" + "|".join(sorted(map(re.escape, KIN_WORDS), key=len, reverse=True)) + r")(?![\w'’-])"
)


# Words that make a relation of their own with the one after them ("late
# husband", "step mother"): not a name to move behind it.
_KIN_MODIFIERS = frozenset(
    {"step", "half", "ex", "great", "late", "future", "twin", "baby", "big", "little"}
    | {"older", "younger", "oldest", "youngest", "eldest", "elder", "new", "first", "second"}
)
# Relations a name may be said before ("Margaret, the wife"); forms that
# also end other phrases ("birthday girl", "old man") are left out.
_RELATIONS = frozenset(_KIN) | {
    "aunt", "uncle", "cousin", "niece", "nephew", "boyfriend", "girlfriend", "granddaughter",
    "grandson", "stepson", "stepdaughter", "mum", "mom", "mam", "dad", "hubby", "wifey",
    "missus", "gran", "granny", "grandma", "grandpa", "nan", "sis", "bro",
}  # fmt: skip
_POSSESSIVES = frozenset({"the", "my", "our", "his", "her", "their", "your"})
_KIN_BACK = re.compile(
    r"^(?P<name>[a-z]+(?: [a-z]+)?) (?P<kin>" + "|".join(sorted(_RELATIONS)) + r")$"
)


# Relations, in their one form, that say the relative's sex: "her name is Ama"
# can name a sister, not a brother.
_FEMALE_KIN = frozenset(
    {"mother", "daughter", "grandmother", "wife", "sister", "fiancee", "aunt", "niece"}
    | {"granddaughter", "stepdaughter", "stepmother", "girlfriend"}
)
_MALE_KIN = frozenset(
    {"father", "son", "grandfather", "husband", "brother", "fiance", "uncle", "nephew"}
    | {"grandson", "stepson", "stepfather", "boyfriend"}
)


def kin_sex(relation: str) -> str | None:
    """'female' or 'male' for a relation that says it ('sister', 'husband'), else None."""
    one = KIN_WORDS.get(relation, relation)
    return "female" if one in _FEMALE_KIN else "male" if one in _MALE_KIN else None


def kin_forms(word: str) -> tuple[str, ...]:
    """The ways a relation is said: 'mother' -> ('mother', 'mum', 'mom', ...); others alone."""
    return (word, *_KIN.get(word, ()))


def normalise_relative(text: str) -> str:
    """Text with the relation in its one form: 'Mum' -> 'mother', 'our boy Elie' -> 'son elie'."""
    # "granddaughter, imogen": the comma only sets the name apart, as for a pet.
    value = normalise_text(text.replace(",", " "))
    back = _KIN_BACK.match(value)
    if back and not _KIN_FRONT.match(value) and not set(back["name"].split()) & _KIN_MODIFIERS:
        # One form whichever order it was said in: the relation, then the name.
        name = " ".join(w for w in back["name"].split() if w not in _POSSESSIVES)
        if name:
            value = f"{KIN_WORDS.get(back['kin'], back['kin'])} {name}"
    return _KIN_FRONT.sub(lambda m: KIN_WORDS[m.group(1)], value, count=1)


# The kinds of animal people keep: species and the common breeds and
# crosses, so a pet's value reads as its kind and its name ("a wee labrador
# pup, Nugget" is a labrador called Nugget), however the turn describes it.
PET_KINDS = frozenset(
    {"dog", "cat", "kitten", "puppy", "pup", "rabbit", "bunny", "hamster", "gerbil", "ferret"}
    | {"guinea pig", "rat", "mouse", "chinchilla", "hedgehog", "budgie", "parrot", "cockatiel"}
    | {"canary", "finch", "lovebird", "chicken", "hen", "duck", "goose", "goat", "sheep", "pig"}
    | {"horse", "pony", "mare", "gelding", "cob", "donkey", "tortoise", "turtle", "snake"}
    | {"python", "gecko", "leopard gecko", "lizard", "bearded dragon", "iguana", "axolotl"}
    | {"frog", "fish", "goldfish", "tarantula", "cow", "alpaca", "llama"}
    | {"labrador", "lab", "retriever", "golden retriever", "collie", "border collie"}
    | {"sheepdog", "spaniel", "springer", "springer spaniel", "cocker spaniel", "cocker"}
    | {"terrier", "border terrier", "jack russell", "westie", "yorkie", "staffie", "staffy"}
    | {"bulldog", "french bulldog", "frenchie", "pug", "beagle", "dachshund", "sausage dog"}
    | {"poodle", "cockapoo", "labradoodle", "cavapoo", "cavalier", "greyhound", "whippet"}
    | {"lurcher", "husky", "samoyed", "corgi", "chihuahua", "shih tzu", "schnauzer"}
    | {"rottweiler", "german shepherd", "alsatian", "shepherd", "pit bull", "pitbull", "pit"}
    | {"boxer", "dalmatian", "doberman", "great dane", "mastiff", "kelpie", "huntaway"}
    | {"heeler", "coonhound", "hound", "bloodhound", "basset", "mutt", "mongrel", "akita"}
    | {"shiba", "tabby", "tom", "moggy", "moggie", "siamese", "persian", "ragdoll", "bengal"}
    | {"maine coon", "sphynx", "shorthair", "heading dog", "indie", "aspin", "vira-lata"}
)
# A kind's last word names it ("shepherd", "collie"); "german" or "border"
# alone names none.
_PET_KIND_WORDS = frozenset(kind.split()[-1] for kind in PET_KINDS)
# How big, old or loved a pet is, said before its kind: not part of the kind.
_PET_DESCRIPTIONS = frozenset(
    {"wee", "little", "lil", "young", "old", "tiny", "baby", "big", "fat", "scruffy", "new"}
    | {"cute", "sweet", "daft", "lovely", "gorgeous", "beautiful", "mad", "crazy", "poor"}
    | {"small", "huge", "giant", "chunky", "elderly", "adorable", "fluffy", "good"}
)
# Said after a kind, only the pet's age or sex: "a labrador pup", "a border
# collie girl". A kitten stays one ("a ragdoll kitten"): the labels keep it.
_PET_AGE_OR_SEX = frozenset({"pup", "puppy", "girl", "boy", "lad", "lass", "fella", "fellow"})


def is_pet_kind(word: str) -> bool:
    """Whether ``word`` names a kind of animal kept as a pet: 'collie', 'shepherd', not 'german'."""
    return word.casefold() in _PET_KIND_WORDS


def normalise_animal(text: str) -> str:
    """A pet as its kind and name: 'our wee labrador pup Nugget' -> 'labrador nugget'."""
    # "alsatian puppy, tiger": the comma only sets the name apart.
    plain = normalise_text(text.replace(",", " "))
    words = [w for w in plain.split() if w not in {"called", "named"}]
    kept: list[str] = []
    for word in words:
        if word in _PET_DESCRIPTIONS and not kept:
            continue
        if word in _PET_AGE_OR_SEX and kept and kept[-1] in _PET_KIND_WORDS:
            continue
        kept.append(word)
    return " ".join(kept) if kept else " ".join(words)


def normalise_age(text: str) -> str:
    """'34 years old' -> '34'."""
    number = _NUMBER.search(text)
    return number.group(0) if number else normalise_text(text)


# -- identities -------------------------------------------------------------------
def _token_key(value: str) -> str:
    return " ".join(sorted(_singular(word) for word in _words(value)))


# Words that carry no identity in free text: "pepper the cat" and "cat pepper",
# "moving to exeter" and "move to exeter" state one value. Negators stay.
_TEXT_FILLER = frozenset(
    {"the", "a", "an", "my", "our", "his", "her", "their", "your", "its", "to", "of"}
    | {"is", "are", "was", "were", "be", "been", "called", "named", "for", "with", "some"}
    | {"in", "on", "at", "from", "by", "this", "that", "next"}
)


def _stem(word: str) -> str:
    """A crude stem: 'moving' / 'move' / 'moved' -> 'mov'; plurals singular."""
    word = _singular(word)
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    # "doing" / "do", "going" / "go": a two-letter verb with a vowel ("thing" and
    # "bring" keep theirs).
    if word.endswith("ing") and len(word) == 5 and word[1] in "aeiou":
        return word[:2]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiousl":
        word = word[:-1]  # "wedd" -> "wed", "runn" -> "run"
    return word


# What dates an event rather than names it ("brother's wedding 14 june" and
# "brother's wedding next saturday" are one event at two dates): days, months,
# parts of the day, relative words, numbers and clock times, and the small
# words around them. Kept: words that name an occasion ("christmas", "dinner").
_DATING_WORDS = frozenset(
    {*WEEKDAYS, *MONTHS, *_DAY_PARTS, *_MONTH_SHORT, *_DAY_SHORT, *_PLURALS}
    | {"weekend", "weekday", "week", "month", "year", "fortnight", "today", "tomorrow"}
    | {"yesterday", "next", "this", "last", "coming", "following", "on", "in", "at", "the"}
    | {"of", "from", "to", "until", "till", "by", "around", "early", "late", "mid", "end"}
    | {"start", "beginning", "am", "pm", "now"}
)
_DATING_TOKEN = re.compile(r"\d+(?:st|nd|rd|th|am|pm|h)?|\d{1,2}[:.]\d{2}(?:am|pm)?|'\d\d")


def undated(value: str) -> str:
    """``value`` without the words that date it: what names the event."""
    kept = [
        word
        for word in value.split()
        if word.strip(",.") not in _DATING_WORDS and not _DATING_TOKEN.fullmatch(word.strip(",."))
    ]
    return " ".join(kept)


# A possessive ("grandad's 90th", "the Joneses' party") and a day's ordinal
# ("19th of september") are spellings of the words they sit on: "grandads 90th"
# and "moving day 1 march" state the same values.
_POSSESSIVE = re.compile(r"(?<=\w)'s\b|(?<=s)'(?!\w)")
_ORDINAL_SUFFIX = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)\b")


# A number in words is the number: "tenth wedding anniversary" = "10th
# wedding anniversary", "two cats" = "2 cats".
_NUMBER_WORDS = {
    word: str(n)
    for n, words in enumerate(
        [
            ("zero",),
            ("one", "first"),
            ("two", "second"),
            ("three", "third"),
            ("four", "fourth"),
            ("five", "fifth"),
            ("six", "sixth"),
            ("seven", "seventh"),
            ("eight", "eighth"),
            ("nine", "ninth"),
            ("ten", "tenth"),
            ("eleven", "eleventh"),
            ("twelve", "twelfth"),
        ]
    )
    for word in words
} | {
    f"{tens}{suffix}": str(n)
    for n, tens in ((20, "twent"), (30, "thirt"), (40, "fort"), (50, "fift"), (60, "sixt"))
    for suffix in ("y", "ieth")
}


def text_key(value: str) -> str:
    """Free text's identity: its content words, stemmed, in any order."""
    plain = _ORDINAL_SUFFIX.sub(r"\1", _POSSESSIVE.sub("", value.casefold().replace("’", "'")))
    words = [
        _stem(_NUMBER_WORDS.get(word, word)) for word in _words(plain) if word not in _TEXT_FILLER
    ]
    return " ".join(sorted(words)) if words else _token_key(value)


def product_key(value: str) -> str:
    """Numbers (speeds in Mbps) and feature words; fillers and unit spellings dropped.

    '500mbps', '500mbps fiber' and 'fiber-500' give '500' / '500 fiber' /
    '500 fiber': the same plan when one's words are a subset of the other's
    (see ``same_value``). '1gbps' is '1000'.
    """
    numbers, words = [], []
    for token in re.findall(r"\d+(?:\.\d+)?[a-z]*|[a-z]+", normalise_product(value)):
        match = re.fullmatch(r"(\d+(?:\.\d+)?)([a-z]*)", token)
        if match is None:
            if token not in _PRODUCT_FILLER and token not in _UNITS:
                words.append(_SPELLINGS.get(token, token))
            continue
        number, unit = float(match.group(1)), match.group(2)
        number *= 1000 if unit in {"gbps", "gig"} else 1  # speeds compare in Mbps
        numbers.append(f"{number:g}")
    return " ".join(sorted(numbers)) + "|" + " ".join(sorted(set(words)))


def phone_key(value: str) -> str:
    """The digits, without a leading '+'."""
    return re.sub(r"\D", "", value)


def same_phone(a: str, b: str) -> bool:
    """'+44 7700 900456' and '07700 900456' are one number: one ends the other's digits.

    The national trunk '0' and the country code differ; 7 digits are the
    shortest subscriber number we match on.
    """
    short, long = sorted((phone_key(a).lstrip("0"), phone_key(b).lstrip("0")), key=len)
    return len(short) >= 7 and long.endswith(short)


def same_product(a: str, b: str) -> bool:
    """The same numbers, and one's feature words a subset of the other's."""
    nums_a, _, words_a = product_key(a).partition("|")
    nums_b, _, words_b = product_key(b).partition("|")
    if nums_a != nums_b or not nums_a:
        return False
    set_a, set_b = set(words_a.split()), set(words_b.split())
    return set_a <= set_b or set_b <= set_a


def same_address(a: str, b: str) -> bool:
    """One address's words hold the other's: '12 birch court' re-states '12 birch court, flat 4'.

    The shorter must still say a number and a street (three words or more):
    "flat 2" alone names no address. Another number ("apartment 5") is another place.
    """
    short, long = sorted(
        ({w.strip(".,'") for w in _words(a)}, {w.strip(".,'") for w in _words(b)}), key=len
    )
    short.discard("")
    if len(short) < 3 or not any(w.isdigit() for w in short):
        return False
    return short <= long


# -- times said on a day ---------------------------------------------------------
_ORDINAL = re.compile(r"(\d{1,2})(?:st|nd|rd|th)")
_MONTH_NAMES = "|".join(MONTHS)
_DAY_AND_MONTH = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?(?: of)? ({_MONTH_NAMES})\b"
    rf"|\b({_MONTH_NAMES}) (\d{{1,2}})(?:st|nd|rd|th)?\b"
)


def anchored_words(value: str, said_at: datetime) -> set[str]:
    """A time's words with the days it names resolved against the day it was said.

    "monday" said on Monday 2 March 2026 is "2026-03-09" (the next Monday,
    as people mean it), "tomorrow" the day after, "15th april" / "april 15" /
    "15 of april" the next 15 April, an ISO date itself; a bare "15th" stays
    "dom:15" (its month is not said). Clock times and other words stay.
    """
    day = said_at.date()
    text = normalise_datetime(value)
    # Day-of-month and month in either order, resolved first so their words go.
    dated = _DAY_AND_MONTH.sub(
        lambda m: _next_date(
            day,
            MONTHS.index(m.group(2) or m.group(3)) + 1,
            int(m.group(1) or m.group(4)),
        ),
        text,
    )
    out: set[str] = set()
    for word in dated.split():
        ordinal = _ORDINAL.fullmatch(word)
        if word in WEEKDAYS:
            ahead = (WEEKDAYS.index(word) - day.weekday() - 1) % 7 + 1
            out.add((day + timedelta(days=ahead)).isoformat())
        elif word in {"today", "tonight"}:
            out |= {day.isoformat(), "night"} if word == "tonight" else {day.isoformat()}
        elif word == "tomorrow":
            out.add((day + timedelta(days=1)).isoformat())
        elif ordinal is not None:
            out.add(f"dom:{int(ordinal.group(1))}")
        elif word not in {"the", "of", "on", "at", "next"}:
            out.add(word)
    return out


def _next_date(day: date, month: int, number: int) -> str:
    """The first date on or after ``day`` with this month and day of the month."""
    for year in (day.year, day.year + 1):
        try:
            candidate = date(year, month, number)
        except ValueError:
            continue
        if candidate >= day:
            return candidate.isoformat()
    return f"{month:02d}-{number:02d}"


_NTH = "(?:st|nd|rd|th)?"
_UNTIL = "(?:to|until|till|-|and)"
# A range of days within one month: "may 12 to 14", "3rd - 17th october".
_RANGE_IN_MONTH = re.compile(
    rf"\b({_MONTH_NAMES}) \d{{1,2}}{_NTH} {_UNTIL} (\d{{1,2}}){_NTH}\b"
    rf"|\b\d{{1,2}}{_NTH} {_UNTIL} (\d{{1,2}}){_NTH}(?: of)? ({_MONTH_NAMES})\b"
)
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def last_day_named(value: str, said_at: datetime) -> date | None:
    """The last day a time names when that day is still ahead, else None.

    "october 3 to 17" said in March names 17 October; "may" alone the end of
    May; "tomorrow", "friday", "the 11th" their next date (``anchored_words``).
    A standing window ("weekdays", "after 6pm") and a clock time name no day.
    """
    if is_standing_window(value):
        return None
    today = said_at.date()
    text = normalise_datetime(value)
    days: list[date] = []
    for word in anchored_words(value, said_at):
        if _ISO_DAY.fullmatch(word):
            days.append(date.fromisoformat(word))
        elif word.startswith("dom:"):
            days += _next_day_of_month(today, int(word[4:]))
    for match in _RANGE_IN_MONTH.finditer(text):
        month = MONTHS.index(match.group(1) or match.group(4)) + 1
        end = _next_date(today, month, int(match.group(2) or match.group(3)))
        if _ISO_DAY.fullmatch(end):
            days.append(date.fromisoformat(end))
    for word in _DAY_AND_MONTH.sub(" ", text).split():
        if word in MONTHS:  # a month without its day: all of it
            month = MONTHS.index(word) + 1
            year = today.year + (month < today.month)
            following = date(year + month // 12, month % 12 + 1, 1)
            days.append(following - timedelta(days=1))
    latest = max(days, default=None)
    return latest if latest is not None and latest > today else None


def _next_day_of_month(today: date, number: int) -> list[date]:
    """The next date that is the ``number``th of a month ("the 11th"), if any month has it."""
    for ahead in range(3):
        months = today.month - 1 + ahead
        year, month = today.year + months // 12, months % 12 + 1
        try:
            candidate = date(year, month, number)
        except ValueError:
            continue
        if candidate >= today:
            return [candidate]
    return []


def same_time(head: str, head_at: datetime, said: str, said_at: datetime) -> bool:
    """Whether ``said`` re-states the time ``head`` (possibly with fewer details).

    "monday 2pm" said on 2 March and "2026-03-09 2pm" from a CRM are one time;
    "the 15th" re-states "2026-04-15 8am". A re-statement naming a different
    day or clock time is a new value.
    """
    old, new = anchored_words(head, head_at), anchored_words(said, said_at)
    dates = {w for w in old if re.fullmatch(r"\d{4}-\d{2}-\d{2}", w)}
    for word in [w for w in new if w.startswith("dom:")]:
        if any(int(d[-2:]) == int(word[4:]) for d in dates):
            new = (new - {word}) | {d for d in dates if int(d[-2:]) == int(word[4:])}
    return bool(new) and new <= old


# Words that pin a time to one occasion: a named day or month, a date, a
# relative day, a holiday. A time with none of them recurs.
_OCCASION_WORDS = frozenset(
    {*WEEKDAYS, *MONTHS, *_MONTH_SHORT, "today", "tomorrow", "tonight", "yesterday", "now"}
    | {"asap", "soon", "later", "next", "this", "last", "week", "month", "year", "fortnight"}
    | {"date", "christmas", "easter", "holidays", "holiday", "term", "same"}
)
# A class of days or of hours, or an open bound: what a standing window is made of.
_WINDOW_WORDS = frozenset(
    {*_DAY_PARTS, "weekday", "weekend", "midweek", "daily", "anytime", "whenever", "work"}
    | {"before", "after", "until", "till", "til", "between", "onwards", "latest", "earliest"}
) - {"tonight"}
_BOUND_WORDS = frozenset({"before", "after", "until", "till", "til", "between", "and", "to"})
_DATE_LIKE = re.compile(
    r"\d{4}-\d{2}-\d{2}|\d{1,2}(?:st|nd|rd|th)|\d{1,4}[-/]\d{1,2}(?:[-/]\d{1,4})?"
)


def is_standing_window(value: str) -> bool:
    """Whether a time recurs ("weekdays", "after 6pm", "mornings") rather than names one occasion.

    "Weekdays only" is a standing rule about every booking; "Monday at 2pm" is
    one booking. A window with no day, date or relative day in it, made of a
    class of days or hours or an open bound, recurs. A bare clock time ("2pm")
    is a slot on a day left unsaid, so it does not.
    """
    words = normalise_datetime(value).split()
    if any(word in _OCCASION_WORDS or _DATE_LIKE.fullmatch(word) for word in words):
        return False
    # A bare number is a clock after a bound ("after 6", "between 9 and 5"),
    # elsewhere the day of a month ("15 between 8am and 10am").
    for before, word in zip(["", *words], words, strict=False):
        if word.isdigit() and before not in _BOUND_WORDS:
            return False
    return any(word in _WINDOW_WORDS for word in words)


# -- checks -----------------------------------------------------------------------
def _is_time_expression(value: str) -> bool:
    words = _words(value)
    if not words:
        return False
    for word in words:
        bare = word.strip(".,'-")
        if bare in _TIME_WORDS or bare in _DAY_SHORT or bare in _PLURALS:
            continue
        if re.fullmatch(r"\d{1,4}(?:[:.]\d{2})?(?:am|pm|h|hrs)?|\d{1,2}(?:st|nd|rd|th)", bare):
            continue
        if re.fullmatch(r"\d{1,4}[-/]\d{1,2}(?:[-/]\d{1,4})?(?:t[\d:]+z?)?|\d+-\d+", bare):
            continue
        if bare in {"-", "–", "&", ""}:
            continue
        return False
    return True


def _looks_like_other_type(value: str) -> str | None:
    """The type a value parses as in full, when it is not a place."""
    if _problem_quantity(value) is None and re.search(r"[a-z%]", value):
        return "a quantity"
    if _problem_money(value) is None and re.search(r"[^\d\s.]", value):
        return "an amount of money"
    if _is_time_expression(value):
        return "a time"
    if normalise_language(value) in LANGUAGE_NAMES:
        return "a language"
    if normalise_channel(value) in set(CHANNELS.values()):
        return "a contact channel"
    if "@" in value:
        return "an e-mail address"
    if len(re.sub(r"\D", "", value)) >= 7 and not re.search(r"[a-z]{3}", value):
        return "a phone number"
    return None


def _problem_text(value: str) -> str | None:
    if not re.search(r"\w", value):
        return "a value needs a letter or digit"
    if len(value) > MAX_VALUE_CHARS:
        return f"a value is at most {MAX_VALUE_CHARS} characters"
    return None


def _problem_phone(value: str) -> str | None:
    digits = re.sub(r"\D", "", value)
    if re.search(r"[a-z]", value.casefold().replace("ext", "")):
        return "a phone number is made of digits"
    if not 5 <= len(digits) <= 15:
        return "a phone number has 5 to 15 digits (ITU E.164)"
    return None


def _problem_email(value: str) -> str | None:
    if re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", value) is None:
        return "an e-mail address needs a local part, an @ and a domain"
    return None


def _problem_place(value: str) -> str | None:
    if not re.search(r"[a-z]{2}", value):
        return "a place is named in words"
    other = _looks_like_other_type(value)
    return f"a place, not {other}" if other else _problem_text(value)


def _problem_address(value: str) -> str | None:
    return _problem_place(value)


def _problem_person(value: str) -> str | None:
    if re.search(r"\d", value) or not re.search(r"[a-z]{2}", value):
        return "a person is named in words"
    if len(value.split()) > 6:
        return "a person's name is at most six words"
    other = _looks_like_other_type(value)
    return f"a person, not {other}" if other else None


def _problem_datetime(value: str) -> str | None:
    if re.fullmatch(r"\d{1,2}", value.strip()):
        # "12" alone is a clock hour, a day of the month or a count: no reader can
        # tell which, and a version chain of such fragments says nothing.
        return "a bare number is not a time: it needs its day, date or am/pm"
    if value.strip() in {"am", "pm", "a.m.", "p.m."}:
        return "am or pm alone is not a time: it needs its clock hour"
    if _words(value) and all(word.strip(".,'-") in _TIME_MODIFIERS for word in _words(value)):
        # "next" of "next Wednesday" cut from its day, "before" without its hour.
        return "a time needs its day, date or hour: this only modifies one"
    return None if _is_time_expression(value) else "a time is made of days, dates and clock times"


# Words that only place or bound a time that must follow them.
_TIME_MODIFIERS = frozenset(
    {"next", "this", "last", "every", "each", "early", "late", "mid", "the", "of", "on", "at"}
    | {"in", "by", "from", "to", "and", "or", "until", "till", "before", "after", "between"}
    | {"around", "about", "any", "same", "following", "coming"}
)


def _problem_quantity(value: str) -> str | None:
    if re.fullmatch(r"(?:about |around |~)?\d+(?:[.,]\d+)?\s*[a-z%]{0,6}", value) is None:
        return "a quantity is a number with an optional unit"
    return None


def same_money(a: str, b: str) -> bool:
    """One amount, its currency said in one and not the other: "5000" = "5000 zar"."""
    amount_a, _, code_a = a.partition(" ")
    amount_b, _, code_b = b.partition(" ")
    return amount_a == amount_b and (not code_a or not code_b)


def _problem_money(value: str) -> str | None:
    if re.fullmatch(r"\d+(?:\.\d+)?(?: [a-z]{3})?", value) is None:
        return "an amount of money is a number with an optional currency"
    return None


def _problem_age(value: str) -> str | None:
    if re.fullmatch(r"\d{1,3}", value) is None or int(value) >= 130:
        return "an age is a whole number of years below 130"
    return None


def _problem_code(value: str) -> str | None:
    if re.fullmatch(r"[a-z0-9][a-z0-9#/_.-]{0,39}", value) is None:
        return "a code is up to 40 letters, digits and dashes"
    return None


def _problem_language(value: str) -> str | None:
    return None if value in LANGUAGE_NAMES else f"not a language we know: {value!r}"


def _problem_channel(value: str) -> str | None:
    if value in set(CHANNELS.values()):
        return None
    return f"a contact channel is one of {sorted(set(CHANNELS.values()))}"


def _problem_animal(value: str) -> str | None:
    # "little" or "old" alone, a tagger's piece of "scruffy little terrier", names no pet.
    if value.split() and all(word in _PET_DESCRIPTIONS for word in value.split()):
        return "a pet is its kind or its name, not only a word describing it"
    return _problem_text(value)


def _problem_product(value: str) -> str | None:
    # "the 30GB plan" is 30gb, "premium" a name; a number alone names no plan
    # ("I'm getting about 480 Mbps" read as plan = 480 measures a speed).
    if re.fullmatch(r"\d+(?:\.\d+)?", value.strip()):
        return "a plan or product is a name or a number with its unit, not a bare number"
    # "mbps" cut from "the price of 500 Mbps": a unit alone names no plan either.
    words = value.split()
    if words and all(word in _UNITS for word in words):
        return "a plan or product is a name or a number with its unit, not a unit alone"
    return _problem_text(value)


@dataclass(frozen=True)
class ValueType:
    """How values of one type are normalised, identified and checked."""

    name: str
    normalise: Callable[[str], str]
    key: Callable[[str], str]
    check: Callable[[str], str | None]
    # Keys that differ yet name one value ("500mbps" / "500mbps fiber"); None: keys equal.
    same: Callable[[str, str], bool] | None = None


VALUE_TYPES: dict[str, ValueType] = {
    t.name: t
    for t in (
        ValueType("text", normalise_text, text_key, _problem_text),
        ValueType("relative", normalise_relative, text_key, _problem_text),
        ValueType("animal", normalise_animal, text_key, _problem_animal),
        ValueType("phone", normalise_phone, phone_key, _problem_phone, same_phone),
        ValueType("email", normalise_email, str, _problem_email),
        ValueType("address", normalise_address, _token_key, _problem_address, same_address),
        ValueType("place", normalise_place, _token_key, _problem_place),
        ValueType("person", normalise_text, _token_key, _problem_person),
        ValueType("datetime", normalise_datetime, _token_key, _problem_datetime),
        ValueType("date", normalise_datetime, _token_key, _problem_datetime),
        ValueType("quantity", normalise_quantity, str, _problem_quantity),
        ValueType("money", normalise_money, str, _problem_money, same_money),
        ValueType("age", normalise_age, str, _problem_age),
        ValueType("code", normalise_code, str, _problem_code),
        ValueType("language", normalise_language, str, _problem_language),
        ValueType("channel", normalise_channel, str, _problem_channel),
        ValueType("product", normalise_product, product_key, _problem_product, same_product),
        # enum: membership is checked by the predicate (its own ``values``).
        ValueType("enum", normalise_text, str, _problem_text),
    )
}


def same_key(value_type: ValueType, a: str, b: str) -> bool:
    """Whether two canonical values of one type are the same value."""
    if value_type.key(a) == value_type.key(b):
        return True
    return value_type.same is not None and value_type.same(a, b)
