"""Ids are pure functions of their inputs: replays produce the same ids."""

from __future__ import annotations

import hashlib

from schemas._base import partition_key
from schemas.ids import chain_id, fact_id, op_id


def test_chain_id_is_deterministic_and_ignores_case_of_subject_and_predicate() -> None:
    first = chain_id("t1", "u1", "installation_time", "NOT_IN")
    assert first == chain_id("t1", "u1", "Installation_Time", "not_in")
    assert first.startswith("c_")
    assert len(first) == 2 + 24  # blake2b, 12 bytes as hex


def test_chain_id_separates_tenants_users_and_fields() -> None:
    ids = {
        chain_id("t1", "u1", "phone", "is"),
        chain_id("t2", "u1", "phone", "is"),
        chain_id("t1", "u2", "phone", "is"),
        chain_id("t1", "u1", "address", "is"),
        # Same characters, different split: the separator keeps them apart.
        chain_id("t1", "u1", "phon", "eis"),
    }
    assert len(ids) == 5


def test_fact_id_depends_on_event_object_and_polarity() -> None:
    chain = chain_id("t1", "u1", "installation_time", "in")
    base = fact_id(chain, "evt-1", "weekend", "affirmed")
    assert base == fact_id(chain, "evt-1", "Weekend", "affirmed")
    assert base != fact_id(chain, "evt-1", "weekend", "negated")
    assert base != fact_id(chain, "evt-2", "weekend", "affirmed")
    assert base.startswith("f_")


def test_op_id_is_stable_per_event_index_and_kind() -> None:
    assert op_id("evt-1", 0, "upsert_fact") == op_id("evt-1", 0, "upsert_fact")
    assert op_id("evt-1", 0, "upsert_fact") != op_id("evt-1", 1, "upsert_fact")
    assert op_id("evt-1", 0, "upsert_fact") != op_id("evt-1", 0, "close_fact")
    # The scheme itself is pinned: changing it would orphan every stored op.
    expected = hashlib.blake2b(b"evt-1\x1f0\x1fupsert_fact", digest_size=12).hexdigest()
    assert op_id("evt-1", 0, "upsert_fact") == "o_" + expected


def test_partition_key_is_tenant_colon_user() -> None:
    assert partition_key("northwind-fiber", "u-alice") == "northwind-fiber:u-alice"
