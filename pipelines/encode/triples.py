"""The triple vocabulary shared by TransE training and the encode stage.

A fact becomes a (head, relation, tail) triple of normalised labels. Training
(``memstream train transe``) and encoding both go through ``fact_triple`` /
``triple_from_record``, so a label seen in training is found again at encode
time. Negation lives in the relation: ("installation_time", "not_in",
"weekend") is a different relation from "in", so a negated fact never gets the
vector of its positive.

Triple files are JSON lines: ``{"subject": ..., "predicate": ..., "object": ...,
"polarity": "affirmed"|"negated"}`` (polarity optional, default affirmed), the
field names of ``ExtractedFact``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from schemas.facts import ExtractedFact
from schemas.memory import Polarity

# The committed seed graph: the extract stage's triples (subject "user", the
# predicates of pipelines/extract/vocabulary.py, canonical objects) over
# everyday customer-service values, affirmed and negated, so a fresh install
# has trained vectors for every relation before any user triple was seen.
SEED_TRIPLES = Path(str(files("pipelines.encode").joinpath("seed_triples.jsonl")))

_NEGATION_PREFIX = "not_"


@dataclass(frozen=True, slots=True)
class Triple:
    """A (head, relation, tail) triple of normalised labels."""

    head: str
    relation: str
    tail: str

    @property
    def negated(self) -> bool:
        """Whether the relation is a negated one ("not_in")."""
        return self.relation.startswith(_NEGATION_PREFIX)


def normalise_label(text: str) -> str:
    """Case-folded, whitespace-collapsed: "Weekend " and "weekend" are one label."""
    return " ".join(text.casefold().split())


def relation_label(predicate: str, polarity: Polarity) -> str:
    """The relation of a predicate under a polarity.

    Negation may arrive in the predicate ("NOT_IN"), in the polarity, or both;
    all three spell the same relation "not_in".
    """
    base = normalise_label(predicate).replace(" ", "_")
    negated = polarity is Polarity.NEGATED or base.startswith(_NEGATION_PREFIX)
    base = base.removeprefix(_NEGATION_PREFIX)
    return _NEGATION_PREFIX + base if negated else base


def make_triple(subject: str, predicate: str, obj: str, polarity: Polarity) -> Triple:
    """The triple of one (subject, predicate, object, polarity)."""
    return Triple(
        head=normalise_label(subject),
        relation=relation_label(predicate, polarity),
        tail=normalise_label(obj),
    )


def fact_triple(fact: ExtractedFact) -> Triple:
    """The triple of an extracted fact."""
    return make_triple(fact.subject, fact.predicate, fact.object, fact.polarity)


def triple_from_record(record: Mapping[str, object]) -> Triple:
    """The triple of one parsed line of a triple file."""
    try:
        subject, predicate, obj = (str(record[k]) for k in ("subject", "predicate", "object"))
    except KeyError as err:
        raise ValueError(f"triple line lacks field {err}: {record!r}") from None
    return make_triple(subject, predicate, obj, Polarity(str(record.get("polarity", "affirmed"))))


def read_triples(path: Path) -> list[Triple]:
    """All triples of a JSON-lines triple file (blank lines skipped)."""
    triples: list[Triple] = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                triples.append(triple_from_record(json.loads(line)))
            except (ValueError, TypeError) as err:
                raise ValueError(f"{path}:{number}: {err}") from err
    return triples


def write_triples(path: Path, triples: Iterable[Triple]) -> int:
    """Write triples as a JSON-lines triple file that reads back unchanged; returns the count."""
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for triple in triples:
            line = {"subject": triple.head, "predicate": triple.relation, "object": triple.tail}
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
            count += 1
    return count
