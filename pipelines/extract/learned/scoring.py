"""Predicted triples against gold: triple-level and per-predicate precision, recall and F1.

A predicted triple matches a gold one of the same turn when the predicate is
the same, the objects are one value (``PredicateSpec.same_value``) and the
polarity is the same, as benchmarks/devset/README.md scores the rule
extractor. Each gold triple is matched at most once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from pipelines.extract.learned.tagging import GoldTriple, LearnedTriple
from pipelines.vocabulary import Vocabulary, default_vocabulary


@dataclass
class Counts:
    """True positives, false positives and false negatives."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float:
        """Share of predictions that match gold."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        """Share of gold that a prediction matches."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        """Harmonic mean of precision and recall."""
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass
class Report:
    """Scores over a set of turns."""

    overall: Counts = field(default_factory=Counts)
    by_predicate: dict[str, Counts] = field(default_factory=lambda: defaultdict(Counts))
    negated: Counts = field(default_factory=Counts)  # over negated gold: its recall
    hedged: Counts = field(default_factory=Counts)  # matched hedged gold predicted hedged


def matches(
    predicted: Sequence[LearnedTriple], gold: Sequence[GoldTriple], vocab: Vocabulary
) -> list[tuple[LearnedTriple, GoldTriple]]:
    """Pairs of a prediction and the gold triple it matches, one-to-one, in prediction order."""
    free = list(gold)
    pairs = []
    for triple in predicted:
        spec = vocab.spec(triple.predicate)
        for candidate in free:
            if (
                vocab.canonical(candidate.predicate) == triple.predicate
                and candidate.negated == triple.negated
                and spec.same_value(triple.obj, spec.normalise(candidate.obj))
            ):
                pairs.append((triple, candidate))
                free.remove(candidate)
                break
    return pairs


def score(
    gold: Sequence[Sequence[GoldTriple]],
    predicted: Sequence[Sequence[LearnedTriple]],
    vocab: Vocabulary | None = None,
) -> Report:
    """Score each turn's predictions against its gold (the two lists in the same turn order)."""
    vocab = vocab or default_vocabulary()
    report = Report()
    for turn_gold, turn_predicted in zip(gold, predicted, strict=True):
        pairs = matches(turn_predicted, turn_gold, vocab)
        matched_gold = [id(g) for _, g in pairs]
        matched_predicted = [id(p) for p, _ in pairs]
        for triple in turn_predicted:
            hit = id(triple) in matched_predicted
            for counts in (report.overall, report.by_predicate[triple.predicate]):
                counts.tp += hit
                counts.fp += not hit
        for item in turn_gold:
            hit = id(item) in matched_gold
            name = vocab.canonical(item.predicate)
            for counts in (report.overall, report.by_predicate[name]):
                counts.fn += not hit
            if item.negated:
                report.negated.tp += hit
                report.negated.fn += not hit
            if item.hedged:
                hedged = hit and any(p.hedged for p, g in pairs if g is item)
                report.hedged.tp += hedged
                report.hedged.fn += not hedged
    return report
