"""Full-text search over every session: ``omp_session.search.search(query, ...)``.

The index (``search_index.py``) is brought up to date first (only appended bytes are read), then
queried with FTS5: ranked by bm25, newer entries first among equal scores, with a snippet of the
matching text. Filters: role, project directory (the header's ``cwd``), time range (entry
timestamps), one session, the session's current branch, and whether thinking is searched.

Query language (translated to FTS5, so that no user input reaches FTS5's own syntax):

* words match words, case-insensitively and ignoring diacritics: ``reader offset``
  (several words: all of them, anywhere in the same text);
* ``"a phrase"`` matches those words in that order; ``pars*`` matches a prefix;
* ``AND``, ``OR``, ``NOT`` (upper case) and parentheses combine them: ``(tail OR follow) NOT grep``;
  ``a AND NOT b`` is ``a NOT b`` (FTS5's NOT is binary: "a without b"). NOT binds tighter than AND,
  AND tighter than OR, as in FTS5;
* ``NEAR(a "b c" d*, N)`` (``NEAR`` upper case, ``(`` right after it): the terms within N words of
  each other (FTS5's default 10 without ``, N``).

Filters, ranking and collapsing: a session's title is one hit at most (the header's title and the
``title_change`` entries that repeat it are one), and ``sessions=True`` keeps each session's best hit.

Anything else is a word: punctuation inside a word splits it into a phrase (``foo.bar`` finds
"foo bar"). A query that still cannot be used raises :class:`QueryError` with one line saying why.
"""

from __future__ import annotations

import os
import re
import sqlite3
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from omp_session.errors import QueryError, SearchIndexError
from omp_session.js.date import to_iso

from .index import FILE_SHIFT, HIGHLIGHT, KIND_CODES, KINDS, SEQ_SHIFT, IndexReport, SearchIndex
from .snippet import cut_snippet, hit_pattern, plain_snippet

__all__ = ["MAX_LIMIT", "ROLES", "SearchHit", "SearchResult", "search", "to_fts"]

# a limit at least this large is none: no index holds that many hits, and a larger one (plus the
# ranking's slack) would not fit the 64-bit integers SQLite and the stores take
MAX_LIMIT: Final = 2**53

ROLES: Final = {"user": ("user",), "assistant": ("assistant",),
                "tool": ("toolResult", "bashExecution", "pythonExecution")}
_SNIPPET_TOKENS: Final = 24
_TOKEN = re.compile(r'(?P<space>\s+)|(?P<paren>[()])|"(?P<phrase>[^"]*)"(?P<pstar>\*?)|(?P<open>"[^"]*$)'
                    r'|(?P<word>[^\s()"]+)')
_OPERATORS: Final = ("AND", "OR", "NOT")
_NEAR_TOKEN = re.compile(r'(?P<space>\s+)|(?P<close>\))|,\s*(?P<distance>\d+)'
                         r'|"(?P<phrase>[^"]*)"(?P<pstar>\*?)|(?P<open>"[^"]*$)|(?P<word>[^\s()",]+)|.')


def _phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _has_token(word: str) -> bool:
    """Whether FTS5's unicode61 finds a token in ``word`` (letters, digits, private use; marks
    too, to be safe): a term without one matches nothing, and so would the whole AND."""
    return any(c.isalnum() or unicodedata.category(c) in ("Co", "Mn", "Mc") for c in word)


def _term(word: str) -> str | None:
    """A bare word as a quoted FTS5 term (``pars*`` a prefix); None for punctuation alone."""
    stem = word.rstrip("*") or word  # "*" alone is a word, not a prefix of nothing
    if not _has_token(stem):  # "->", "=", "*": punctuation alone is no word
        return None
    return _phrase(stem) + ("*" if stem != word else "")


def _near(query: str, pos: int) -> tuple[str, int]:
    """``NEAR(term term ... [, N])`` from just after its ``(``: the FTS5 group and where it ends."""
    terms: list[str] = []
    distance: str | None = None
    while True:
        m = _NEAR_TOKEN.match(query, pos)
        if m is None:  # the end of the query
            raise QueryError(f"unbalanced '(' in {query!r}")
        pos = m.end()
        if m.group("space") is not None:
            continue
        if m.group("close") is not None:
            break
        if m.group("open") is not None:
            raise QueryError(f"unclosed quote in {query!r}")
        term: str | None = None
        if distance is None and m.group("distance") is not None:
            distance = f", {int(m.group('distance'))}"
            continue
        if distance is None and m.group("phrase") is not None:
            term = _phrase(m.group("phrase")) + m.group("pstar")
        elif distance is None and m.group("word") is not None and m.group("word") not in _OPERATORS:
            term = _term(m.group("word"))
            if term is None:
                continue
        if term is None:
            raise QueryError(f"NEAR(...) takes words and phrases, then optionally ', N' (at most N words "
                             f"between them), as in NEAR(cursor pagination, 5): not {m.group()!r}")
        terms.append(term)
    if not terms:
        raise QueryError("nothing to search for in NEAR()")
    return "NEAR(" + " ".join(terms) + (distance or "") + ")", pos


