"""``memstream audit diff``: how a shadow namespace differs from live memory, user by user.

The comparison is pure (:func:`diff_user` over two
:class:`~connectors.namespace_dump.UserDump`); :func:`audit` reads the dumps
of every user the shadow namespace holds, from both namespaces, and compares
them. Only the shadow's users are compared: a replay of a range is about the
users in that range, and live memory holds everybody else too.

What counts as a difference, per user:

- a fact version (episodic: Chroma; semantic: Neo4j) present on one side only;
- a version on both sides whose fields differ (object, polarity, validity,
  expiry, confidence, state, lineage, ...): one row per field;
- a pending item, a resolution of a pending item, a status, or a working-memory
  turn present on one side only or with different content.

Fact ids are deterministic (schemas/ids.py), so the same event decided the same
way gives the same id on both sides.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from rich.table import Table

from connectors.namespace_dump import User, UserDump
from connectors.protocols import NamespaceReader

ONLY_LIVE = "only in live"
ONLY_SHADOW = "only in shadow"
# Characters of a value shown in a table cell (the --json output is never cut):
# a validity and source line fits ("<from> → <until>, from topic/partition/offset").
CELL_CHARS = 80


@dataclass(frozen=True)
class Difference:
    """One way a user's shadow memory differs from their live memory."""

    tenant_id: str
    user_id: str
    store: str  # episodic | semantic | pending | resolved | status | turn
    item: str  # the fact version, status name or turn it is about
    what: str  # ONLY_LIVE, ONLY_SHADOW or "<field> differs"
    live: Any = None
    shadow: Any = None


@dataclass(frozen=True)
class AuditResult:
    """The comparison of a shadow namespace with another one (live memory by default)."""

    shadow: str
    against: str
    users: list[User]
    differences: list[Difference]

    @property
    def equal(self) -> bool:
        """Whether the shadow's users have the same memory on both sides."""
        return not self.differences

    def to_json(self) -> str:
        """The result as a JSON document (``memstream audit diff --json``)."""
        return json.dumps(
            {
                "shadow": self.shadow,
                "against": self.against,
                "equal": self.equal,
                "users": [{"tenant_id": t, "user_id": u} for t, u in self.users],
                "differences": [asdict(d) for d in self.differences],
            },
            indent=2,
            sort_keys=True,
        )


def fact_label(version: Mapping[str, Any]) -> str:
    """``subject [NOT] predicate object vN``: a version as the report names it."""
    neg = "NOT " if version.get("polarity") == "negated" else ""
    return (
        f"{version.get('subject')} {neg}{version.get('predicate')} {version.get('object')}"
        f" v{version.get('version')}"
    )


def _keyed(
    user: User,
    store: str,
    live: Mapping[str, Any],
    shadow: Mapping[str, Any],
    label: Callable[[str, Any], str],
) -> list[Difference]:
    """Items by key: present on one side only, or (dicts) field by field, else as a whole."""
    found: list[Difference] = []
    for key in sorted(live.keys() | shadow.keys()):
        mine, theirs = live.get(key), shadow.get(key)
        item = label(key, mine if mine is not None else theirs)
        if theirs is None:
            found.append(Difference(*user, store, item, ONLY_LIVE, live=mine))
        elif mine is None:
            found.append(Difference(*user, store, item, ONLY_SHADOW, shadow=theirs))
        elif isinstance(mine, dict) and isinstance(theirs, dict):
            for name in sorted(mine.keys() | theirs.keys()):
                if mine.get(name) != theirs.get(name):
                    what = f"{name} differs"
                    found.append(
                        Difference(*user, store, item, what, mine.get(name), theirs.get(name))
                    )
        elif mine != theirs:
            found.append(Difference(*user, store, item, "value differs", mine, theirs))
    return found


def diff_user(live: UserDump, shadow: UserDump) -> list[Difference]:
    """Every difference between one user's live and shadow memory."""
    user = (shadow.tenant_id, shadow.user_id)

    def fact(_: str, version: Mapping[str, Any]) -> str:
        return fact_label(version)

    def named(key: str, _: Any) -> str:
        return key

    def episode(_: str, entry: Mapping[str, Any]) -> str:
        return f"session {entry.get('session_id')} turn #{entry.get('turn_index')}"

    def turns(dump: UserDump) -> dict[str, dict[str, Any]]:
        return {
            f"session {s} turn #{t['turn_index']}": t for s, ts in dump.turns.items() for t in ts
        }

    return [
        *_keyed(user, "episodic", live.episodic, shadow.episodic, fact),
        *_keyed(user, "semantic", live.semantic, shadow.semantic, fact),
        *_keyed(user, "pending", live.pending, shadow.pending, fact),
        *_keyed(user, "resolved", live.resolved, shadow.resolved, named),
        *_keyed(user, "status", live.statuses, shadow.statuses, named),
        *_keyed(user, "turn", turns(live), turns(shadow), named),
        *_keyed(user, "episode", live.episodes, shadow.episodes, episode),
    ]


def audit(
    shadow: NamespaceReader, live: NamespaceReader, shadow_name: str, against: str
) -> AuditResult:
    """Compare every user of the ``shadow`` namespace with the same user in ``live``.

    Both are read whole (``jobs.stores.Stores`` for the real stores,
    ``memstream.testing.InMemoryStores`` in unit tests).
    """
    users = shadow.users()
    differences = [
        d
        for tenant, uid in users
        for d in diff_user(live.dump(tenant, uid), shadow.dump(tenant, uid))
    ]
    return AuditResult(shadow_name, against, users, differences)


def _described(value: Mapping[str, Any]) -> str:
    """A whole version or turn as a cell: its validity and source, or its text."""
    if "valid_from" in value:
        # Chroma and Redis hits nest the lineage; Neo4j nodes keep it flat.
        lineage = value.get("lineage") or {
            k.removeprefix("lineage_"): v for k, v in value.items() if k.startswith("lineage_")
        }
        source = f"{lineage.get('topic')}/{lineage.get('partition')}/{lineage.get('offset')}"
        return f"{value['valid_from']} → {value.get('valid_until') or 'open'}, from {source}"
    return str(value.get("text", json.dumps(value, sort_keys=True, default=str)))


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Mapping):
        text = _described(value)
    else:
        text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


def table(result: AuditResult) -> Table:
    """The differences as a rich table, one row each, sorted by user and store."""
    against = result.against or "live"
    grid = Table(title=f"shadow {result.shadow!r} against {against!r}")
    # Who, where and what never wrap (a narrow terminal folds the values instead).
    for column in ("user", "store", "item", "difference"):
        grid.add_column(column, no_wrap=column != "item")
    for column in (against, result.shadow):
        grid.add_column(column, overflow="fold")
    for d in result.differences:
        grid.add_row(
            f"{d.tenant_id}/{d.user_id}", d.store, d.item, d.what, _cell(d.live), _cell(d.shadow)
        )
    return grid


def summary(result: AuditResult) -> str:
    """One line: how many users were compared and how many differences were found."""
    per_user: dict[User, int] = {}
    for d in result.differences:
        per_user[(d.tenant_id, d.user_id)] = per_user.get((d.tenant_id, d.user_id), 0) + 1
    if result.equal:
        return f"{len(result.users)} user(s) compared: no difference"
    return (
        f"{len(result.users)} user(s) compared: {len(result.differences)} difference(s) "
        f"for {len(per_user)} user(s)"
    )
