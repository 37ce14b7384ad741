"""Episodes: which turns are kept whole in episodic memory, and with what key.

Every turn that carries content becomes an episode, user and agent turns
alike (an agent turn is recallable context, never a user fact). Only turns
that are provably empty are skipped: made only of greetings, thanks and
acknowledgements, and not answering a question or an offer ("ok" after
"Shall I book it?" is a confirmation and is kept). A short answer is stored
together with the turn it answers, so the question's wording finds it.

Pure: ``episode_ops`` runs after the review of a turn, over the user's keyed
state (which keeps the session's previous turn) and the review's operations
(the facts the turn stated, the versions it closed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pipelines.recall_index import terms
from pipelines.review.state import UserMemoryState
from pipelines.route import Decision, OutdateEpisode, WriteEpisode, route
from schemas.episodes import Episode
from schemas.events import DialogueEvent, Role, UserAction
from schemas.ids import episode_id
from schemas.lineage import SourceLineage
from schemas.ops import MemoryOperation, OpType

# Words that carry nothing to remember on their own. A turn made only of these
# is empty unless it answers something ("ok" to an offer confirms it).
CONTENT_FREE = frozenset(
    [
        "hi",
        "hello",
        "hey",
        "hiya",
        "yo",
        "morning",
        "afternoon",
        "evening",
        "good",
        "thanks",
        "thank",
        "you",
        "ta",
        "cheers",
        "ok",
        "okay",
        "k",
        "kk",
        "alright",
        "right",
        "cool",
        "great",
        "nice",
        "lovely",
        "awesome",
        "brilliant",
        "perfect",
        "bye",
        "goodbye",
        "cya",
        "see",
        "later",
        "soon",
        "take",
        "care",
        "have",
        "a",
        "day",
        "night",
        "great",
        "wonderful",
        "lol",
        "haha",
        "hahaha",
        "hehe",
        "hmm",
        "um",
        "uh",
        "oh",
        "ah",
        "wow",
        "np",
        "no",
        "problem",
        "welcome",
        "you're",
        "youre",
        "much",
        "so",
        "very",
        "again",
        "all",
        "the",
        "for",
        "your",
        "help",
        "bit",
        "in",
        "touch",
    ]
)
# A short answer means little without what it answers ("07700 900123", "Friday?",
# "yes, book it"): up to this many words it is stored with the previous turn.
# Eight words cover "yes please, Friday after 3 works for me" and leave out
# self-contained sentences, which are found by their own words.
SHORT_ANSWER_WORDS = 8
# The previous turn quoted as context is cut at this many characters: the part
# of a long agent turn that asked the question is usually its end.
MAX_CONTEXT_CHARS = 400
# A short question is answered by the other speaker's next turn: the question's
# words name the topic ("Kitchen done?"), the answer holds the value ("done July
# 3, final bill came to $35,200"), so recall ranks the answer where the question
# ranks (pipelines/recall_index.py). Twelve words cover a friend's or an agent's
# follow-up question; a long question carries its own content.
SHORT_QUESTION_WORDS = 12
# A search is said in no session's turn order: its episode takes a session of
# its own beside the dialogue's ("search:<session>") and turn index 0, so it
# never stands in a dialogue turn's place when answers are linked.
SEARCH_SESSION_PREFIX = "search:"
_WORD = re.compile(r"[0-9A-Za-z]+(?:'[A-Za-z]+)?")
_QUESTION_END = re.compile(r"\?[\W_]*$")
_ASKS = re.compile(
    r"\?\s*$|\b(?:would|could|shall|should|can|do|does|did|is|are|will|what|when|which"
    r"|where|who|how|let me know|tell me|confirm)\b",
    re.IGNORECASE,
)


def is_empty(text: str, previous: str | None) -> bool:
    """Whether a turn provably carries nothing: only pleasantries, answering nothing."""
    words = [w.casefold() for w in _WORD.findall(text)]
    if any(w not in CONTENT_FREE for w in words):
        return False
    return previous is None or _ASKS.search(previous) is None


def context_for(text: str, previous: str | None) -> str | None:
    """The previous turn when ``text`` is a short answer to its question or offer, else None."""
    if not previous or len(_WORD.findall(text)) > SHORT_ANSWER_WORDS:
        return None
    if _ASKS.search(previous) is None:
        return None  # "Booked for the 29th." after a statement answers nothing
    return previous[-MAX_CONTEXT_CHARS:]


def is_short_question(text: str) -> bool:
    """Whether ``text`` ends in a question mark within SHORT_QUESTION_WORDS words."""
    words = len(_WORD.findall(text))
    return 0 < words <= SHORT_QUESTION_WORDS and _QUESTION_END.search(text) is not None


def answer_links(episodes: Iterable[Episode]) -> dict[str, str]:
    """Each short question's episode id -> the id of the episode that answers it.

    The answer is the session's next turn, by the other speaker. A question
    whose next turn was empty (skipped) or by the same speaker has none.
    """
    by_turn = {(e.session_id, e.turn_index): e for e in episodes}
    links = {}
    for (session, index), question in by_turn.items():
        answer = by_turn.get((session, index + 1))
        if answer is None or answer.role is question.role:
            continue
        if is_short_question(question.text):
            links[question.episode_id] = answer.episode_id
    return links


# The agent opens a session at turn 0, or at turn 1 after the customer's "hi".
OPENING_TURNS = 1
# An opening of at most OPENING_TERMS words of its own (``terms``): 660 of the
# 661 agent openings of the customer-service recall sets and all 512 of the
# friends' are shorter; 941 of LongMemEval's 948 assistant first turns, full
# answers to the user's request, are longer.
OPENING_TERMS = 30


def session_openings(episodes: Iterable[Episode]) -> set[str]:
    """The ids of the agent's short turns that open a session (its first, at most second, turn).

    "Hello, ClearView Aerials and Satellite, Gary speaking": a greeting that
    names the business and little else, said once a session, so a question
    naming the business found every session's opening before the turn that
    answers it.
    """
    first: dict[str, Episode] = {}
    for episode in episodes:
        if episode.role is not Role.AGENT:
            continue
        held = first.get(episode.session_id)
        if held is None or episode.turn_index < held.turn_index:
            first[episode.session_id] = episode
    return {
        e.episode_id
        for e in first.values()
        if e.turn_index <= OPENING_TURNS and len(terms(e.text)) <= OPENING_TERMS
    }


def build_episode(
    event: DialogueEvent,
    lineage: SourceLineage,
    *,
    previous: tuple[Role, str] | None,
    fact_ids: Sequence[str] = (),
    statements: Sequence[str] = (),
    intent: str | None = None,
    vector: Sequence[float] | None = None,
    speaker: str | None = None,
) -> Episode | None:
    """The episode of one turn, or None when the turn is provably empty.

    ``previous`` is the (role, text) of the session's turn before this one;
    ``vector`` is MiniLM of the turn's text (the encode stage's); ``speaker``
    the name its speaker goes by (pipelines/speakers.py).
    """
    text = " ".join(event.text.split())
    before = previous[1] if previous is not None else None
    if not text or is_empty(text, before):
        return None
    context = context_for(text, before)
    return Episode(
        episode_id=episode_id(event.tenant_id, event.user_id, event.event_id),
        tenant_id=event.tenant_id,
        user_id=event.user_id,
        session_id=event.session_id,
        turn_index=event.turn_index,
        role=event.role,
        text=text,
        context=context,
        context_role=previous[0] if context is not None and previous is not None else None,
        fact_ids=list(fact_ids),
        statements=list(dict.fromkeys(statements)),
        intent=intent,
        ts=event.ts,
        lineage=lineage,
        vector=list(vector) if vector is not None else None,
        speaker=speaker,
    )


def episode_ops(
    state: UserMemoryState,
    event: DialogueEvent,
    lineage: SourceLineage,
    reviewed: Sequence[MemoryOperation],
    *,
    intent: str | None = None,
    vector: Sequence[float] | None = None,
    speaker: str | None = None,
) -> list[MemoryOperation]:
    """The turn's episode and the earlier episodes its facts outdate, as operations.

    ``reviewed`` are the review's operations for this turn: the facts it wrote
    or held become the episode's key expansion; a version it closed outdates
    the episode of the turn that stated it. The state remembers this turn as
    the session's previous one.
    """
    said = [
        op.record
        for op in reviewed
        if op.op_type in (OpType.UPSERT_FACT, OpType.ADD_PENDING) and op.record is not None
    ]
    last = state.last_turns.get(event.session_id)
    episode = build_episode(
        event,
        lineage,
        previous=(Role(last[0]), last[1]) if last else None,
        fact_ids=[r.fact_id for r in said],
        statements=[r.statement() for r in said],
        intent=intent,
        vector=vector,
        speaker=speaker,
    )
    state.put_last_turn(event.session_id, event.role.value, " ".join(event.text.split()))
    decisions: list[Decision] = [WriteEpisode(episode)] if episode is not None else []
    closed = [op.record for op in reviewed if op.op_type is OpType.CLOSE_FACT and op.record]
    for record in closed:
        if record.lineage is not None and record.lineage.event_id != event.event_id:
            source = episode_id(event.tenant_id, event.user_id, record.lineage.event_id)
            by = episode.episode_id if episode is not None else None
            decisions.append(OutdateEpisode(source, by))
    at = reviewed[0].at if reviewed else event.ts
    return route(
        decisions,
        tenant_id=event.tenant_id,
        user_id=event.user_id,
        lineage=lineage,
        at=at,
        first_index=len(reviewed),
    )


def search_episode_ops(
    action: UserAction,
    lineage: SourceLineage,
    query: str,
    reviewed: Sequence[MemoryOperation],
    *,
    vector: Sequence[float] | None = None,
) -> list[MemoryOperation]:
    """A search kept whole in episodic memory: "searched: wireless earphones".

    ``query`` is the behaviour stage's reading of the search (its
    ``properties.query``, or the target id's last segment, cut to its cap);
    ``reviewed`` the action's operations so far (the index continues after them).
    """
    episode = Episode(
        episode_id=episode_id(action.tenant_id, action.user_id, action.event_id),
        tenant_id=action.tenant_id,
        user_id=action.user_id,
        session_id=SEARCH_SESSION_PREFIX + (action.session_id or "-"),
        turn_index=0,
        role=Role.USER,
        text=f"searched: {query}",
        intent="search",
        ts=action.ts,
        lineage=lineage,
        vector=list(vector) if vector is not None else None,
    )
    at = reviewed[0].at if reviewed else action.ts
    return route(
        [WriteEpisode(episode)],
        tenant_id=action.tenant_id,
        user_id=action.user_id,
        lineage=lineage,
        at=at,
        first_index=len(reviewed),
    )
