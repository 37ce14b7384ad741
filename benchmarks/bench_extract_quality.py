"""Extraction quality on the hand-labelled dev and held-out splits, beside a regex baseline.

Run: ``python benchmarks/bench_extract_quality.py [--errors] [--dev FILE]``
(HF_HUB_OFFLINE=1, FLAIR_CACHE_ROOT set); ``--dev`` scores another dev file,
e.g. an earlier version of the labels, beside the same held-out splits. Prints
triple precision/recall/F1, negation recall, polarity accuracy, hedge handling,
update recall and the compression ratio for both extractors on every split
(dev, held-out, held-out 2); each split is extracted in turn order with its
``DialogueContext`` threaded through, as the ingest job does.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pipelines.extract import FactExtractor
from pipelines.extract.vocabulary import canonical_phone, canonical_time
from pipelines.parse import DialogueParser
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor
from schemas.memory import Polarity

DEVSET = Path(__file__).parent / "devset" / "conversations.txt"
# Written before any error analysis and never used to tune rules (devset/README.md).
HELDOUT = Path(__file__).parent / "devset" / "heldout.txt"
# A second held-out split, written before any output on it was looked at (task H6).
HELDOUT2 = Path(__file__).parent / "devset" / "heldout2.txt"
# Six more, each written blind (stop 10, tasks H1-H6) by an author who never saw
# the rules or their output. 3-6 were measured blind once, then their errors
# were read to write rules (tuning rounds 4-6); 7 and 8 stay unseen.
HELDOUT3 = Path(__file__).parent / "devset" / "heldout3.txt"
HELDOUT4 = Path(__file__).parent / "devset" / "heldout4.txt"
HELDOUT5 = Path(__file__).parent / "devset" / "heldout5.txt"
HELDOUT6 = Path(__file__).parent / "devset" / "heldout6.txt"
HELDOUT7 = Path(__file__).parent / "devset" / "heldout7.txt"
HELDOUT8 = Path(__file__).parent / "devset" / "heldout8.txt"
COMMIT_THRESHOLD = 0.82  # the review gate's commit threshold (DESIGN.md §3)
TARGETS = {"triple F1": 0.80, "negation recall": 0.90, "polarity accuracy": 0.95}


@dataclass(frozen=True)
class Gold:
    """One gold triple of one turn."""

    predicate: str
    object: str
    negated: bool
    hedged: bool
    update: bool
    agent: bool


@dataclass
class Turn:
    """One dev-set turn with its gold facts."""

    event: DialogueEvent
    gold: list[Gold] = field(default_factory=list)


def load_devset(path: Path = DEVSET) -> list[Turn]:
    """Read the dev set format described in benchmarks/devset/README.md."""
    turns: list[Turn] = []
    conv = tenant = user = session = ""
    ts = datetime.now().astimezone()
    index = 0
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("= "):
            conv, tenant, user = line[2:].split()
        elif line.startswith("@ "):
            name, stamp = line[2:].split()
            session, ts, index = f"{conv}-{name}", datetime.fromisoformat(stamp), 0
        elif line[:2] in {"U:", "A:"}:
            role = Role.USER if line[0] == "U" else Role.AGENT
            event = DialogueEvent(
                event_id=f"{session}-t{index}",
                tenant_id=tenant,
                user_id=user,
                session_id=session,
                turn_index=index,
                role=role,
                text=line[2:].strip(),
                ts=ts,
            )
            turns.append(Turn(event))
            index += 1
        elif line.startswith("+ "):
            predicate, obj, *rest = [part.strip() for part in line[2:].split("|")]
            flags = set(rest[0].split()) if rest else set()
            turns[-1].gold.append(
                Gold(
                    predicate,
                    obj,
                    "neg" in flags,
                    "hedge" in flags,
                    "update" in flags,
                    "agent" in flags,
                )
            )
        else:
            raise ValueError(f"{path}:{lineno}: cannot read {raw!r}")
    return turns


# --- the naive baseline: keywords and regexes only, no parse, no NER ----------
_B_TIME = re.compile(
    r"\b(?:(?:before|after) \d{1,2}(?:\s?[ap]m)?|\d{1,2}\s?[ap]m"
    r"|(?:mon|tues|wednes|thurs|fri|satur|sun)days?|weekends?|tomorrow|tonight)\b",
    re.IGNORECASE,
)
_B_PHONE = re.compile(r"\+?\d[\d ]{6,}\d")
_B_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_B_NEG = re.compile(r"\b(?:not|no|never|n't|don't|won't|can't)\b", re.IGNORECASE)
_B_TOPICS = (
    ("install", "installation_time"),
    ("deliver", "delivery_time"),
    ("call", "contact_time"),
    ("fly", "travel_time"),
)


def baseline_extract(event: DialogueEvent) -> list[tuple[str, str, bool, float]]:
    """(predicate, object, negated, confidence) by keyword search over the raw turn."""
    text = event.text
    negated = bool(_B_NEG.search(text))
    topic = next((p for k, p in _B_TOPICS if k in text.lower()), "appointment_time")
    out = [(topic, canonical_time(m.group(0)), negated, 0.9) for m in _B_TIME.finditer(text)]
    out += [
        ("phone_number", canonical_phone(m.group(0)), False, 0.9) for m in _B_PHONE.finditer(text)
    ]
    out += [("email", m.group(0).lower(), False, 0.9) for m in _B_EMAIL.finditer(text)]
    return out


# --- scoring ------------------------------------------------------------------
Predicted = dict[int, list[tuple[str, str, bool, float, bool]]]  # turn -> (p, o, neg, conf, update)


def score(turns: list[Turn], predicted: Predicted) -> dict[str, float]:
    """All quality metrics of one extractor's output over the dev set."""
    tp = n_pred = n_gold = 0
    neg_total = neg_hit = pol_total = pol_ok = 0
    hedge_total = hedge_ok = hedge_committed = upd_total = upd_hit = 0
    for i, turn in enumerate(turns):
        preds: dict[tuple[str, str], list[tuple[bool, float, bool]]] = {}
        for p, o, neg, conf, upd in predicted.get(i, []):
            preds.setdefault((p, o), []).append((neg, conf, upd))
        gold = {(g.predicate, g.object): g for g in turn.gold}
        n_pred += len(preds)
        n_gold += len(gold)
        for key, g in gold.items():
            hits = preds.get(key, [])
            tp += bool(hits)
            if hits:
                pol_total += 1
                pol_ok += any(neg == g.negated for neg, _, _ in hits)
            if g.negated:
                neg_total += 1
                neg_hit += any(neg for neg, _, _ in hits)
            if g.hedged:
                hedge_total += 1
                committed = any(conf >= COMMIT_THRESHOLD for _, conf, _ in hits)
                hedge_committed += committed
                hedge_ok += bool(hits) and not committed
            if g.update:
                upd_total += 1
                upd_hit += any(upd for _, _, upd in hits)
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    return {
        "gold triples": n_gold,
        "predicted triples": n_pred,
        "triple precision": precision,
        "triple recall": recall,
        "triple F1": 2 * precision * recall / (precision + recall) if tp else 0.0,
        "negation recall": neg_hit / neg_total if neg_total else 0.0,
        "polarity accuracy": pol_ok / pol_total if pol_total else 0.0,
        "hedge handling": hedge_ok / hedge_total if hedge_total else 0.0,
        "hedged committed (must be 0)": hedge_committed,
        "update recall": upd_hit / upd_total if upd_total else 0.0,
    }


