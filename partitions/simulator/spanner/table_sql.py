"""Parse the poll queries of commit-timestamp tables, strictly, as one grammar per dialect.

The accepted shape (GoogleSQL names quoted with backticks and parameters ``@name``;
PostgreSQL names with double quotes and parameters ``$n``; unquoted names work too)::

    SELECT * FROM t [@{FORCE_INDEX=i} | /*@ FORCE_INDEX = i */]
    WHERE [s IS NOT NULL AND s = p AND] <after> [AND ts <= p]
    ORDER BY ts, k1 [NULLS FIRST], ... LIMIT p

    <after> := ts > p
             | ts >= p AND (ts > p OR (ts = p AND <keys>))
    <keys>  := k > p | k IS NOT NULL                                    (the last key)
             | (k > p OR (k = p AND <keys>)) | (k IS NOT NULL OR (k IS NULL AND <keys>))

The same parameter must stand for the cursor's timestamp (and each key value) at every
place it appears, else the expansion would not mean (ts, keys) > cursor. Anything else
is INVALID_ARGUMENT, as a statement Spanner cannot resolve would be.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import grpc

from partitions.sources.spanner_change_stream.query import GOOGLESQL, POSTGRESQL

from .sql import QueryError
from .watched_tables import same_name

_TOKEN = re.compile(
    r"\s*(?:(?P<hint>@\{\s*FORCE_INDEX\s*=\s*(?P<gi>\w+)\s*\}|/\*@\s*FORCE_INDEX\s*=\s*(?P<pi>\w+)\s*\*/)"
    r"|(?P<quoted>`[A-Za-z_]\w*`|\"[A-Za-z_]\w*\")|(?P<param>@[A-Za-z_]\w*|\$[1-9]\d*)"
    r"|(?P<word>[A-Za-z_]\w*)|(?P<op>>=|<=|=|>|\(|\)|,|\*|;))"
)
_KEYWORDS = {
    "SELECT",
    "FROM",
    "WHERE",
    "AND",
    "OR",
    "IS",
    "NOT",
    "NULL",
    "ORDER",
    "BY",
    "LIMIT",
    "NULLS",
    "FIRST",
}


@dataclass
class TableQuery:
    """A parsed poll query: names as written, parameters by name (p1.. for $1..)."""

    dialect: str
    table: str
    index: str | None = None
    shard_column: str | None = None
    shard: str | None = None
    ts_column: str = ""
    after: str = ""
    keys: list[tuple[str, str | None]] = field(default_factory=list)  # (column, param or None: NULL)
    end: str | None = None
    order: list[str] = field(default_factory=list)
    limit: str = ""


def invalid(message: str) -> QueryError:
    """Return the INVALID_ARGUMENT error Spanner gives a statement it cannot run."""
    return QueryError(grpc.StatusCode.INVALID_ARGUMENT, message)


def tokenize(sql: str) -> tuple[str, list[tuple[str, str]]]:
    """Return the dialect the syntax is written in and the (kind, text) tokens.

    Kinds: hint, name, param, keyword, op. Quotes, parameters and hints each show the
    dialect (backticks, @name, @{...} or double quotes, $n, /*@ ... */); a statement
    mixing the two cannot be run by either.
    """
    tokens, pos, text, styles = [], 0, sql.rstrip(), set()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise invalid(f"Syntax error: unexpected {text[pos : pos + 20].strip()!r}")
        pos = match.end()
        if match["hint"]:
            styles.add(GOOGLESQL if match["gi"] else POSTGRESQL)
            tokens.append(("hint", match["gi"] or match["pi"]))
        elif match["quoted"]:
            styles.add(GOOGLESQL if match["quoted"][0] == "`" else POSTGRESQL)
            tokens.append(("name", match["quoted"][1:-1]))
        elif match["param"]:
            raw = match["param"]
            styles.add(GOOGLESQL if raw[0] == "@" else POSTGRESQL)
            tokens.append(("param", raw[1:] if raw[0] == "@" else f"p{raw[1:]}"))
        elif match["word"] and match["word"].upper() in _KEYWORDS | {"FIRST"}:
            tokens.append(("keyword", match["word"].upper()))
        elif match["word"]:
            tokens.append(("name", match["word"]))
        else:
            tokens.append(("op", match["op"]))
    if len(styles) != 1:
        raise invalid("Syntax error: the statement mixes GoogleSQL and PostgreSQL syntax" if styles else
                      "Syntax error: a poll query binds its values as parameters")  # fmt: skip
    return styles.pop(), tokens


def _token(match: re.Match) -> tuple[tuple[str, str], set[str]]:
    """Return one token and the dialect its form shows (an empty set: either)."""
    if match["hint"]:
        return ("hint", match["gi"] or match["pi"]), {GOOGLESQL if match["gi"] else POSTGRESQL}
    if match["quoted"]:
        return ("name", match["quoted"][1:-1]), {GOOGLESQL if match["quoted"][0] == "`" else POSTGRESQL}
    if match["param"]:
        raw = match["param"]
        if raw[0] == "@":
            return ("param", raw[1:]), {GOOGLESQL}
        return ("param", f"p{raw[1:]}"), {POSTGRESQL}
    if match["word"]:
        word = match["word"]
        return (("keyword", word.upper()) if word.upper() in _KEYWORDS else ("name", word)), set()
    return ("op", match["op"]), set()


class _Parser:
    """Recursive descent over the tokens of one statement."""

    def __init__(self, sql: str):
        dialect, self.tokens = tokenize(sql)
        self.pos = 0
        self.query = TableQuery(dialect=dialect, table="")

    def peek(self, offset: int = 0) -> tuple[str, str]:
        """Return the token offset places ahead, or ("end", "")."""
        i = self.pos + offset
        return self.tokens[i] if i < len(self.tokens) else ("end", "")

    def take(self, kind: str, text: str | None = None) -> str:
        """Consume and return the next token's text, which must be of kind (and text); else raise."""
        got = self.peek()
        if got[0] != kind or (text is not None and got[1] != text):
            want = text or kind
            raise invalid(f"Syntax error: expected {want} but got {got[1] or 'end of statement'!r}")
        self.pos += 1
        return got[1]

    def accept(self, kind: str, text: str | None = None) -> bool:
        """Consume the next token if it is of kind (and text); return whether it was."""
        got = self.peek()
        if got[0] == kind and (text is None or got[1] == text):
            self.pos += 1
            return True
        return False

    def words(self, *words: str) -> None:
        """Consume these keywords in order."""
        for word in words:
            self.take("keyword", word)

    def parse(self) -> TableQuery:
        """Parse the whole statement."""
        q = self.query
        self.words("SELECT")
        self.take("op", "*")
        self.words("FROM")
        q.table = self.take("name")
        if self.peek()[0] == "hint":
            q.index = self.take("hint")
        self.words("WHERE")
        self.conditions()
        self.words("ORDER", "BY")
        self.order()
        self.words("LIMIT")
        q.limit = self.take("param")
        self.accept("op", ";")
        if self.peek()[0] != "end":
            raise invalid(f"Syntax error: unexpected {self.peek()[1]!r} after LIMIT")
        return q

    def conditions(self) -> None:
        """Parse WHERE's conditions: the shard filter, the cursor comparison, the end."""
        q = self.query
        if self.peek(1) == ("keyword", "IS"):  # the shard filter comes first
            q.shard_column = self.take("name")
            self.words("IS", "NOT", "NULL", "AND")
            self.same_name(self.take("name"), q.shard_column, "shard")
            self.take("op", "=")
            q.shard = self.take("param")
            self.words("AND")
        q.ts_column = self.take("name")
        if self.accept("op", ">"):
            q.after = self.take("param")
        else:
            self.after_row()
        if self.accept("keyword", "AND"):
            self.same_name(self.take("name"), q.ts_column, "end")
            self.take("op", "<=")
            q.end = self.take("param")

    def after_row(self) -> None:
        """Parse ts >= p AND (ts > p OR (ts = p AND <keys>)): after a row."""
        q = self.query
        self.take("op", ">=")
        q.after = self.take("param")
        self.words("AND")
        self.take("op", "(")
        self.compare(q.ts_column, ">", q.after)
        self.words("OR")
        self.take("op", "(")
        self.compare(q.ts_column, "=", q.after)
        self.words("AND")
        self.key_after()
        self.take("op", ")")
        self.take("op", ")")

    def key_after(self) -> None:
        """Parse <keys>: one key's "greater", or "greater OR (equal AND <keys>)" in parentheses."""
        nested = self.accept("op", "(")
        column, param = self.key_compare()
        self.query.keys.append((column, param))
        if not nested:
            return
        self.words("OR")
        self.take("op", "(")
        self.same_name(self.take("name"), column, "key")
        self.equal_or_null(param)
        self.words("AND")
        self.key_after()
        self.take("op", ")")
        self.take("op", ")")

    def key_compare(self) -> tuple[str, str | None]:
        """Parse "k > p" or "k IS NOT NULL"; return (k, p or None)."""
        column = self.take("name")
        if self.accept("keyword", "IS"):
            self.words("NOT", "NULL")
            return column, None
        self.take("op", ">")
        return column, self.take("param")

    def equal_or_null(self, param: str | None) -> None:
        """Parse "= p" for the same p, or "IS NULL" when the key value is NULL."""
        if param is None:
            self.words("IS", "NULL")
            return
        self.take("op", "=")
        self.same_param(self.take("param"), param)

    def compare(self, column: str, op: str, param: str) -> None:
        """Parse "column op param" for the given column and the same param."""
        self.same_name(self.take("name"), column, "timestamp")
        self.take("op", op)
        self.same_param(self.take("param"), param)

    def order(self) -> None:
        """Parse ORDER BY's column list (NULLS FIRST allowed)."""
        while True:
            self.query.order.append(self.take("name"))
            if self.accept("keyword", "NULLS"):
                self.take("keyword", "FIRST")
            if not self.accept("op", ","):
                return

    def same_name(self, got: str, want: str, what: str) -> None:
        """Raise unless got names the same column as want, as the dialect compares names."""
        if not same_name(want, got, self.query.dialect):
            raise invalid(f"the {what} comparison must name {want}, not {got}")

    def same_param(self, got: str, want: str) -> None:
        """Raise unless the same parameter is used where the expansion repeats it."""
        if got != want:
            raise invalid(f"the cursor comparison uses {got} where it used {want}: not (ts, key) > cursor")


def parse_table_query(sql: str) -> TableQuery:
    """Return the parsed poll query, or raise QueryError (INVALID_ARGUMENT)."""
    return _Parser(sql).parse()
