"""What the Flink tests share: the single-process reference and the exact comparison of ops.

The reference is ``IngestPipeline`` run in the test process over the records a
job consumed, one batch per phase; a job's ``memory.ops`` must hold exactly
its operations, each once, equal field for field (vectors up to FLOAT_NOISE).
Used by test_ingest_flink.py (mini-cluster) and test_flink_cluster.py
(standalone session cluster).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from ingest_helpers import Outputs, parse_op

from connectors.kafka_io import Record
from jobs.ingest.stages import run_batch
from pipelines.ingest import IngestPipeline, SourceRecord
from pipelines.review import UserMemoryState
from schemas.ops import MemoryOperation

# MiniLM vectors differ by up to ~2e-7 between batch compositions (measured on
# the sample); 1e-5 is far below any similarity threshold of the review (0.85).
FLOAT_NOISE = 1e-5


def reference_ops(
    pipeline: IngestPipeline, inputs: dict[str, list[Record]], phases: Sequence[str]
) -> dict[str, MemoryOperation]:
    """The pure pipeline's ops over ``inputs`` by id, one batch per phase."""
    states: dict[str, UserMemoryState] = {}
    ops: dict[str, MemoryOperation] = {}
    for topic in phases:
        records = sorted(inputs[topic], key=lambda r: (r.partition, r.offset))
        source = [
            SourceRecord(topic, r.partition, r.offset, r.key.encode() if r.key else None, r.value)
            for r in records
        ]
        batch = run_batch(pipeline, source, states.get)
        states |= batch.states
        ops |= {op.op_id: op for r in batch.results for op in r.ops}
    return ops


def written_ops(outputs: Outputs) -> dict[str, MemoryOperation]:
    """Every op on memory.ops by id; fails on an op written twice."""
    ops = [parse_op(r) for r in outputs.ops]
    counts = Counter(op.op_id for op in ops)
    assert not [op_id for op_id, n in counts.items() if n > 1], "an op was written twice"
    return {op.op_id: op for op in ops}


def _same(a: object, b: object, path: str) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            _same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert math.isclose(a, b, rel_tol=0.0, abs_tol=FLOAT_NOISE), f"{path}: {a} != {b}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def _describe(op: MemoryOperation) -> str:
    return f"{op.op_type.value} of {op.lineage.event_id} ({op.lineage.trace_id})"


def assert_same_ops(
    actual: dict[str, MemoryOperation], expected: dict[str, MemoryOperation]
) -> None:
    """The same op ids, and each op the same in every field (floats up to FLOAT_NOISE)."""
    assert expected, "the input must yield operations"
    missing = [_describe(expected[i]) for i in sorted(expected.keys() - actual.keys())]
    extra = [_describe(actual[i]) for i in sorted(actual.keys() - expected.keys())]
    assert not missing and not extra, f"missing {missing}, extra {extra}"
    for op_id, op in expected.items():
        _same(actual[op_id].model_dump(mode="json"), op.model_dump(mode="json"), op_id)
