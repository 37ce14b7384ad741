"""Extraction quality on the hand-labelled dev and held-out splits, beside a regex baseline.

Run: ``python benchmarks/bench_extract_quality.py [--errors SPLIT] [--dev FILE] [--natural N]``
(HF_HUB_OFFLINE=1, FLAIR_CACHE_ROOT set). Prints, for memstream and for a
keyword/regex baseline, one row per split (dev, held, held2 ... held12 and the
first-sight splits of benchmarks/devset/blind/, or train/ once retired; their roles in
benchmarks/devset/README.md) and pooled rows over the tuned, the blind and the
first-sight splits: triple precision/recall/F1, negation recall, polarity accuracy,
hedge handling (and its other side: the share of the user's sure facts found but
held below the commit threshold), update recall and the compression ratios. Each split is
extracted in turn order with its ``DialogueContext`` threaded through, as the
ingest job does. ``--dev`` scores another dev file (e.g. the labels before their
review, from git history); ``--errors SPLIT`` lists one split's misses (reading
a blind split's errors makes it a tuned one); ``--only SPLIT ...`` scores some
splits; ``--natural N`` (default 20) adds
the compression of N LongMemEval haystacks, read in place from MEMSTREAM_BENCHMARKS__LONGMEMEVAL.
"""

from __future__ import annotations

import argparse
import random
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from pipelines.extract import FactExtractor
from pipelines.extract.learned.model import MODEL_PATH as LEARNED_MODEL
from pipelines.extract.learned.model import model_files
from pipelines.extract.typed import window_part
from pipelines.extract.vocabulary import canonical_phone, canonical_time
from pipelines.parse import DialogueParser
from pipelines.review import Reviewer, UserMemoryState
from pipelines.vocabulary import default_vocabulary
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact
from schemas.lineage import SourceLineage
from schemas.memory import Polarity
from schemas.topics import DIALOGUE_EVENTS

DEVSET = Path(__file__).parent / "devset" / "conversations.txt"
# Written before any error analysis and never used to tune rules (devset/README.md).
HELDOUT = Path(__file__).parent / "devset" / "heldout.txt"
# A second held-out split, written before any output on it was looked at (task H6).
HELDOUT2 = Path(__file__).parent / "devset" / "heldout2.txt"
# Ten more (stop 10, tasks H1-H10), each written blind by an author who never
# saw the rules or their output: each was scored once while unseen, then its
# errors were read to write the next round's rules (benchmarks/devset/README.md).
# 11 and 12 are still unseen.
HELDOUT_BLIND = [Path(__file__).parent / "devset" / f"heldout{n}.txt" for n in range(3, 13)]
# Issue 12's first-sight splits (benchmarks/devset/blind/): personal chat
# between friends, and industries no other split has. Never trained on while
# there; a split retired to train/ after its first sight (stop 38) is still
# scored by name, as "trained".
BLIND_DIR = Path(__file__).parent / "devset" / "blind"
TRAIN_DIR = Path(__file__).parent / "devset" / "train"
BLIND_SPLITS = (
    *("cs_clinic", "cs_school", "friends_a", "friends_b", "cs_insurance", "friends_c"),
    *("friends_d", "cs_professional", "friends_e"),  # stop 15
    *("friends_f", "cs_trades"),  # stop 22
    *("friends_g", "cs_mixed"),  # stop 23
    *("friends_h", "cs_new"),  # stop 24
    *("friends_i", "cs_rental"),  # stop 26
    *("friends_j", "cs_optical"),  # stop 27
    *("friends_k", "cs_utility"),  # stop 27, for the retrained model
    *("friends_l", "cs_public"),  # stop 28
    *("friends_m", "cs_field"),  # stop 29
    *("friends_n", "cs_harbour"),  # stop 31
    *("friends_o", "cs_meadow"),  # stop 32
    *("friends_p", "cs_orchard"),  # stop 33
    *("friends_q", "cs_quarry"),  # stop 34
    *("friends_r", "cs_ridge"),  # stop 35
    *("friends_s", "cs_summit"),  # stop 36
    *("friends_t", "cs_tide"),  # stop 37
    *("friends_u", "cs_vale"),  # stop 38
    *("friends_v", "cs_wren"),  # stop 39
    *("friends_w", "cs_yarrow"),  # stop 40
    *("friends_x", "cs_zinnia"),  # stop 40, after its rules
    *("friends_y", "cs_aster"),  # stop 41
    *("friends_z", "cs_bramble"),  # stop 41, for its changes and the retrained model
    *("friends_aa", "cs_clover"),  # stop 42
    *("friends_bb", "cs_dahlia"),  # stop 42, for its changes
    *("friends_cc", "cs_ember"),  # stop 43
    *("friends_dd", "cs_fjord"),  # stop 44
    *("friends_ee", "cs_grove"),  # stop 45
    *("friends_ff", "cs_hollow"),  # stop 46
    *("friends_gg", "cs_ivy"),  # stop 47
    *("friends_hh", "cs_juniper"),  # stop 48
    *("friends_ii", "cs_kestrel"),  # stop 49
)
# Which LongMemEval questions the natural-dialogue compression samples.
NATURAL_SEED = 29
COMMIT_THRESHOLD = 0.82  # the review gate's commit threshold (docs/architecture.md, Stages)
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
            ts = datetime.fromisoformat(stamp)
            ts = ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)  # a bare time is UTC
            session, index = f"{conv}-{name}", 0
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
    for turn in turns:
        turn.gold = _gold_in_vocabulary(turn.gold)
    return turns