def to_fts(query: str) -> str:
    """The FTS5 expression for a user query (see the module docstring). Raises :class:`QueryError`."""
    out: list[str] = []
    dropped = False
    depth = 0
    expect_operand = True  # at the start, after an operator or "("
    pos = 0
    while pos < len(query):
        m = _TOKEN.match(query, pos)
        assert m is not None  # every character starts one of the alternatives
        pos = m.end()
        tok = m.group()
        if m.group("space") is not None:
            continue
        if m.group("open") is not None:
            raise QueryError(f"unclosed quote in {query!r}")
        if tok == "NOT" and out and out[-1] == "AND" and expect_operand:
            out[-1] = "NOT"  # "a AND NOT b": FTS5's NOT is already "and not"
            continue
        if tok in _OPERATORS:
            if expect_operand:
                raise QueryError(f"{tok} needs a term before it, as in: a {tok} b"
                                 + (" (a without b)" if tok == "NOT" else ""))
            out.append(tok)
            expect_operand = True
            continue
        if tok == "(":
            if not expect_operand:
                out.append("AND")
            out.append(tok)
            depth += 1
            expect_operand = True
            continue
        if tok == ")":
            if depth == 0:
                raise QueryError(f"unbalanced ')' in {query!r}")
            if expect_operand:
                raise QueryError(f"empty or unfinished group before ')' in {query!r}")
            depth -= 1
            out.append(tok)
            expect_operand = False
            continue
        if m.group("phrase") is not None:
            term = _phrase(m.group("phrase")) + m.group("pstar")
        elif tok == "NEAR" and query.startswith("(", pos):
            term, pos = _near(query, pos + 1)
        else:
            word = _term(tok)
            if word is None:
                dropped = True
                continue
            term = word
        if not expect_operand:
            out.append("AND")
        out.append(term)
        expect_operand = False
    if depth:
        raise QueryError(f"unbalanced '(' in {query!r}")
    if not out:
        raise QueryError(f"nothing to search for in {query!r}: no letters or digits" if dropped else "empty query")
    if expect_operand:
        raise QueryError(f"{out[-1]} needs a term after it")
    return " ".join(out)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One matching text. ``snippet`` marks the hits with ``HIGHLIGHT`` characters; see
    :meth:`snippet_text`. ``entry_id`` is None for the session's title (the header).

    The snippet is made plain here, whoever cut it (the file index, a store's search tables):
    no terminal escape sequence or control character is left in it (search_snippet.plain_snippet)."""

    session_id: str | None
    title: str | None
    path: str
    cwd: str | None
    entry_id: str | None
    entry_type: str | None
    role: str | None
    kind: str
    timestamp_ms: int | None
    snippet: str
    score: float
    target_id: str | None = None  # for a label: the entry it labels

    def __post_init__(self) -> None:
        object.__setattr__(self, "snippet", plain_snippet(self.snippet))

    @property
    def timestamp(self) -> str | None:
        return None if self.timestamp_ms is None else to_iso(self.timestamp_ms)

    @property
    def resume(self) -> str:
        return f"omp --resume {self.session_id}"

    def snippet_text(self, start: str = "[", end: str = "]") -> str:
        return self.snippet.replace(HIGHLIGHT[0], start).replace(HIGHLIGHT[1], end)

    def to_json(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "title": self.title, "path": self.path, "cwd": self.cwd,
                "entry_id": self.entry_id, "entry_type": self.entry_type, "role": self.role, "kind": self.kind,
                "timestamp": self.timestamp, "snippet": self.snippet_text(), "score": self.score,
                "target_id": self.target_id, "resume": self.resume}


@dataclass
class SearchResult:
    hits: list[SearchHit]
    report: IndexReport | None  # None when the index was not updated
    fts: str  # the FTS5 expression searched for
    notices: list[str] = field(default_factory=list)
    truncated: bool = False  # the limit cut the hits: there are more


def _entry_key(value: str | None) -> str | None:
    """Ids stored tagged (non-strings, search_index._key) are shown as they were."""
    return value if value is None or not value.startswith("\x00") else value[1:]


def search(query: str, *, index: SearchIndex | None = None, index_path: str | os.PathLike[str] | None = None,
           root: str | os.PathLike[str] | None = None, role: str | None = None, cwd: str | None = None,
           since_ms: int | None = None, until_ms: int | None = None, session: str | None = None,
           current_branch: bool = False, thinking: bool = False, limit: int | None = 20, update: bool = True,
           sessions: bool = False, on_notice: Callable[[str], None] | None = None,
           progress: Callable[[int, int], None] | None = None) -> SearchResult:
    """Search every session under ``root`` (default: omp's sessions root).

    ``role`` is ``user``, ``assistant`` or ``tool``; ``cwd`` keeps sessions whose working directory
    is that directory or below it; ``since_ms``/``until_ms`` bound the entry time (epoch ms,
    until exclusive); ``session`` is one session file (indexed even when it lies outside the
    root); ``current_branch`` keeps entries on the branch the session resumes on (and its title);
    ``thinking`` also searches thinking blocks; ``sessions`` keeps one hit per session file, its
    best. A session's title is one hit at most (its ``title_change`` entries repeat it). The index
    is updated first unless ``update`` is false; ``truncated`` in the result says the limit cut the
    hits. Raises :class:`QueryError` for a query that cannot be searched for."""
    fts = to_fts(query)
    if limit is not None and limit >= MAX_LIMIT:
        limit = None  # more hits than any index holds (and past the 64 bits SQLite takes): no limit
    if role is not None and role not in ROLES:
        raise QueryError(f"unknown role {role!r} (use user, assistant or tool)")
    notices: list[str] = []

    def notice(message: str) -> None:
        notices.append(message)
        if on_notice is not None:
            on_notice(message)

    own = index is None
    ix = index if index is not None else SearchIndex(index_path, on_notice=notice)
    try:
        report = None
        if update:
            report = ix.update(root, progress=progress)
            if session is not None:  # it may lie outside the root: brought up to date on its own
                extra = ix.update(files=[session])
                report.added += extra.added
                report.damaged += extra.damaged
        def run(n: int | None) -> list[SearchHit]:
            return _query(ix, fts, role=role, cwd=cwd, since_ms=since_ms, until_ms=until_ms, session=session,
                          current_branch=current_branch, thinking=thinking, limit=n, sessions=sessions)

        hits = run(limit)
        # whether the limit cut the results: asked apart, as one hit more changes which hits a
        # too-common query returns (the newest matches, or every match ranked: RANK_CAP)
        truncated = limit is not None and len(hits) >= limit and len(run(limit + 1)) > limit
        return SearchResult(hits, report, fts, notices, truncated)
    finally:
        if own:
            ix.close()


_FILE: Final = f"(docs.rowid >> {FILE_SHIFT})"
_SEQ: Final = f"((docs.rowid >> {SEQ_SHIFT}) & {(1 << (FILE_SHIFT - SEQ_SHIFT)) - 1})"
_KIND: Final = f"(docs.rowid & {(1 << SEQ_SHIFT) - 1})"
_JOINS: Final = (f"JOIN files f ON f.id = {_FILE} "
                 f"LEFT JOIN entries e ON e.file_id = f.id AND e.seq = {_SEQ}")
_SLACK: Final = 50  # matches ranked beyond the limit, to order equal scores by time
RANK_CAP: Final = 2000  # a query matching this many texts is too common to rank (docs/search.md)


def _split(rowid: int) -> tuple[int, int, str]:
    """(file id, seq, kind) of a doc's rowid (search_index's layout)."""
    return (rowid >> FILE_SHIFT, (rowid >> SEQ_SHIFT) & ((1 << (FILE_SHIFT - SEQ_SHIFT)) - 1),
            KINDS[rowid & ((1 << SEQ_SHIFT) - 1)])


def _query(ix: SearchIndex, fts: str, *, role: str | None, cwd: str | None, since_ms: int | None,
           until_ms: int | None, session: str | None, current_branch: bool, thinking: bool,
           limit: int | None, sessions: bool = False, cap: bool = True) -> list[SearchHit]:
    where = ["docs MATCH ?"]
    args: list[Any] = [fts]
    if not thinking:
        where.append(f"{_KIND} != {KIND_CODES['thinking']}")
    try:
        newest_rows = _newest_matches(ix, " AND ".join(where), list(args)) if cap and limit is not None else None
    except sqlite3.OperationalError as e:
        raise _query_error(ix, fts, e) from None
    newest = newest_rows[-1] if newest_rows else None
    if newest is not None:
        where.append("docs.rowid >= ?")
        args.append(newest)
    joined = len(args)
    if role is not None:
        roles = ROLES[role]
        where.append(f"e.role IN ({', '.join('?' * len(roles))})")
        args.extend(roles)
    if cwd is not None:
        base = os.path.abspath(cwd).rstrip(os.sep) or os.sep
        below = base.rstrip(os.sep) + os.sep
        # a prefix compared exactly: LIKE folds ASCII case, and paths are case-sensitive here
        where.append("(f.cwd = ? OR substr(f.cwd, 1, length(?)) = ?)")
        args.extend([base, below, below])
    if since_ms is not None:
        where.append("e.ts_ms >= ?")
        args.append(since_ms)
    if until_ms is not None:
        where.append("e.ts_ms < ?")
        args.append(until_ms)
    if session is not None:
        where.append("f.path = ?")
        args.append(os.path.abspath(session))
    try:
        ranked = None
        if limit is not None and not current_branch and len(args) == joined and len(where) <= 2 + (newest is not None):
            ranked = (_newest_first(ix, newest_rows, limit, sessions) if newest_rows is not None
                      else _ranked_by_score(ix, " AND ".join(where), args, limit, sessions))
        if ranked is None:
            sql = (f"SELECT docs.rowid, bm25(docs) AS score FROM docs {_JOINS} "
                   f"WHERE {' AND '.join(where)} ORDER BY score, e.ts_ms DESC")
            if limit is None or current_branch:
                ranked = _keep(ix, ix.conn.execute(sql, args), current_branch, limit, sessions)
            else:
                fetch = limit + _SLACK
                while True:  # more rows while repeated titles (or sessions) leave too few
                    rows = ix.conn.execute(f"{sql} LIMIT {fetch}", args).fetchall()
                    ranked = _keep(ix, rows, False, limit, sessions)
                    if len(ranked) >= limit or len(rows) < fetch:
                        break
                    fetch *= 4
        details = _details(ix, fts, [r[0] for r in ranked])
    except sqlite3.OperationalError as e:
        raise _query_error(ix, fts, e) from None
    if newest is not None and limit is not None and len(ranked) < limit:
        # the filters (or one hit per session) left too few of the newest matches: rank every match
        return _query(ix, fts, role=role, cwd=cwd, since_ms=since_ms, until_ms=until_ms, session=session,
                      current_branch=current_branch, thinking=thinking, limit=limit, sessions=sessions, cap=False)
    hits = []
    for rowid, score in ranked:
        _, seq, kind = _split(rowid)
        snippet, entry_id, etype, role_, ts, target, path, sid, title, cwd_ = details[rowid]
        hits.append(SearchHit(sid, title, path, cwd_, None if seq == 0 else _entry_key(entry_id), etype, role_,
                              kind, ts, " ".join(snippet.split()), score, _entry_key(target)))
    return hits


def _details(ix: SearchIndex, fts: str, rowids: list[int]) -> dict[int, tuple[Any, ...]]:
    """rowid -> (snippet, entry id, type, role, time, target, path, session id, title, cwd) of the
    hits shown. Snippets are cut in Python (search_snippet), from the text without its escape
    sequences; FTS5's snippet() only where the pattern finds nothing (folded diacritics; a word of
    a colour code), and SearchHit takes the sequences out of that one."""
    if not rowids:
        return {}
    marks = ix.conn.execute(
        f"SELECT docs.rowid, docs.body, e.entry_id, e.type, e.role, e.ts_ms, e.target_id, f.path, f.session_id, "
        f"f.title, f.cwd FROM docs {_JOINS} WHERE docs.rowid IN ({', '.join('?' * len(rowids))})", rowids)
    pattern = hit_pattern(fts)
    out: dict[int, tuple[Any, ...]] = {}
    missing: list[int] = []
    for rowid, body, *rest in marks:
        cut = cut_snippet(body, pattern, _SNIPPET_TOKENS, HIGHLIGHT) if pattern and isinstance(body, str) else None
        if cut is None:
            missing.append(rowid)
        out[rowid] = (cut, *rest)
    if missing:
        for rowid, snippet in ix.conn.execute(
                f"SELECT docs.rowid, snippet(docs, 0, char(2), char(3), '…', {_SNIPPET_TOKENS}) FROM docs "
                f"WHERE docs MATCH ? AND docs.rowid IN ({', '.join('?' * len(missing))})", [fts, *missing]):
            out[rowid] = (snippet, *out[rowid][1:])
    return out


def _query_error(ix: SearchIndex, fts: str, e: sqlite3.OperationalError) -> Exception:
    if "fts5" in str(e) or "syntax" in str(e) or "MATCH" in str(e):
        return QueryError(f"cannot search for {fts!r}: {e}")
    return SearchIndexError(f"{ix.path}: {e}")


def _newest_matches(ix: SearchIndex, where: str, args: list[Any]) -> list[int] | None:
    """For a query matching at least RANK_CAP texts, the rowids of the RANK_CAP newest matches,
    newest first (rowids grow with indexing order); None when it matches fewer."""
    rows = ix.conn.execute(f"SELECT docs.rowid FROM docs WHERE {where} ORDER BY docs.rowid DESC LIMIT ?",
                           [*args, RANK_CAP]).fetchall()
    return [int(r[0]) for r in rows] if len(rows) >= RANK_CAP else None


def _times(ix: SearchIndex, rowids: Iterable[int]) -> dict[int, Any]:
    """rowid -> the entry's time (ms), in one query: a lookup per row costs more than ranking."""
    keys = {rowid: _split(rowid)[:2] for rowid in rowids}
    if not keys:
        return {}
    pairs = list(dict.fromkeys(keys.values()))
    found = {(f, q): t for f, q, t in ix.conn.execute(
        f"WITH k(f, q) AS (VALUES {', '.join('(?, ?)' for _ in pairs)}) "
        f"SELECT k.f, k.q, e.ts_ms FROM k CROSS JOIN entries e ON e.file_id = k.f AND e.seq = k.q",
        [x for pair in pairs for x in pair])}
    return {rowid: found.get(key) for rowid, key in keys.items()}


