"""Who is speaking: the names the two speakers of a dialogue go by.

Between friends, a question about the conversation names people ("What did
Hannah name her puppy?"), while the turn that answers it says "we got a dog ...
he's called Biscuit" and never the speaker's name. An episode keyed by its
text alone cannot tell Hannah's puppy from the user's. So the ingest step
learns what each side is called and keys every episode with its speaker's
name ("Hannah: we got a dog ..."), once both sides' names are known
(``speaker_key``): on the friends' recall sets, MiniLM over raw turns found
the evidence in its top 5 for 0.569 of the questions, and for 0.661 with the
speakers' names in front (docs/recall.md).

A name is learned only from how people use names in talk, never from a list:
- a speaker *addresses* the other one: "Hannah! Sorry I went quiet",
  "Hi Priya,", "How are you, Priya?", "Thanks Sarah." name the other side;
- a speaker *introduces* themself: "my name is Sarah", "Hi, I'm Sarah".

Each side keeps a count per name it was called; its name is the one heard
most often (the first heard on a tie), so a stray capitalised exclamation
("Impressive!") is outvoted once the real name has been said twice. The
counts are the user's keyed state (``UserMemoryState.speakers``), learned in
offset order, so a name never depends on how an engine batched the turns.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from schemas.events import Role

# Names remembered per side: a name is said a handful of times, a pet name or
# a nickname adds one or two; past this the least heard goes first.
MAX_NAMES_PER_ROLE = 8
# A name: one capitalised word ("Hannah", "O'Neill", "Jean-Luc") or shouted
# ("PRIYA"). Two letters at least ("Jo", "Al").
_NAME = r"(?:[A-Z][a-z]+(?:['-][A-Z]?[a-z]+)?|[A-Z]{2,})"
# What may come before a name at the start of a turn ("Hi Priya", "Oh Hannah,").
_OPENER = (
    r"(?i:(?:hi|hey|hello|hiya|heya|yo|oi|morning|evening|night|good\s+(?:morning|evening|night)"
    r"|thanks|thank\s+you|cheers|ta|oh|ok|okay|yes|yeah|no|sorry|well|right|dear|congrats"
    r"|congratulations|happy\s+\w+(?:\s+\w+)?|aw+|omg|wow|ha(?:ha)*|bye|love\s+you)\b[\s,!.]*)*"
)
# "Hannah! Sorry ...", "Hi Priya, ...", "PRIYA. That's ..."
# A full stop after a bare word is too often a one-word sentence ("Respect.").
_ADDRESSED_FIRST = re.compile(rf"^[\W_]*{_OPENER}(?P<name>{_NAME})\s*[!?,…]")
# "How are you, Priya?", "Night, Hannah!" at the end of a sentence; not before a
# full stop, which more often ends a place ("a flat in Headingley, Leeds.").
_ADDRESSED_LAST = re.compile(rf",\s*(?P<name>{_NAME})\s*[!?]+(?=\s*$|\s+\S)")
# "Thanks Sarah", "bye Tom!" anywhere.
_GREETED = re.compile(
    r"\b(?i:hi|hey|hello|hiya|thanks|thank\s+you|cheers|bye|night|morning)\s+"
    rf"(?P<name>{_NAME})\b(?!\s+[a-z])"
)
# "my name is Sarah", "my name's Sarah", "Hi, I'm Sarah" (only after a greeting:
# "I'm Fine" is no name, but "Hello, I'm Sarah from ..." is).
_INTRODUCED = re.compile(
    rf"\b(?i:my\s+name(?:\s+is|'s))\s+(?P<name>{_NAME})\b"
    r"|^[\W_]*(?i:hi|hey|hello|hiya|good\s+\w+)[\s,!.]+(?i:i'm|i\s+am|this\s+is)\s+"
    rf"(?P<own>{_NAME})\b"
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Capitalised words that open a turn or end a sentence without naming anyone.
_NOT_NAMES = _words(
    """
    monday tuesday wednesday thursday friday saturday sunday today tomorrow tonight yesterday
    january february march april may june july august september october november december
    christmas easter xmas halloween thanksgiving
    i me my mine you your yours we us our he him his she her they them their it its
    the a an and but or so yes yeah yep yup ya ja nah no nope ok okay sure fine right well
    lol lmao rofl omg omfg wtf rip ugh argh hmm hm oh ah aw aww wow whoa ha haha hahaha hehe
    hi hey hello hiya bye thanks thank cheers sorry please congrats congratulations welcome
    mate babe baby bro dude girl girls guys hun honey love darling sweetie sweetheart man sis
    lord god jesus christ gosh heavens dear mum mom dad mam ma pa granny nana grandma grandpa
    stop wait look listen honestly seriously literally obviously basically actually anyway
    true totally exactly absolutely definitely perfect great good nice lovely brilliant
    amazing awesome cool fantastic wonderful excellent sweet fair noted done deal same
    congratulations happy classic jealous impressive typical tragic brutal rude grim
    what why how when where who which that this there here then now still also
    morning evening night afternoon weekend
    """
)
# "Impressive", "Honestly", "Amazing", "Exhausted": how exclamations end, seldom how names do.
_WORD_ENDINGS = re.compile(r"(?:ly|ive|ous|ful|ing|ed|able|ible|ish|less|ness|ment)$")
_REPEATED = re.compile(r"(.)\1\1")  # "NOOO", "WHATTT", "Sooo"


def _normal(word: str) -> str | None:
    """The name as stored ("PRIYA" -> "Priya"), or None when it names nobody."""
    lower = word.lower()
    if lower in _NOT_NAMES or _REPEATED.search(lower) or _WORD_ENDINGS.search(lower):
        return None
    return "-".join(part[:1].upper() + part[1:] for part in lower.split("-"))


def _other(role: Role) -> Role:
    return Role.AGENT if role is Role.USER else Role.USER


def names_said(role: Role, text: str) -> Iterator[tuple[Role, str]]:
    """``(side, name)`` for each name ``text`` gives a side: whom it addresses, who it is."""
    if role not in (Role.USER, Role.AGENT):
        return
    for line in text.splitlines()[:1] or [""]:
        for pattern in (_ADDRESSED_FIRST, _GREETED):
            match = pattern.search(line)
            if match and (name := _normal(match["name"])):
                yield _other(role), name
                break
    for match in _ADDRESSED_LAST.finditer(text):
        if name := _normal(match["name"]):
            yield _other(role), name
    for match in _INTRODUCED.finditer(text):
        if name := _normal(match["name"] or match["own"]):
            yield role, name


def observe(counts: dict[str, dict[str, int]], role: Role, text: str) -> None:
    """Count the names one turn gives either side (``counts``: side -> name -> times)."""
    for side, name in names_said(role, text):
        heard = counts.setdefault(side.value, {})
        heard[name] = heard.get(name, 0) + 1
        while len(heard) > MAX_NAMES_PER_ROLE:
            least = min(heard, key=heard.__getitem__)
            del heard[least]


def name_of(counts: dict[str, dict[str, int]], role: Role) -> str | None:
    """The name a side goes by: the one heard most often, or None."""
    heard = counts.get(role.value)
    if not heard:
        return None
    best = max(heard.values())
    return next(name for name, times in heard.items() if times == best)


def speaker_key(counts: dict[str, dict[str, int]], role: Role) -> str | None:
    """The name to key a turn of ``role`` with: its name, once both sides have one.

    A name's job is to tell the two speakers apart. With one side named only
    (a customer who gave their name to an unnamed agent), the prefix just
    pulls that side's turns towards any question naming them, while the
    other side's turns may hold the answer: an agent's confirmation is about
    the customer. On the customer-service recall sets, keying whoever was
    named cut MiniLM's any-hit@10 on cs_blind8 from 0.897 to 0.845; keying
    only two named sides left every customer-service set within 0.01 and kept
    the friends' gains (docs/recall.md).
    """
    own, other = name_of(counts, role), name_of(counts, _other(role))
    return own if own is not None and other is not None else None


def keyed(name: str | None, text: str) -> str:
    """The text an episode is embedded and searched by: its speaker's name first."""
    return f"{name}: {text}" if name else text