def _gold_in_vocabulary(gold: list[Gold]) -> list[Gold]:
    """Gold in the vocabulary's names and forms; an older file's split window joined.

    Files written before the typed vocabulary label "Monday at 10am" as two
    facts (``monday``, ``10am``); the vocabulary makes it one window. A turn's
    one day and one clock time of one predicate and flags are joined here, as
    pipelines/extract/typed.py joins them in the output.
    """
    vocab = default_vocabulary()
    named = [
        replace(
            g,
            predicate=vocab.canonical(g.predicate),
            object=vocab.spec(g.predicate).normalise(g.object),
        )
        for g in gold
    ]
    groups: dict[tuple[object, ...], list[int]] = {}
    for i, g in enumerate(named):
        if vocab.spec(g.predicate).type == "datetime" and window_part(g.object) is not None:
            groups.setdefault((g.predicate, g.negated, g.hedged, g.update, g.agent), []).append(i)
    drop: set[int] = set()
    for members in groups.values():
        parts = [window_part(named[i].object) for i in members]
        if len(members) == 2 and sorted(parts, key=str) == ["clock", "day"]:
            day, clock = (members[0], members[1]) if parts[0] == "day" else (members[1], members[0])
            named[min(members)] = replace(
                named[min(members)], object=f"{named[day].object} {named[clock].object}"
            )
            drop.add(max(members))
    return [g for i, g in enumerate(named) if i not in drop]


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
# Turn -> the user's current facts (p, o, negated) right after it, for turns with a gold update.
Current = dict[int, list[tuple[str, str, bool]]]


def score(
    turns: list[Turn], predicted: Predicted, current: Current | None = None
) -> dict[str, float]:
    """All quality metrics of one extractor's output over the dev set.

    ``current`` (the review's state after each update turn) scores "current
    value after an update"; without it that metric is 0.
    """
    tp = n_pred = n_gold = 0
    neg_total = neg_hit = pol_total = pol_ok = 0
    hedge_total = hedge_ok = hedge_committed = upd_total = upd_hit = 0
    plain_found = plain_held = 0
    value_tp = n_values = 0
    vocab = default_vocabulary()
    for i, turn in enumerate(turns):
        preds: dict[tuple[str, str], list[tuple[bool, float, bool]]] = {}
        for p, o, neg, conf, upd in predicted.get(i, []):
            preds.setdefault((vocab.canonical(p), o), []).append((neg, conf, upd))
        gold = {(g.predicate, g.object): g for g in turn.gold}
        n_pred += len(preds)
        n_gold += len(gold)
        for (predicate, obj), g in gold.items():
            # The same value in another surface form matches (the vocabulary's identity).
            spec = vocab.spec(predicate)
            hits = [
                hit
                for (p, o), found in preds.items()
                if p == predicate and spec.same_value(obj, o)
                for hit in found
            ]
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
            elif hits and not g.agent:
                # A sure fact of the user's held for review is not in memory yet:
                # the other side of the hedge gate (what an over-wide hedge costs).
                plain_found += 1
                plain_held += all(conf < COMMIT_THRESHOLD for _, conf, _ in hits)
            if g.update:
                upd_total += 1
                upd_hit += any(upd for _, _, upd in hits)
        # Without the vocabulary, as a grader that knows no predicate names
        # scores: the right turn, the right value (in some surface form) and
        # the right polarity, whichever predicate carries it.
        values = {(o, neg) for (_, o), found in preds.items() for neg, _, _ in found}
        n_values += len(values)
        for g in gold.values():
            spec = vocab.spec(g.predicate)
            value_tp += any(neg == g.negated and spec.same_value(g.object, o) for o, neg in values)
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    return {
        "gold triples": n_gold,
        "predicted triples": n_pred,
        "triple precision": precision,
        "triple recall": recall,
        "triple F1": 2 * precision * recall / (precision + recall) if tp else 0.0,
        "value+polarity F1": _f1(value_tp, n_values, n_gold),
        "negation recall": neg_hit / neg_total if neg_total else 0.0,
        "polarity accuracy": pol_ok / pol_total if pol_total else 0.0,
        "hedge handling": hedge_ok / hedge_total if hedge_total else 0.0,
        "hedged committed (must be 0)": hedge_committed,
        "sure facts held": plain_held / plain_found if plain_found else 0.0,
        "update recall": upd_hit / upd_total if upd_total else 0.0,
        "current after update": _current_after_update(turns, current or {}),
    }


