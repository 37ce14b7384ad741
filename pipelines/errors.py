"""``StageError``: a failure inside a stage, named by the stage and not by a file path.

Each stage's work in ``IngestPipeline`` runs inside ``stage(name)``; whatever
it raises comes out as ``StageError(name)`` with the original exception as its
``cause``. The dead letter of a failed record (``pipelines.ingest.dead_letter``)
takes its ``stage`` from here, so moving or renaming a module never changes
what is written to ``memory.dlq``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

# The stage of a failure outside every stage (a state lookup, a bug in the
# composition itself).
OUTSIDE_STAGES = "ingest"


class StageError(Exception):
    """``stage`` failed on a record (or a batch) with ``cause``."""

    def __init__(self, stage: str, cause: BaseException) -> None:
        """Name the stage and keep the exception it raised."""
        super().__init__(f"{stage} failed: {type(cause).__name__}: {cause}")
        self.stage = stage
        self.cause = cause

    @classmethod
    def of(cls, exc: BaseException) -> StageError:
        """``exc`` itself when it is a StageError, else ``exc`` outside every stage."""
        return exc if isinstance(exc, StageError) else cls(OUTSIDE_STAGES, exc)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Run a stage's work: any exception leaves as ``StageError(name)`` (an inner one as is)."""
    try:
        yield
    except StageError:
        raise
    except Exception as exc:
        raise StageError(name, exc) from exc