def compression(turns: list[Turn], fact_chars: int) -> float:
    """1 - chars of facts / chars of dialogue (design target ~0.87)."""
    dialogue = sum(len(t.event.text) for t in turns)
    return 1 - fact_chars / dialogue


def run_memstream(
    turns: list[Turn], parser: DialogueParser, extractor: FactExtractor
) -> tuple[Predicted, int, int]:
    """Parse + extract a split in one batch, threading each session's context as the job does.

    Returns the predictions, the characters of all facts and of the user's own facts.
    """
    events = [t.event for t in turns]
    parsed = parser.parse_batch(events)
    facts, _ = extractor.extract_in_context(list(zip(events, parsed, strict=True)), {})
    predicted: Predicted = {
        i: [
            (f.predicate, f.object, f.polarity is Polarity.NEGATED, f.confidence, f.is_update)
            for f in fs
        ]
        for i, fs in enumerate(facts)
    }
    user = [f for fs in facts for f in fs if f.asserted_by is Assertor.USER]
    return predicted, sum(len(f.text) for fs in facts for f in fs), sum(len(f.text) for f in user)


def run_baseline(turns: list[Turn]) -> tuple[Predicted, int, int]:
    """The naive keyword/regex extractor over the same turns (chars: all, user turns')."""
    predicted: Predicted = {}
    chars = user_chars = 0
    for i, turn in enumerate(turns):
        found = baseline_extract(turn.event)
        predicted[i] = [(p, o, neg, conf, False) for p, o, neg, conf in found]
        turn_chars = sum(len(f"{p} {'NOT ' if neg else ''}{o}") for p, o, neg, _ in found)
        chars += turn_chars
        user_chars += turn_chars if turn.event.role is Role.USER else 0
    return predicted, chars, user_chars