def _current_after_update(turns: list[Turn], current: Current) -> float:
    """The share of the user's gold updates whose new value is current right after the turn.

    This is what an agent reads (issue 12: "current value after an update"):
    the extractor's facts went through the real review (chains, negations,
    the gate), so a value stored under another predicate, left pending, or
    still behind the old value counts as a miss. An agent's claim waits for
    the user's confirmation by design and is not counted.
    """
    vocab = default_vocabulary()
    total = hit = 0
    for i, turn in enumerate(turns):
        for g in (g for g in turn.gold if g.update and not g.agent and not g.hedged):
            total += 1
            spec = vocab.spec(g.predicate)
            hit += any(
                vocab.canonical(p) == g.predicate
                and neg == g.negated
                and spec.same_value(g.object, o)
                for p, o, neg in current.get(i, [])
            )
    return hit / total if total else 0.0


def _f1(tp: int, predicted: int, gold: int) -> float:
    precision, recall = tp / max(predicted, 1), tp / max(gold, 1)
    return 2 * precision * recall / (precision + recall) if tp else 0.0


def compression(turns: list[Turn], fact_chars: int) -> float:
    """1 - chars of facts / chars of dialogue (design target ~0.87)."""
    dialogue = sum(len(t.event.text) for t in turns)
    return 1 - fact_chars / dialogue


def run_memstream(
    turns: list[Turn], parser: DialogueParser, extractor: FactExtractor
) -> tuple[Predicted, int, int, Current]:
    """Parse + extract a split in one batch, threading each session's context as the job does.

    Returns the predictions, the characters of all facts and of the user's own
    facts, and the current facts after each update turn (``review_updates``).
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
    chars = sum(len(f.text) for fs in facts for f in fs)
    return predicted, chars, sum(len(f.text) for f in user), review_updates(turns, facts)


def review_updates(turns: list[Turn], facts: list[list[ExtractedFact]]) -> Current:
    """Each user's facts through the review in turn order; the current facts after update turns."""
    reviewer = Reviewer()
    states: dict[tuple[str, str], UserMemoryState] = {}
    current: Current = {}
    for i, (turn, found) in enumerate(zip(turns, facts, strict=True)):
        event = turn.event
        state = states.setdefault((event.tenant_id, event.user_id), reviewer.new_state())
        lineage = SourceLineage(
            topic=DIALOGUE_EVENTS, partition=0, offset=i, event_id=event.event_id
        )
        reviewer.on_dialogue(state, event, lineage, found)
        if any(g.update for g in turn.gold):
            current[i] = [
                (h.predicate, h.object, h.polarity is Polarity.NEGATED)
                for h in state.current(event.ts)
            ]
    return current


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


def first_sight_path(name: str) -> Path:
    """Where a first-sight split lives: blind/, or train/ once it was retired to training."""
    blind = BLIND_DIR / f"{name}.txt"
    return blind if blind.exists() else TRAIN_DIR / f"{name}.txt"


def gold_compression(turns: list[Turn]) -> float:
    """What a perfect extractor would reach on a fact-dense split, for scale."""
    gold = [g for t in turns for g in t.gold]
    chars = sum(len(f"{g.predicate} {'NOT ' if g.negated else ''}{g.object}") for g in gold)
    return compression(turns, chars)


