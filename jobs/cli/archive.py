"""``memstream archive``: episodic items nobody retrieved for 30 days move to the archive.

docs/architecture.md, Tiers: "items not retrieved for 30 days are archived, not
lost". Each tenant's Chroma collections (fact versions and turns) have an
archive beside them (``…-archive``);
:meth:`connectors.chroma_memory.ChromaMemory.archive_stale` copies the items
whose ``last_retrieved_at`` is older than the cut-off there and then removes
them from the live collection. Archived items stay readable
(``ChromaMemory.get(..., archived=True)``, version chains, erasure); recall
no longer ranks them. Being served by recall is what keeps an item live
(``MemoryService`` marks what it returned, at most once a day per item).

Run it once a day (cron, a systemd timer); running it twice in a row moves
nothing the second time. ``--dry-run`` only counts.
"""

from __future__ import annotations

from typing import Annotated

import typer

# connectors.chroma_memory.ARCHIVE_AFTER, in days (not imported: chromadb takes
# a second to import, which `memstream archive --help` does not need).
DEFAULT_DAYS = 30


def archive(
    tenant: Annotated[
        str | None,
        typer.Option(
            "--tenant", help="Only this tenant; default: every tenant with episodic memory."
        ),
    ] = None,
    older_than_days: Annotated[
        int,
        typer.Option(
            "--older-than-days",
            min=0,
            help="Archive items not retrieved for more than this many days.",
        ),
    ] = DEFAULT_DAYS,
    namespace: Annotated[
        str | None,
        typer.Option(
            "--namespace", help="A shadow namespace (memstream replay); default: live memory."
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would be archived; move nothing.")
    ] = False,
) -> None:
    """Move episodic items not retrieved for a number of days to each tenant's archive.

    Prints, per tenant, how many items were archived (with --dry-run: would
    be), then the total. Archived items are not lost: they stay in the
    tenant's archive collection, readable and erasable like live ones.
    Chroma is the one the settings name (embedded, or MEMSTREAM_CHROMA__MODE=server).
    """
    from datetime import timedelta

    from jobs.stores import open_stores
    from memstream.settings import get_settings

    max_idle = timedelta(days=older_than_days)
    verb = "would archive" if dry_run else "archived"
    total = 0
    with open_stores(get_settings(), namespace) as stores:
        memory = stores.episodic
        tenants = [tenant] if tenant else memory.tenants()
        for tenant_id in tenants:
            if dry_run:
                moved = memory.count_stale(tenant_id, max_idle=max_idle)
            else:
                moved = memory.archive_stale(tenant_id, max_idle=max_idle)
            total += moved
            typer.echo(f"{tenant_id}: {verb} {moved} {_items(moved)}")
    where = f"namespace {namespace}" if namespace else "live memory"
    typer.echo(
        f"{verb} {total} {_items(total)} not retrieved for {older_than_days} days "
        f"({len(tenants)} {'tenant' if len(tenants) == 1 else 'tenants'}, {where})"
        + ("; nothing moved" if dry_run else "")
    )


def _items(count: int) -> str:
    return "item" if count == 1 else "items"
