"""The hostile input corpus shared by the HTTP and MCP isolation suites.

One list of strings that would widen a match, escape a key space or break a
parser if any reached a store or a template unparameterised, plus oversized
and wrongly typed values. ``test_tenant_isolation`` sends them over HTTP and
``test_mcp_hostile`` through every MCP tool argument, so both surfaces are held
to the same inputs.
"""

from __future__ import annotations

from typing import Any

SHARED = "shared"
B_ONLY = "b-only"
# Well-formed, so it passes the id pattern and reaches the pending lookup.
GUESSED_PENDING = f"f_{'0' * 24}"

CYPHER = [
    "' OR 1=1 //",
    '"}) MATCH (n) DETACH DELETE n //',
    "x` RETURN n UNION MATCH (n) RETURN n //",
    "$tenant_id",
    "user\nMATCH (n) RETURN n",
]
REDIS_PATTERNS = ["*", "?", "[a-z]*", f"{SHARED}*", f"{SHARED}:*", "ms:*", "..", ".", ":"]
# Redis's inline protocol splits on CR LF: a value that smuggles a command.
REDIS_COMMANDS = ["x\r\nFLUSHALL\r\n", "x\r\nKEYS *\r\n"]
SQL = ["'; DROP TABLE users; --", "1' OR '1'='1", '" OR ""="', "1; SELECT * FROM memories"]
PATH_TRAVERSAL = ["%2A", "../b-only", "../../etc/passwd", "..\\..\\b-only", "%2e%2e%2f", "/"]
TEMPLATE = ["{{7*7}}", "${jndi:ldap://x/a}", "{0.__class__}", "%s%s%s%n", "#{7*7}", "<%= 7*7 %>"]
ODD_CHARACTERS = ["\x00", "🙂" * 10, "\u202e", "\ufeff", "a\u0000b", " ", "\t\n"]
INJECTIONS = (
    CYPHER + REDIS_PATTERNS + REDIS_COMMANDS + SQL + PATH_TRAVERSAL + TEMPLATE + ODD_CHARACTERS
)
# Identifier-valid user ids that look like traversal or patterns: reach a store.
ODD_VALID_USERS = ["..", ".", "-", "@", "_", "..shared", f"{SHARED}.."]

# Far past every bound the API sets (ids 64, queries 2,000, statements 4,096 characters).
HUGE_STRING = "q" * 100_000
HUGE_LIST = ["x"] * 100_000
# Deep enough to pass the MCP SDK's client serialiser (a limit near 250) but
# past the server's JSON parser limit (about 200): the deepest an SDK client can send.
DEEP_OBJECT_DEPTH = 240


def deep_object(depth: int = DEEP_OBJECT_DEPTH) -> dict[str, Any]:
    """``{"a": {"a": ... "leaf"}}`` nested ``depth`` times."""
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


def oversized() -> list[Any]:
    """Values whose size alone must be refused."""
    return [HUGE_STRING, HUGE_LIST, deep_object(), {f"k{i}": i for i in range(20_000)}]


# Every JSON type where another is expected, and numbers at and past the edges.
WRONG_TYPES: list[Any] = [
    None,
    True,
    0,
    -1,
    2**63,
    -(2**63) - 1,
    1e308,
    -0.0,
    "",
    "10",
    [],
    {},
    [SHARED],
    {"user_id": SHARED},
]