# What each split is to the rules (benchmarks/devset/README.md): "dev" was read
# to write them, "tuned" was scored once unseen and then read, "blind" never was.
ROLES = {"dev": "dev", "held": "tuned", "held2": "blind"}
ROLES |= {f"held{n}": "tuned" for n in range(3, 11)} | {"held11": "blind", "held12": "blind"}
ROLES |= {name: "first" for name in BLIND_SPLITS}  # issue 12: scored once, errors never read
ROLES |= {name: "trained" for name in BLIND_SPLITS if first_sight_path(name).parent == TRAIN_DIR}
COLUMNS = (
    ("turns", "turns", "{:>6.0f}"),
    ("gold", "gold triples", "{:>6.0f}"),
    ("pred", "predicted triples", "{:>6.0f}"),
    ("P", "triple precision", "{:>7.3f}"),
    ("R", "triple recall", "{:>7.3f}"),
    ("F1", "triple F1", "{:>7.3f}"),
    ("vF1", "value+polarity F1", "{:>7.3f}"),
    ("neg R", "negation recall", "{:>7.3f}"),
    ("polar", "polarity accuracy", "{:>7.3f}"),
    ("hedge", "hedge handling", "{:>7.3f}"),
    ("h.com", "hedged committed (must be 0)", "{:>7.0f}"),
    ("held", "sure facts held", "{:>7.3f}"),
    ("upd R", "update recall", "{:>7.3f}"),
    ("cur U", "current after update", "{:>7.3f}"),
    ("compr", "compression", "{:>7.3f}"),
    ("c.user", "compression, user facts only", "{:>7.3f}"),
    ("c.gold", "compression of the gold facts", "{:>7.3f}"),
)


@dataclass
class SplitResult:
    """One extractor's predictions on one split, with what its rows print."""

    turns: list[Turn]
    predicted: Predicted
    chars: int
    user_chars: int
    current: Current | None = None  # None: not reviewed (the baseline)

    def row(self) -> dict[str, float]:
        """The metrics of ``COLUMNS`` for this split."""
        return score(self.turns, self.predicted, self.current) | {
            "turns": len(self.turns),
            "compression": compression(self.turns, self.chars),
            "compression, user facts only": compression(self.turns, self.user_chars),
            "compression of the gold facts": gold_compression(self.turns),
        }


def pooled(results: list[SplitResult]) -> SplitResult:
    """Several splits scored as one (a micro-average over all their triples)."""
    turns = [t for r in results for t in r.turns]
    predicted: Predicted = {}
    current: Current = {}
    offset = 0
    for r in results:
        predicted |= {offset + i: facts for i, facts in r.predicted.items()}
        current |= {offset + i: facts for i, facts in (r.current or {}).items()}
        offset += len(r.turns)
    reviewed = any(r.current is not None for r in results)
    return SplitResult(
        turns,
        predicted,
        sum(r.chars for r in results),
        sum(r.user_chars for r in results),
        current if reviewed else None,
    )


def print_table(title: str, rows: dict[str, dict[str, float]]) -> None:
    """One row per split, one column per metric (targets in the header line)."""
    print(f"\n{title}")
    head = f"{'split':<14}{'role':<7}" + "".join(
        f"{short:>{6 if fmt.endswith('.0f}') and short != 'h.com' else 7}}"
        for short, _, fmt in COLUMNS
    )
    print(head)
    for name, row in rows.items():
        cells = "".join(fmt.format(row[metric]) for _, metric, fmt in COLUMNS)
        print(f"{name:<14}{ROLES.get(name, ''):<7}{cells}")
    targets = ", ".join(f"{metric} >= {value:.2f}" for metric, value in TARGETS.items())
    print(
        f"targets (issue 3, on the dev split): {targets}; compression ~0.87 (docs/architecture.md)"
    )


