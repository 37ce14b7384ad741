"""A day and a clock said apart in one turn are one moment.

"Booked from Monday 13 April, crew on site at 8am", "For Saturday July 4 we
only have an 8am pickup left": the tagger marks the day and the clock as two
values, and a single-valued time predicate then holds two versions of one
moment, the clock superseding the day. The labelling guide writes a time
said together as one value (``monday 2pm``, benchmarks/devset/LABELLING.md),
and so does this step, day first, when a turn holds exactly one day value and
one clock value of the same time predicate, said alike (same polarity, voice
and hedge). Two days or two clocks are a choice or a change, and stay apart.
"""

from __future__ import annotations

from collections import defaultdict

from pipelines.extract.learned.windows import TimeKind, time_kinds
from pipelines.vocabulary import TIME_TYPES, default_vocabulary
from schemas.facts import ExtractedFact, statement


def one_moment(facts: list[ExtractedFact]) -> list[ExtractedFact]:
    """``facts`` with a lone day and a lone clock of one time predicate joined."""
    vocabulary = default_vocabulary()
    times: dict[str, list[ExtractedFact]] = defaultdict(list)
    for fact in facts:
        spec = vocabulary.spec(fact.predicate)
        if spec.type in TIME_TYPES and not spec.multi_valued:
            times[fact.predicate].append(fact)
    joined: dict[int, ExtractedFact | None] = {}
    for pair in times.values():
        if len(pair) != 2:
            continue
        kinds = [time_kinds(f.object) for f in pair]
        days = [f for f, k in zip(pair, kinds, strict=True) if k and TimeKind.CLOCK not in k]
        clocks = [f for f, k in zip(pair, kinds, strict=True) if k == {TimeKind.CLOCK}]
        if len(days) != 1 or len(clocks) != 1:
            continue
        day, clock = days[0], clocks[0]
        if (day.polarity, day.asserted_by, day.hedged) != (
            clock.polarity,
            clock.asserted_by,
            clock.hedged,
        ):
            continue
        moment = f"{day.object} {clock.object}"
        joined[id(day)] = day.model_copy(
            update={
                "object": moment,
                "text": statement(day.predicate, moment, day.polarity),
                "confidence": min(day.confidence, clock.confidence),
                "is_update": day.is_update or clock.is_update,
                "fields": {**clock.fields, **day.fields} | {"TIME": moment},
            }
        )
        joined[id(clock)] = None
    if not joined:
        return facts
    out: list[ExtractedFact] = []
    for fact in facts:
        kept = joined.get(id(fact), fact)
        if kept is not None:
            out.append(kept)
    return out
