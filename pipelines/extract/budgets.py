"""The most the user will spend: "nothing over 100", "£1800 max", "we'll stretch to ten grand".

A customer states a budget in a handful of set ways, in any trade: a word
that caps an amount before it ("no more than £350", "can't go over 2k",
"keep it under four thousand pounds", "up to 400", "stretch to 335k") or
after it ("400 max", "£30 tops", "two thousand, top whack", "CAD 600 was my
max"). The tagger, which sees amounts mostly as prices, found under half of
the budgets the labelling guide asks for in the seen customer-service splits
(benchmarks/devset/README.md, stop 40). ``stated_budgets`` reads those ways;
the amount is normalised as money (``pipelines/vocabulary/values.py``:
"ten grand" is 10000, "£35k" 35000 gbp).

The other speaker restating it ("a budget of £4,000", "over your €150") says
it in their voice; an agent's "under £200" or "up to 400" is an offer, not
the user's limit, and is not read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pipelines.extract.learned.facts import CONFIDENCE_HEDGED
from pipelines.extract.polarity import is_hedged
from pipelines.extract.typed import stated
from pipelines.vocabulary import default_vocabulary
from pipelines.vocabulary.values import MONEY_PATTERN
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact

_AMOUNT = rf"({MONEY_PATTERN})"
# Words before the amount that cap it, said by the user.
_CAP_BEFORE = (
    r"\b(?:budget(?:'s|\s+is|\s+was|\s+of)?|budgeting|budgeted|max(?:imum)?(?:\s+is|\s+of)?"
    r"|limit(?:\s+is|\s+of)?|ceiling\s+(?:is|of)|cap(?:\s+of)?|no\s+more\s+than|not\s+more\s+than"
    r"|nothing\s+(?:over|above|more\s+than)|up\s+to|stretch(?:ed)?\s+(?:it\s+)?to"
    r"|(?:go|going)\s+up\s+to|at\s+most|tops\s+of"
    r"|(?:can'?t|cannot|couldn'?t|won'?t|wo\s?n'?t|not|don'?t\s+want\s+to|rather\s+not)"
    r"\s+(?:\w+\s+)?(?:go|spend|pay)\s+(?:\w+\s+)?(?:over|above|more\s+than|beyond)"
    r"|(?:keep\s+it|stay|be|it'?s|hoping\s+for\s+something|hoping\s+for|looking\s+for\s+something)"
    r"\s+(?:\w+\s+)?(?:under|below))"
    r"\s+(?:like\s+|about\s+|around\s+|maybe\s+|roughly\s+)?"
)
# Words after the amount that cap it: "400 max", "£60 tops", "two thousand, top whack".
_CAP_AFTER = (
    r",?\s*(?:max(?:imum)?\b|tops\b|top\s+whack|all\s+in,?\s+max|(?:is|was)\s+(?:my|our|the)"
    r"\s+(?:max(?:imum)?|limit|budget|ceiling)|(?:is|was)\s+the\s+most|at\s+(?:the\s+)?most"
    r"|,?\s*not\s+a\s+penny\s+more|budget\b)"
)
_USERS = re.compile(rf"{_CAP_BEFORE}{_AMOUNT}|{_AMOUNT}{_CAP_AFTER}", re.IGNORECASE)
# The amount is the first group that matched: before one cap word or after another.
# The other speaker restates a limit only with a word that names one.
_RESTATED = re.compile(
    rf"\b(?:budget(?:\s+of|\s+is|\s+still)?|max(?:imum)?\s+of|cap\s+of|limit\s+of"
    rf"|(?:over|under|inside|within)\s+your)\s+{_AMOUNT}"
    rf"|{_AMOUNT}\s+(?:cap|limit|budget|as\s+the\s+max(?:imum)?)\b",
    re.IGNORECASE,
)
# Above the review gate's commit threshold (0.82): a cap word beside an amount.
CONFIDENCE = 0.85


def stated_budgets(
    event: DialogueEvent, doc: Any, facts: Sequence[ExtractedFact]
) -> list[ExtractedFact]:
    """``facts`` with each budget the turn states, unless the tagger read it already."""
    if doc is None or event.role not in {Role.USER, Role.AGENT}:
        return list(facts)
    vocabulary = default_vocabulary()
    spec = vocabulary.spec("budget")
    held = [f.object for f in facts if vocabulary.canonical(f.predicate) == "budget"]
    pattern = _USERS if event.role is Role.USER else _RESTATED
    found: list[ExtractedFact] = []
    for sent in doc.sents:
        if event.role is Role.USER and "?" in sent.text:
            continue
        for match in pattern.finditer(sent.text):
            amount = next((g for g in match.groups() if g), "")
            value = spec.normalise(amount)
            if spec.problem(value) is not None or any(spec.same_value(h, value) for h in held):
                continue
            hedged = event.role is Role.USER and is_hedged(sent.text)
            fact = stated(
                event,
                "budget",
                value,
                asserted_by=Assertor.USER if event.role is Role.USER else Assertor.AGENT,
                confidence=CONFIDENCE_HEDGED if hedged else CONFIDENCE,
                field="VALUE",
            )
            found.append(fact.model_copy(update={"hedged": hedged}))
            held.append(value)
    return [*facts, *found]