def main(
    show_errors: str | None = None,
    dev: Path = DEVSET,
    natural: int = 0,
    only: tuple[str, ...] = (),
    learned: Path | None = None,
) -> None:
    """Print every split's quality, ours and the baseline's; list one split's misses."""
    splits = {
        "dev": load_devset(dev),
        "held": load_devset(HELDOUT),
        "held2": load_devset(HELDOUT2),
    } | {f"held{n}": load_devset(path) for n, path in enumerate(HELDOUT_BLIND, 3)}
    splits |= {name: load_devset(first_sight_path(name)) for name in BLIND_SPLITS}
    if only:
        splits = {name: turns for name, turns in splits.items() if name in only}
    for name, turns in splits.items():
        print(describe(name, turns))
    parser = DialogueParser.load()
    extractor = FactExtractor.load(parser)
    ours = {
        name: SplitResult(turns, *run_memstream(turns, parser, extractor))
        for name, turns in splits.items()
    }
    base = {name: SplitResult(turns, *run_baseline(turns)) for name, turns in splits.items()}
    tables = [("memstream rules (spaCy + Flair NER + rules)", ours)]
    if learned is not None:
        with_model = FactExtractor.load(parser, learned_path=learned)
        hybrid = {
            name: SplitResult(turns, *run_memstream(turns, parser, with_model))
            for name, turns in splits.items()
        }
        tagger = " + ".join(m.name for m in model_files(learned))
        title = f"memstream hybrid ({tagger} tagger first + the rules' closed-form values)"
        tables.append((title, hybrid))
        ours = hybrid  # --errors lists the misses of the chain the pipeline runs
    tables.append(("baseline (keywords and regexes)", base))
    for title, results in tables:
        rows = {name: r.row() for name, r in results.items()}
        for role in ("tuned", "blind", "first", "trained"):
            members = [r for name, r in results.items() if ROLES[name] == role]
            if members:
                rows[f"all {role}"] = pooled(members).row()
        print_table(title, rows)
    if natural:
        print_natural(natural, parser, extractor)
    if show_errors is not None:
        result = ours[show_errors]
        for i, turn in enumerate(result.turns):
            got = {(p, o, neg) for p, o, neg, _, _ in result.predicted.get(i, [])}
            want = {(g.predicate, g.object, g.negated) for g in turn.gold}
            if got != want:
                print(f"{turn.event.event_id} {turn.event.role.value} {turn.event.text!r}")
                print(f"   missed {sorted(want - got)}\n   extra  {sorted(got - want)}")


def print_natural(questions: int, parser: DialogueParser, extractor: FactExtractor) -> None:
    """Compression on natural dialogue: LongMemEval haystacks (no gold triples there).

    The dev splits are dense by design (issue 3 asks for 60 negations, 40
    corrections and 40 hedges in 300 turns), so even their gold facts compress
    only ~0.4-0.7; LongMemEval's chat sessions show what the same extractor keeps
    of ordinary conversation. Without gold, a high ratio there can also be
    facts missed: read it beside the splits' recall.
    """
    from longmemeval_data import DEFAULT_DATA, events, load_questions  # benchmarks/ sibling

    if not DEFAULT_DATA.is_file():
        print(f"\nnatural dialogue: {DEFAULT_DATA} not found, skipped")
        return
    sample = random.Random(NATURAL_SEED).sample(load_questions(DEFAULT_DATA), questions)
    turns = [Turn(e) for q in sample for e in events(q, "lme")]
    _, chars, user_chars, _ = run_memstream(turns, parser, extractor)
    _, base_chars, base_user_chars = run_baseline(turns)
    users = [t for t in turns if t.event.role is Role.USER]
    print(
        f"\nnatural dialogue: {questions} LongMemEval haystacks, {len(turns)} turns "
        f"({sum(len(t.event.text) for t in turns):,} characters)"
    )
    print(f"{'':<24}{'all turns':>10}{'user turns':>12}")
    for name, all_chars, own in (
        ("memstream", chars, user_chars),
        ("baseline", base_chars, base_user_chars),
    ):
        print(f"{name:<24}{compression(turns, all_chars):>10.3f}{compression(users, own):>12.3f}")


if __name__ == "__main__":
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument(
        "--errors",
        metavar="SPLIT",
        choices=sorted(ROLES),
        help="list one split's misses (the hybrid's with --learned, else the rules')",
    )
    arguments.add_argument("--dev", type=Path, default=DEVSET, help="dev file to score")
    arguments.add_argument(
        "--natural",
        type=int,
        default=20,
        metavar="N",
        help="compression on N LongMemEval haystacks (0: skip)",
    )
    arguments.add_argument(
        "--only", nargs="+", default=(), metavar="SPLIT", help="score only these splits"
    )
    arguments.add_argument(
        "--learned",
        type=Path,
        nargs="?",
        const=LEARNED_MODEL,
        default=None,
        metavar="MODEL",
        help="also score the learned extractor (default model: the packaged one)",
    )
    options = arguments.parse_args()
    main(options.errors, options.dev, options.natural, tuple(options.only), options.learned)