def _by_time(rows: list[tuple[int, float]], times: dict[int, Any]) -> list[tuple[int, float]]:
    """``rows`` ordered by score, then time descending with unknown times last (SQLite's order)."""
    return sorted(rows, key=lambda r: (r[1], times[r[0]] is None, -(times[r[0]] or 0)))


def _newest_first(ix: SearchIndex, rowids: list[int], limit: int, sessions: bool) -> list[tuple[int, float]]:
    """The hits of a query too common to rank: its newest matches, by time. bm25 would read the
    whole doclist of such a word to count it, and its idf is then near or at FTS5's floor, so the
    scores barely differ (score 0 marks these hits)."""
    window = limit + _SLACK
    while True:
        part = rowids[:window]
        kept = _keep(ix, _by_time([(rowid, 0.0) for rowid in part], _times(ix, part)), False, limit, sessions)
        if len(kept) >= limit or window >= len(rowids):
            return kept
        window *= 4


def _ranked_by_score(ix: SearchIndex, where: str, args: list[Any], limit: int,
                     sessions: bool) -> list[tuple[int, float]] | None:
    """Without filters on entries or files, rank in FTS5 alone (no join per match), then order
    equal scores by time. None when the equal scores at the limit run past what was fetched."""
    fetch = limit + _SLACK
    while True:
        rows: list[tuple[int, float]] = ix.conn.execute(
            f"SELECT docs.rowid, rank FROM docs WHERE {where} ORDER BY rank LIMIT ?", [*args, fetch]).fetchall()
        kept = _keep(ix, _by_time(rows, _times(ix, (r[0] for r in rows))), False, limit, sessions)
        if len(rows) < fetch:
            return kept
        if kept and rows[-1][1] == kept[-1][1]:
            return None
        if len(kept) >= limit:
            return kept
        fetch *= 4  # repeated titles (or sessions) left too few


def _keep(ix: SearchIndex, rows: Iterable[tuple[int, float]], current_branch: bool, limit: int | None,
          sessions: bool) -> list[tuple[int, float]]:
    """The ranked matches to show: on current branches if asked; one title per session (its
    ``title_change`` entries repeat the header's), and with ``sessions`` one hit per session."""
    branches: dict[int, set[int]] = {}
    kept: list[tuple[int, float]] = []
    shown: dict[int, int] = {}  # file id -> where its title (with ``sessions``: its hit) is in ``kept``
    for rowid, score in rows:
        file_id, seq, kind = _split(rowid)
        if current_branch and seq != 0:
            if file_id not in branches:
                branches[file_id] = ix.branch_seqs(file_id)
            if seq not in branches[file_id]:
                continue
        if sessions or kind == "title":
            at = shown.get(file_id)
            if at is not None:
                other, other_score = kept[at]
                if seq == 0 and kind == "title" and other_score == score and _split(other)[2] == "title":
                    kept[at] = (rowid, score)  # the same rank: show the session's title, not an audit entry
                continue
            shown[file_id] = len(kept)
        kept.append((rowid, score))
        if limit is not None and len(kept) >= limit:
            break
    return kept