def describe(name: str, turns: list[Turn]) -> str:
    """One line of counts for a split."""
    convs = len({t.event.user_id for t in turns})
    gold = [g for t in turns for g in t.gold]
    return (
        f"{name}: {len(turns)} turns, {convs} conversations, {len(gold)} gold triples "
        f"({sum(g.negated for g in gold)} negated, {sum(g.update for g in gold)} updates, "
        f"{sum(g.hedged for g in gold)} hedged)"
    )


def gold_compression(turns: list[Turn]) -> float:
    """What a perfect extractor would reach on a fact-dense split, for scale."""
    gold = [g for t in turns for g in t.gold]
    chars = sum(len(f"{g.predicate} {'NOT ' if g.negated else ''}{g.object}") for g in gold)
    return compression(turns, chars)


def main(show_errors: Callable[[str], None] | None = None, dev: Path = DEVSET) -> None:
    """Print dev and held-out quality side by side; ``show_errors`` gets the dev set's misses."""
    splits = {
        "dev": load_devset(dev),
        "held": load_devset(HELDOUT),
        "held2": load_devset(HELDOUT2),
        "held3": load_devset(HELDOUT3),
        "held4": load_devset(HELDOUT4),
        "held5": load_devset(HELDOUT5),
        "held6": load_devset(HELDOUT6),
        "held7": load_devset(HELDOUT7),
        "held8": load_devset(HELDOUT8),
    }
    parser = DialogueParser.load()
    extractor = FactExtractor.load(parser)
    columns: list[tuple[dict[str, float], float, float]] = []
    ours_dev: Predicted = {}
    for name, turns in splits.items():
        print(describe(name, turns))
        ours, our_chars, our_user_chars = run_memstream(turns, parser, extractor)
        base, base_chars, base_user_chars = run_baseline(turns)
        ours_dev = ours if name == "dev" else ours_dev
        columns += [
            (score(turns, ours), compression(turns, our_chars), compression(turns, our_user_chars)),
            (
                score(turns, base),
                compression(turns, base_chars),
                compression(turns, base_user_chars),
            ),
        ]
    heads = [f"{name} {who}" for name in splits for who in ("ours", "base")]
    print(f"{'metric':<30}" + "".join(f"{h:>11}" for h in heads) + f"{'target':>9}")
    for metric in columns[0][0]:
        values = [col[0][metric] for col in columns]
        fmt = "{:>11.0f}" if isinstance(values[0], int) else "{:>11.3f}"
        target = f"{TARGETS[metric]:>9.2f}" if metric in TARGETS else ""
        print(f"{metric:<30}" + "".join(fmt.format(v) for v in values) + target)
    ratios = "".join(f"{col[1]:>11.3f}" for col in columns)
    print(f"{'compression ratio':<30}{ratios}{0.87:>9.2f}")
    # The user's own facts are what becomes the user's memory; agent facts wait
    # for a confirmation (and restate the user's facts more often than not).
    user_ratios = "".join(f"{col[2]:>11.3f}" for col in columns)
    print(f"{'compression, user facts only':<30}{user_ratios}")
    perfect = "".join(f"{gold_compression(turns):>11.3f}{'':>11}" for turns in splits.values())
    print(f"{'compression of the gold facts':<30}{perfect}")
    if show_errors is not None:
        # Errors of the dev split only: the held-out split must stay unseen.
        for i, turn in enumerate(splits["dev"]):
            got = {(p, o, neg) for p, o, neg, _, _ in ours_dev.get(i, [])}
            want = {(g.predicate, g.object, g.negated) for g in turn.gold}
            if got != want:
                show_errors(f"{turn.event.event_id} {turn.event.text!r}")
                show_errors(f"   missed {want - got}\n   extra  {got - want}")


if __name__ == "__main__":
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("--errors", action="store_true", help="list the dev split's misses")
    arguments.add_argument("--dev", type=Path, default=DEVSET, help="dev file to score")
    options = arguments.parse_args()
    main(print if options.errors else None, options.dev)
