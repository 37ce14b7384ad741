"""One user's recall index: BM25 and vectors over all of the user's facts and episodes.

Recall ranks every item the user has, not a pool a vector store pre-selected:

    total = 0.6·vector + 0.3·keyword + 0.1·time          (docs/architecture.md, Tiers)

- ``vector``: cosine of the query's MiniLM vector and the item's (a fact's
  combined vector is ~0.8 × its text vector, ``scale`` undoes that), floored at
  0 and divided by the best cosine of this query;
- ``keyword``: Okapi BM25 (Lucene idf, k1 1.2, b 0.75) over every item's search
  text, divided by the best score of this query, mixed with exact hashed-field
  hits (a phone number, a code) as ``pipelines.recall`` does;
- ``time``: ``1 / (1 + days / 30)`` of the item's age at ``at``; a query with
  time words (``pipelines.time_focus``) scores 1 inside its window, falling
  off with the distance outside it, and "first"/"now" rank the time component by age.

Then: only what held at ``at`` is kept; an episode whose fact was superseded
is outdated: it ranks just below the turn holding the newer value when that
turn is about as relevant (history stays findable, the current value comes
first), and a later turn of another session about the same thing that carries
a new value counts as such an update when extraction linked nothing; the
answer to a short question ("Kitchen done?") takes the question's
place; a fact and its source episode never take two
slots (the fact is kept, the episode named as its source); pending items only
fill slots that committed items leave empty.

Pure and in-process: the caller fills it from the stores (the source of
truth) and keeps it coherent with their writes; a restart rebuilds it.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

import numpy as np
import numpy.typing as npt

from pipelines.asked_value import CALENDAR_ABBREVIATIONS, ValueKind, asked_kind, carries
from pipelines.time_focus import Order, TimeFocus
from pipelines.vocabulary.values import MONTHS, WEEKDAYS

# Okapi BM25's usual constants (Lucene's defaults).
BM25_K1 = 1.2
BM25_B = 0.75
# docs/architecture.md, Tiers: time = 1 / (1 + days / 30).
TIME_SCALE_DAYS = 30.0
# An outdated item ranks just this much below the item that superseded it.
BELOW = 1e-6
# A successor scoring at least this share of the outdated item answers the same
# question. Measured on the four recall sets: always moving the successor up
# (or pulling it into the ranking) cost any-hit@5 on the long friends' chats
# (0.411 -> 0.356 on one), whose turns say many things at once; at 0.8 every
# set stayed at or above raw-turn MiniLM. Measured again at stop 31 on twelve
# seen sets (docs/recall.md): 0.8 -> 0.5 kept any-hit@5 and @10 and raised
# latest-first@10 0.594 -> 0.604 (friends) and 0.563 -> 0.579 (customer
# service), NDCG@10 within 0.002; at 0 any-hit@5 fell 0.006-0.011.
SUCCESSOR_SHARE = 0.5
# A query asking for the current state ("where do I live now?", "these days")
# ranks the items within this share of its best score newest first, among its
# best LATEST_WINDOW: the update that answers it is often a short turn that
# matches the question's words less than the turn that introduced the topic.
# Measured on seven seen recall sets (docs/recall.md): at 0.6 latest-first@10
# +0.061 per set, any-hit@5 -0.007, NDCG@10 -0.011; at 0.8 it barely moved.
LATEST_SHARE = 0.6
LATEST_WINDOW = 10
# A later turn of another session that is about the same thing as a better-ranked
# earlier one (MiniLM cosine of the two at least SAME_TOPIC), scores at least
# UPDATE_SHARE of it and, like it, carries a value (a number, a day, a date) is
# taken as its update when extraction linked nothing: it moves just above the
# earlier turn. Knowledge updates in friends' chats are often terse ("done
# Tuesday, the 15th like they said") and match the question's words less than
# the turn that introduced the topic. Measured on eight seen recall sets
# (docs/recall.md): latest-first@10 0.487 -> 0.561, any-hit@5 0.766 -> 0.756,
# NDCG@10 0.543 -> 0.528; without the value condition NDCG fell 0.021.
SAME_TOPIC = 0.4
UPDATE_SHARE = 0.7
# Two such turns that both carry a value of the kind the query asks for
# (pipelines/asked_value.py: "when ...?" and a date each) are about the same
# thing at this lower cosine: the question names the topic. Measured on
# sixteen seen recall sets (docs/recall.md, stop 39): with no cosine floor
# latest-first@10 rose as much but any-hit@5 and NDCG@10 fell a little more.
KIND_TOPIC = 0.25
_CARRIES_VALUE = re.compile(
    r"\d|\b(?:" + "|".join((*MONTHS, *WEEKDAYS, *CALENDAR_ABBREVIATIONS)) + r")\b"
    r"|\b(?:today|tomorrow|tonight|yesterday|next|week|month|year|one|two|three|four|five"
    r"|six|seven|eight|nine|ten|twenty|hundred|thousand)\b",
    re.IGNORECASE,
)
# A turn of at most SHORT_TURN_TERMS words of its own, with no value, no fact
# and no question it answers ("obviously", "of course", "your people") is
# mostly its speaker's name once embedded as "Lero: obviously": a question
# naming her matched it before the turns where she said something. Its cosine
# counts SHORT_TURN_SCALE. Measured on twelve seen recall sets (docs/recall.md):
# friends' chats any-hit@5 0.744 -> 0.759 and NDCG@10 0.536 -> 0.547,
# latest-first 0.608 -> 0.594; customer service within 0.005.
SHORT_TURN_TERMS = 2
SHORT_TURN_SCALE = 0.7
# The agent's turn that opens a session (pipelines/episodes.py,
# ``session_openings``) counts OPENING_SCALE of its cosine: on two seen
# customer-service sets it took 106 of 830 top-5 slots and held 13 of 309
# evidence turns. Measured on 17 customer-service and 13 friends' recall sets
# (docs/recall.md, stop 48): customer service any-hit@5 0.740 -> 0.752,
# NDCG@10 0.526 -> 0.539; friends' chats any-hit@5 0.740 -> 0.745, NDCG@10
# 0.528 -> 0.531, latest-first@10 0.559 -> 0.549. At 0.7 and 0.3 it gained less.
OPENING_SCALE = 0.5
# Weight of an exact hashed-field hit inside ``keyword``: a named value (a phone
# number) counts as much as the best text match; neither alone reaches the full score.
EXACT_SHARE = 0.5

_TOKEN = re.compile(r"[0-9a-z]+(?:[-'][0-9a-z]+)*")
# English function words: they match everything and say nothing. A closed list
# (no scikit-learn at import) of determiners, pronouns, auxiliaries and
# prepositions; "not"/"no"/"never" are kept, a negation is content here.
STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "i'm",
        "i've",
        "i'd",
        "i'll",
        "you're",
        "you've",
        "it's",
        "that's",
        "what's",
        "let's",
        "there's",
        "he's",
        "she's",
        "we're",
        "they're",
        "im",
        "ive",
        "id",
        "ill",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "re",
        "ve",
        "also",
        "get",
        "got",
    ]
)


def stem(word: str) -> str:
    """A light English suffix stripper: plurals, -ing, -ed, -ly (shared by queries and items)."""
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("ly", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                return word
            base = word[: -len(suffix)] + keep
            if suffix in ("ing", "ed") and len(base) > 3 and base[-1] == base[-2]:
                base = base[:-1]  # "booked" → "book", "stopped" → "stop"
            return base
    return word


def terms(text: str) -> list[str]:
    """The BM25 vocabulary of a text: lower-cased, stop words out, lightly stemmed."""
    words = _TOKEN.findall(text.casefold().replace("\u2019", "'"))
    out = []
    for word in words:
        if word in STOP_WORDS:
            continue
        if "'" in word:  # "friend's" → "friend"
            word = word.split("'", 1)[0]
            if not word or word in STOP_WORDS:
                continue
        out.append(stem(word))
    return out


def says_little(text: str) -> bool:
    """Whether a turn has too few words of its own to rank by its vector at full weight."""
    return len(terms(text)) <= SHORT_TURN_TERMS and not _CARRIES_VALUE.search(text)


def in_first_person(query: str, own_name: frozenset[str]) -> str:
    """``query`` with the user's own name said as "I" / "my" (``own_name``: its terms).

    An agent asks of Kerry's memory "Who's in Kerry's party?", but she said
    "me and my husband Lee, our three kids": her name is in the turn she said
    hello in ("Hi, it's Kerry"), rarely in the turns that answer. As the rare
    word it won BM25, and MiniLM ranked the hello first too; asked as "Who's in
    my party?" both match what she said. A query that is only her name is kept.
    """
    if not own_name:
        return query
    words = list(_QUERY_WORD.finditer(query))
    out: list[str] = []
    end = 0
    i = 0
    while i < len(words):
        j = i
        while j < len(words) and _is_name_word(words[j].group(), own_name, title_ok=j == i):
            j += 1
        named = [w for w in words[i:j] if w.group().casefold().rstrip(".") not in _TITLES]
        if not named:
            i += 1
            continue
        last = words[j - 1].group()
        possessive = last.casefold().endswith(("'s", "\u2019s", "s'"))
        out.append(query[end : words[i].start()])
        out.append("my" if possessive else "I")
        end = words[j - 1].end()
        i = j
    out.append(query[end:])
    said = _AS_I.sub(lambda m: _AS_I_VERB[m.group(1).casefold()] + " I", "".join(out))
    return said if terms(said) else query


def _is_name_word(word: str, own_name: frozenset[str], *, title_ok: bool) -> bool:
    bare = word.casefold().rstrip(".")
    if title_ok and bare in _TITLES:
        return True
    if bare.removesuffix("'s").removesuffix("\u2019s") in _CALENDAR:
        return False  # "in May" is a month even for a user called May
    said = terms(word)
    return bool(said) and all(t in own_name for t in said)


_QUERY_WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)?'?\.?")
_TITLES = frozenset({"mr", "mrs", "ms", "miss", "mx", "dr"})
_CALENDAR = frozenset({*MONTHS, *WEEKDAYS})
# "What does Kerry want?" -> "What do I want?": MiniLM reads the agreement too.
_AS_I = re.compile(r"\b(does|has|is)\s+I\b", re.IGNORECASE)
_AS_I_VERB = {"does": "do", "has": "have", "is": "am"}


class ItemKind(StrEnum):
    """What an index row is."""

    FACT = "fact"
    EPISODE = "episode"


@dataclass(frozen=True)
class IndexItem:
    """What ranking needs of one fact version or episode."""

    item_id: str
    kind: ItemKind
    text: str  # the search text (a fact's statement and object; an episode's key)
    at: datetime  # valid_from of a fact, event time of an episode
    valid_until: datetime | None = None
    expires_at: datetime | None = None
    pending: bool = False
    outdated: bool = False
    outdated_by: frozenset[str] = frozenset()  # the items holding the newer value
    source_id: str | None = None  # a fact's source episode
    session_id: str | None = None
    answered_by: str | None = None  # a short question's answer (pipelines/episodes.py)
    exact_keys: frozenset[int] = frozenset()  # hashed exact fields (a fact's object)
    scale: float = 1.0  # multiplies the raw cosine (a fact's combined vector: 1 / 0.8)

    def holds_at(self, at: datetime, *, include_history: bool = False) -> bool:
        """Whether the item existed at ``at`` (and, without history, was still valid)."""
        if self.at > at:
            return False
        if include_history:
            return True
        if self.valid_until is not None and self.valid_until <= at:
            return False
        return self.expires_at is None or self.expires_at > at


@dataclass(frozen=True)
class Scored:
    """One ranked item with its score breakdown and, for a fact, its source episode."""

    item: IndexItem
    vector: float
    keyword: float
    time: float
    total: float
    source: IndexItem | None = None


@dataclass
class _Postings:
    rows: dict[int, int] = field(default_factory=dict)  # row -> term frequency
    arrays: tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]] | None = None


class UserIndex:
    """The recall index of one user (see the module docstring)."""

    def __init__(self, dim: int = 384) -> None:
        """An empty index for ``dim``-dimensional unit vectors."""
        self.dim = dim
        self._vectors = np.zeros((16, dim), dtype=np.float32)
        self._lengths = np.zeros(16, dtype=np.float32)
        self._alive = np.zeros(16, dtype=bool)
        # Per row, as epoch seconds (inf: open): valid_from / event time, valid_until, expires_at.
        self._at = np.zeros(16, dtype=np.float64)
        self._until = np.full(16, np.inf, dtype=np.float64)
        self._expires = np.full(16, np.inf, dtype=np.float64)
        self._scale = np.ones(16, dtype=np.float32)
        self._asks = np.zeros(16, dtype=bool)  # the row is a question with a known answer
        self._items: list[IndexItem | None] = []
        self._row_of: dict[str, int] = {}
        self._terms_of: list[list[str]] = []
        self._postings: dict[str, _Postings] = defaultdict(_Postings)
        self._exact_rows: dict[int, set[int]] = defaultdict(set)  # hashed exact field -> rows
        self._total_length = 0.0
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._row_of

    def get(self, item_id: str) -> IndexItem | None:
        """The item with ``item_id``, or None."""
        row = self._row_of.get(item_id)
        return None if row is None else self._items[row]

    def items(self) -> Iterable[IndexItem]:
        """Every live item, in insertion order."""
        return (item for item in self._items if item is not None)

    # -- writes ---------------------------------------------------------------
    def upsert(self, item: IndexItem, vector: Sequence[float] | npt.NDArray[np.float32]) -> None:
        """Add ``item``, or replace the item with its id (its text and vector too)."""
        if item.item_id in self._row_of:
            self.remove(item.item_id)
        row = len(self._items)
        if row == len(self._alive):
            self._grow()
        vec = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(vec))
        self._vectors[row] = vec / norm if norm > 0 else vec
        words = terms(item.text)
        self._lengths[row] = len(words)
        self._alive[row] = True
        self._items.append(item)
        self._set_times(row, item)
        self._terms_of.append(words)
        self._row_of[item.item_id] = row
        counts: dict[str, int] = defaultdict(int)
        for word in words:
            counts[word] += 1
        for word, tf in counts.items():
            postings = self._postings[word]
            postings.rows[row] = tf
            postings.arrays = None
        for key in item.exact_keys:
            self._exact_rows[key].add(row)
        self._total_length += len(words)
        self._count += 1

    def update(self, item: IndexItem) -> None:
        """Replace an item's metadata (validity, outdated, pending) keeping text and vector."""
        row = self._row_of.get(item.item_id)
        if row is not None:
            self._items[row] = item
            self._set_times(row, item)

    def _set_times(self, row: int, item: IndexItem) -> None:
        self._at[row] = item.at.timestamp()
        self._until[row] = item.valid_until.timestamp() if item.valid_until else np.inf
        self._expires[row] = item.expires_at.timestamp() if item.expires_at else np.inf
        self._scale[row] = item.scale
        self._asks[row] = item.answered_by is not None

    def _item(self, row: int) -> IndexItem:
        item = self._items[row]
        if item is None:  # only live rows are scored: a dead one here is a bug
            raise LookupError(f"row {row} of the recall index holds no item")
        return item

    def remove(self, item_id: str) -> None:
        """Drop the item with ``item_id`` (nothing if absent)."""
        row = self._row_of.pop(item_id, None)
        if row is None:
            return
        for word in set(self._terms_of[row]):
            postings = self._postings[word]
            postings.rows.pop(row, None)
            postings.arrays = None
            if not postings.rows:
                del self._postings[word]
        item = self._items[row]
        for key in item.exact_keys if item is not None else ():
            rows = self._exact_rows[key]
            rows.discard(row)
            if not rows:
                del self._exact_rows[key]
        self._total_length -= float(self._lengths[row])
        self._alive[row] = False
        self._asks[row] = False
        self._items[row] = None
        self._terms_of[row] = []
        self._count -= 1

    def _grow(self) -> None:
        size = len(self._alive) * 2
        self._vectors = np.resize(self._vectors, (size, self.dim))
        self._lengths = np.resize(self._lengths, size)
        alive = np.zeros(size, dtype=bool)
        alive[: len(self._alive)] = self._alive
        self._alive = alive
        old = len(self._at)
        self._at = np.resize(self._at, size)
        self._until = np.concatenate([self._until, np.full(size - old, np.inf)])
        self._expires = np.concatenate([self._expires, np.full(size - old, np.inf)])
        self._scale = np.concatenate([self._scale, np.ones(size - old, dtype=np.float32)])
        self._asks = np.concatenate([self._asks, np.zeros(size - old, dtype=bool)])

    # -- reads ----------------------------------------------------------------
    def bm25(self, query_terms: Sequence[str]) -> npt.NDArray[np.float32]:
        """Raw BM25 of every row for ``query_terms`` (dead rows score 0)."""
        rows = len(self._items)
        scores = np.zeros(rows, dtype=np.float32)
        if not self._count:
            return scores
        average = max(self._total_length / self._count, 1.0)
        norms = BM25_K1 * (1.0 - BM25_B + BM25_B * self._lengths[:rows] / average)
        for word in dict.fromkeys(query_terms):
            postings = self._postings.get(word)
            if postings is None:
                continue
            if postings.arrays is None:
                postings.arrays = (
                    np.fromiter(postings.rows.keys(), dtype=np.int64, count=len(postings.rows)),
                    np.fromiter(postings.rows.values(), dtype=np.float32, count=len(postings.rows)),
                )
            hit_rows, tf = postings.arrays
            n = len(hit_rows)
            idf = math.log(1.0 + (self._count - n + 0.5) / (n + 0.5))
            scores[hit_rows] += idf * tf * (BM25_K1 + 1.0) / (tf + norms[hit_rows])
        return scores

    def search(
        self,
        query: str,
        query_vector: Sequence[float] | npt.NDArray[np.float32],
        *,
        at: datetime,
        k: int = 10,
        weights: tuple[float, float, float] = (0.6, 0.3, 0.1),
        focus: TimeFocus | None = None,
        exact_keys: frozenset[int] = frozenset(),
        include_history: bool = False,
        kinds: frozenset[ItemKind] | None = None,
        session_id: str | None = None,
        keep: Callable[[IndexItem], bool] | None = None,
    ) -> list[Scored]:
        """The ``k`` best items for ``query`` at ``at``, best first (module docstring)."""
        rows = len(self._items)
        if rows == 0 or k < 1 or self._count == 0:
            return []
        w_vector, w_keyword, w_time = weights
        q = np.asarray(query_vector, dtype=np.float32)
        q_norm = float(np.linalg.norm(q))
        cosine = self._vectors[:rows] @ (q / q_norm if q_norm > 0 else q)
        raw_bm25 = self.bm25(terms(query))
        alive = self._alive[:rows]
        best = float(raw_bm25[alive].max()) if alive.any() else 0.0
        bm25 = raw_bm25 / best if best > 0 else raw_bm25
        exact = np.zeros(rows, dtype=np.float32)
        for key in exact_keys:
            exact[list(self._exact_rows.get(key, ()))] = 1.0
        exact[~alive] = 0.0
        # The share stays even when no item holds a value the query names: BM25
        # at full weight then won on LongMemEval's temporal questions but lost
        # on the blind dialogue sets (any-hit@5 -0.043 summed over five sets).
        keyword_of = (1.0 - EXACT_SHARE) * bm25 + EXACT_SHARE * exact
        # Rough first cut over every row with numpy; the exact rules run on a shortlist.
        rough = w_vector * np.clip(cosine, 0.0, 1.0) + w_keyword * keyword_of
        rough = np.where(alive, rough, -1.0)
        # A filter may leave few of the best rows: then every row is looked at.
        narrowed = keep is not None or session_id is not None or kinds is not None
        shortlist = _top_rows(rough, rows if narrowed else max(8 * k, 200))
        # Like BM25, the cosine is taken relative to the best of this query: MiniLM
        # cosines of related text sit in 0.2-0.6, so raw they leave the time
        # component (0.1 x up to 1) to decide between turns weeks apart.
        picked = np.asarray(shortlist, dtype=np.int64)
        picked = self._with_answers(picked[alive[picked]])
        scaled = cosine[picked].astype(np.float64) * self._scale[picked]
        best_vector = float(scaled.max()) if len(scaled) else 0.0
        best_vector = best_vector if best_vector > 0 else 1.0
        # The validity and score arithmetic runs on arrays: a Python pass per
        # shortlisted row cost more than the matrix product at 10k items.
        moment = at.timestamp()
        holds = self._at[picked] <= moment
        if not include_history:
            holds &= (self._until[picked] > moment) & (self._expires[picked] > moment)
        picked, scaled = picked[holds], scaled[holds]
        vectors = np.clip(scaled / best_vector, 0.0, 1.0)
        keywords = keyword_of[picked]
        if focus is not None and focus.has_window:
            times = np.fromiter(
                (focus.closeness(self._item(r).at) for r in picked), np.float64, len(picked)
            )
        else:
            days = np.maximum((moment - self._at[picked]) / 86_400.0, 0.0)
            times = 1.0 / (1.0 + days / TIME_SCALE_DAYS)
        totals = np.clip(w_vector * vectors + w_keyword * keywords + w_time * times, 0.0, 1.0)
        scored = []
        for row, vector, keyword, time, total in zip(
            picked.tolist(),
            vectors.tolist(),
            keywords.tolist(),
            times.tolist(),
            totals.tolist(),
            strict=True,
        ):
            item = self._item(row)
            if kinds is not None and item.kind not in kinds:
                continue
            if session_id is not None and item.session_id != session_id:
                continue
            if keep is not None and not keep(item):
                continue
            scored.append(Scored(item, vector, keyword, time, total))
        scored = self._answers_first(scored)
        scored = self._below_successors(scored)
        if focus is None or focus.order is not Order.EARLIEST:
            scored = self._updates_first(scored, asked_kind(query))
        if focus is not None and focus.order is not Order.ANY:
            scored = _reorder_time(scored, focus.order, w_time)
            if focus.order is Order.LATEST and LATEST_SHARE > 0:
                scored = _newest_among_best(scored, LATEST_SHARE)
        scored.sort(key=lambda s: (-s.total, s.item.item_id))
        return self._select(scored, k)

    def _with_answers(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """``rows`` and the answer of each short question among them."""
        asking = rows[self._asks[rows]]
        answers = [self._row_of.get(self._item(int(r)).answered_by or "") for r in asking]
        extra = [r for r in answers if r is not None and self._alive[r]]
        if not extra:
            return rows
        return np.unique(np.concatenate([rows, np.asarray(extra, dtype=np.int64)]))

    def _answers_first(self, scored: list[Scored]) -> list[Scored]:
        """A short question and its answer swap places when the question ranks higher.

        A short question matches a later query by its words, but only the turn
        that answers it holds the value (pipelines/episodes.py, answer_links).
        Measured on the tuned recall sets, keeping the question just below its
        answer instead cost any-hit@5 on the friends' chats (0.905 -> 0.841 on
        one): the pair took two of the first slots.
        """
        by_id = {entry.item.item_id: entry for entry in scored}
        asking = sorted((e for e in scored if e.item.answered_by), key=lambda e: -e.total)
        for entry in asking:
            question = by_id[entry.item.item_id]
            answer = by_id.get(entry.item.answered_by or "")
            if answer is None or answer.total >= question.total:
                continue
            by_id[answer.item.item_id] = _with_total(answer, question.total)
            by_id[question.item.item_id] = _with_total(question, answer.total)
        return list(by_id.values())

    def _below_successors(self, scored: list[Scored]) -> list[Scored]:
        """Each outdated item just below the item holding its newer value, when both matter.

        Only a successor that scores at least SUCCESSOR_SHARE of the outdated
        item is taken to answer the same question: an outdated turn that also
        says other things stays where it ranks for a query about those.
        """
        by_id = {entry.item.item_id: entry for entry in scored}
        outdated = sorted((e for e in scored if e.item.outdated_by), key=lambda e: -e.total)
        for entry in outdated:
            current = by_id[entry.item.item_id]
            successors = [by_id[n] for n in current.item.outdated_by if n in by_id]
            if not successors:
                continue
            best = max(successors, key=lambda s: s.total)
            if best.total < SUCCESSOR_SHARE * current.total or best.total > current.total:
                continue
            by_id[best.item.item_id] = _with_total(best, current.total)
            by_id[current.item.item_id] = _with_total(current, current.total - BELOW)
        return list(by_id.values())

    def _updates_first(self, scored: list[Scored], kind: ValueKind | None) -> list[Scored]:
        """Each of the best items just below its newest implicit update (see SAME_TOPIC).

        Two items that both carry a value of the kind the query asks for
        (``pipelines.asked_value``) are about the same thing from the lower
        cosine KIND_TOPIC: the question itself names the topic.
        """
        window = heapq.nsmallest(LATEST_WINDOW, scored, key=lambda s: (-s.total, s.item.item_id))
        valued = [s for s in window if _CARRIES_VALUE.search(s.item.text)]
        if len(valued) < 2:
            return scored
        rows = [self._row_of[s.item.item_id] for s in valued]
        cosines = self._vectors[rows] @ self._vectors[rows].T
        same_topic = cosines >= SAME_TOPIC
        if kind is not None:
            answers = np.fromiter((carries(kind, s.item.text) for s in valued), bool, len(valued))
            same_topic |= np.outer(answers, answers) & (cosines >= KIND_TOPIC)
        now = {entry.item.item_id: entry for entry in valued}
        moved: set[str] = set()
        for i, earlier in enumerate(valued):
            old = now[earlier.item.item_id]
            updates = [
                now[later.item.item_id]
                for j, later in enumerate(valued)
                if same_topic[i, j]
                and later.item.item_id not in moved
                and later.item.at > old.item.at
                and later.item.session_id != old.item.session_id
                and UPDATE_SHARE * old.total <= now[later.item.item_id].total < old.total
            ]
            if not updates:
                continue
            newest = max(updates, key=lambda s: (s.item.at, s.item.item_id))
            moved.add(newest.item.item_id)
            now[newest.item.item_id] = _with_total(newest, old.total)
            now[old.item.item_id] = _with_total(old, old.total - BELOW)
        if not moved:
            return scored
        return [now.get(entry.item.item_id, entry) for entry in scored]

    def _select(self, scored: list[Scored], k: int) -> list[Scored]:
        """Committed first, one slot per turn; pending fill what is left.

        A turn's episode and the facts extracted from it say the same thing:
        the first of them to rank takes the turn's one slot, shown as the
        turn's best-ranked fact with the episode as its source.
        """
        committed = [s for s in scored if not s.item.pending]
        best_fact: dict[str, Scored] = {}
        for entry in committed:
            if entry.item.kind is ItemKind.FACT and entry.item.source_id:
                best_fact.setdefault(entry.item.source_id, entry)
        chosen: list[Scored] = []
        used: set[str] = set()  # the turns (source episodes) already holding a slot
        for entry in committed:
            if len(chosen) == k:
                break
            item = entry.item
            turn = item.source_id if item.kind is ItemKind.FACT and item.source_id else item.item_id
            if turn in used:
                continue
            used.add(turn)
            if item.kind is ItemKind.EPISODE and item.item_id in best_fact:
                fact = best_fact[item.item_id]
                entry = Scored(fact.item, fact.vector, fact.keyword, fact.time, entry.total, item)
            elif item.kind is ItemKind.FACT and item.source_id:
                source = self.get(item.source_id)
                entry = Scored(item, entry.vector, entry.keyword, entry.time, entry.total, source)
            chosen.append(entry)
        for entry in scored:
            if len(chosen) >= k:
                break
            if entry.item.pending:
                chosen.append(entry)
        return chosen


def _with_total(entry: Scored, total: float) -> Scored:
    return Scored(entry.item, entry.vector, entry.keyword, entry.time, total, entry.source)


def _reorder_time(scored: list[Scored], order: Order, w_time: float) -> list[Scored]:
    """For "first" or "now": the time component becomes the rank by age among the matches."""
    if len(scored) < 2:
        return scored
    by_age = sorted(scored, key=lambda s: s.item.at, reverse=order is Order.LATEST)
    last = len(by_age) - 1
    place = {id(s): 1.0 - i / last for i, s in enumerate(by_age)}
    out = []
    for s in scored:
        time = place[id(s)]
        total = min(max(s.total + w_time * (time - s.time), 0.0), 1.0)
        out.append(Scored(s.item, s.vector, s.keyword, time, total, s.source))
    return out


def _newest_among_best(scored: list[Scored], share: float) -> list[Scored]:
    """The items close to the best score, their scores handed out newest first."""
    if len(scored) < 2:
        return scored
    best = max(s.total for s in scored)
    close = sorted((s for s in scored if s.total >= share * best), key=lambda s: -s.total)
    close = close[:LATEST_WINDOW]
    if len(close) < 2:
        return scored
    chosen = {id(s) for s in close}
    newest = sorted(close, key=lambda s: s.item.at, reverse=True)
    rest = [s for s in scored if id(s) not in chosen]
    return rest + [_with_total(s, c.total) for s, c in zip(newest, close, strict=True)]


def _top_rows(scores: npt.NDArray[np.float64], n: int) -> list[int]:
    if len(scores) <= n:
        return [int(i) for i in np.argsort(-scores)]
    part = np.argpartition(-scores, n)[:n]
    return [int(i) for i in part[np.argsort(-scores[part])]]
