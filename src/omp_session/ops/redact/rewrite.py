"""Redact a session for sharing: secrets out, tree intact (issue 6, docs/redact.md).

    result = redact(omp_session.open(path), RedactRules(secrets=["hunter22"], paths=True))
    write_redacted(result, "shared.jsonl")

Every string of the header, the title slot and every entry is scanned (object keys too, in
free-form objects). Ids, parent links, types, roles and timestamps are never edited, so the tree
omp builds from the output has the shape of the input's. Blocks a provider signed or encrypted
cannot be edited without breaking replay: when one holds something to redact it is removed whole
and a marker text block takes its place. The report says what was redacted where, never the value.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import re
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from omp_session.errors import PatternError, RedactError, SecretsFileError
from omp_session.format.blobs import BLOB_PREFIX
from omp_session.format.gc_pause import gc_paused
from omp_session.format.reader import decode_record
from omp_session.format.split import forked, interleaved, later_part
from omp_session.format.title import TitleSlot, build_title_slot
from omp_session.format.utf8 import is_utf8_line
from omp_session.js import codec
from omp_session.model.session import Session
from omp_session.store.atomic import open_output, write_new_file

from .detectors import MARKER, Hit, Matcher, marker, parse_secrets_file, secret_key_name
from .prefilter import Prefilter, u_escape_of_text

__all__ = ["Finding", "PatternError", "RedactReport", "RedactResult", "RedactRules", "SecretsFileError",
           "redact", "redact_to", "write_redacted"]

CWD_PLACEHOLDER = "<cwd>"
HOME_PLACEHOLDER = "~"
SIGNED_MARKER = "[REDACTED: signed block removed]"
IMAGE_MARKER = "[REDACTED: image removed]"
THINKING_MARKER = "[REDACTED: thinking removed]"
TOOL_OUTPUT_MARKER = "[REDACTED: tool output removed]"
TOOL_CALL_MARKER = "[REDACTED: tool call removed]"
CUSTOM_MARKER = "[REDACTED: custom content removed]"

# Fields whose edit would change the tree or how omp pairs and orders things: never edited.
_ENVELOPE = frozenset({"type", "id", "parentId", "timestamp", "targetId", "fromId", "firstKeptEntryId",
                       "providerReplayThroughEntryId", "version"})
_MESSAGE_FIXED = frozenset({"role", "toolCallId", "timestamp"})
_GROUP_BYTES = 1 << 20  # records read at once when looking for signed tool calls (or one bigger record)
_AS_READ = object()  # an entry with nothing in it redacted, its line kept (see _Job._redacted)
_UNCHANGED = object()  # an entry with nothing in it redacted, written from its value
_ABSENT = object()  # a key an object does not have
# Only a whole blob ref or base64 image data URL is skipped: text that merely starts like one is text.
_NOT_TEXT = re.compile(r"blob:sha256:[0-9a-f]{64}|data:image/[A-Za-z0-9.+\-]+;base64,[A-Za-z0-9+/=]*")


@dataclass
class RedactRules:
    """What to redact. ``secrets``: literal values; ``secrets_files``: ``.env`` files whose values
    are secrets; ``patterns``: regexes (a group named ``secret`` limits the redaction to it);
    ``builtin``: the built-in detectors; ``paths``: replace the cwd by ``<cwd>`` and the home
    directory prefix by ``~``; ``home``: the home directory (default: this user's, plus the
    ``/home/<user>`` / ``/Users/<user>`` prefix of the session's cwd)."""

    secrets: Sequence[str] = ()
    secrets_files: Sequence[str | os.PathLike[str]] = ()
    patterns: Sequence[str | re.Pattern[str]] = ()
    builtin: bool = True
    paths: bool = False
    home: str | None = None
    drop_tool_output: bool = False
    drop_images: bool = False
    drop_thinking: bool = False
    drop_custom: bool = False


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing redacted (or removed, dropped, or found but kept). ``path`` is a JSON path into
    the output record (``$`` is the entry, header or title slot), built from redacted keys."""

    category: str
    action: str  # redacted | removed | dropped | kept
    line: int | None
    entry_id: str | None
    path: str

    def to_json(self) -> dict[str, Any]:
        return {"category": self.category, "action": self.action, "line": self.line,
                "entryId": self.entry_id, "path": self.path}

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line is not None else "?"
        if self.entry_id is not None:
            where += f" entry {self.entry_id}"
        return f"{self.category}: {self.action} at {where} {self.path}"


@dataclass
class RedactResult:
    header: dict[str, Any]
    entries: list[Any]
    title_slot: TitleSlot | None
    findings: list[Finding] = field(default_factory=list)
    source: str | None = None
    # per entry, its line as read when it is copied as it is (nothing in it to redact), else None;
    # to_bytes writes that line for it (set it to None to have an edited entry written)
    lines: list[bytes | None] = field(default_factory=list)

    def to_bytes(self) -> bytes:
        """The output file: title slot (if the input had one), header, entries (each copied entry
        as its line, the others with omp's serializer)."""
        parts: list[bytes] = []
        if self.title_slot is not None:
            s = self.title_slot
            parts.append(build_title_slot(s.title, s.source, s.updated_at))
        parts.append(codec.dumps_line(self.header))
        lines = self.lines
        for k, e in enumerate(self.entries):
            line = lines[k] if k < len(lines) else None
            parts.append(codec.dumps_line(e) if line is None else line)
        return b"".join(parts)

    def counts(self) -> dict[str, int]:
        return _counts(self.findings)


@dataclass
class RedactReport:
    """What :func:`redact_to` wrote (``output``; None: a check, nothing written) and found."""

    findings: list[Finding]
    source: str | None
    output: Path | None

    def counts(self) -> dict[str, int]:
        return _counts(self.findings)


def _counts(findings: list[Finding]) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in findings:
        out[f.category] = out.get(f.category, 0) + 1
    return dict(sorted(out.items()))


class _Removed:
    """A block or value the parent must take out (why: the marker text to put in a content list,
    or None to remove without a trace)."""

    __slots__ = ("text",)

    def __init__(self, text: str | None) -> None:
        self.text = text


def _key_path(path: str, key: str) -> str:
    return f"{path}.{key}" if re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", key) else f"{path}[{codec.stringify(key)}]"


def _is_signed(obj: dict[str, Any], key: str | None) -> bool:
    """Blocks a provider validates byte-for-byte on replay (see persist.py's verbatim blocks)."""
    t = obj.get("type")

    def has(name: str) -> bool:
        v = obj.get(name)
        return isinstance(v, str) and v != ""

    if t in ("anthropicServerTool", "anthropicCompaction") or key == "anthropicCompaction":
        return True
    return ((t == "thinking" and has("thinkingSignature")) or (t == "text" and has("textSignature"))
            or (t == "toolCall" and has("thoughtSignature")) or (t == "redactedThinking" and has("data"))
            or (t == "reasoning" and has("encrypted_content")))


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


class _Redactor:
    def __init__(self, rules: RedactRules, matcher: Matcher, literals: list[tuple[re.Pattern[str], str, str]]
                 ) -> None:
        self.rules = rules
        self.m = matcher
        self.literals = literals
        self.findings: list[Finding] = []
        self.line: int | None = None
        self.entry_id: str | None = None
        self.removed_calls: set[str] = set()
        # parts of secrets that run on from one content block into the next, by the JSON path of
        # the string they are in (set by ``joined_hits``, used by ``text``)
        self.extra: dict[str, list[Hit]] = {}
        # a --secret / --secrets-from value may be a number (a PIN, an account id) stored unquoted
        self.number_secrets = any(d.category in ("secret", "secrets-file") for d in matcher.detectors)

    def note(self, category: str, action: str, path: str) -> None:
        self.findings.append(Finding(category, action, self.line, self.entry_id, path))

    # ----- strings

    def text(self, s: str, path: str, *, image_data: bool = False) -> str:
        if image_data or (s.startswith((BLOB_PREFIX, "data:image/")) and _NOT_TEXT.fullmatch(s)):
            return s  # image bytes and blob hashes: not text, and a chance hit would corrupt them
        out, categories = self.m.scrub(s, self.extra.pop(path, ()))
        for c in categories:
            self.note(c, "redacted", path)
        for rx, placeholder, category in self.literals:
            out, n = rx.subn(placeholder, out)
            for _ in range(n):
                self.note(category, "redacted", path)
        return out

    # ----- the walk

    def value(self, v: Any, path: str, key: str | None, fixed: bool = False) -> Any:
        if isinstance(v, str):
            if fixed:
                if self.m.hits(v):
                    self.note("structural-field", "kept", path)  # an id cannot change: say so
                return v
            return self.text(v, path)
        if isinstance(v, list):
            return self.seq(v, path, key)
        if isinstance(v, dict):
            return self.obj(v, path, key)
        if self.number_secrets and not fixed and isinstance(v, int | float) and not isinstance(v, bool):
            hits = [h for h in self.m.hits(codec.stringify(v) or "") if h.category in ("secret", "secrets-file")]
            if hits:
                self.note(hits[0].category, "redacted", path)
                return marker(hits[0].category)
        return v

    def seq(self, items: list[Any], path: str, key: str | None) -> list[Any]:
        if key == "content":
            self.joined_hits(items, path)
        out: list[Any] = []
        for i, item in enumerate(items):
            new = self.value(item, f"{path}[{i}]", key)
            if isinstance(new, _Removed):
                if key == "content" and new.text is not None:
                    out.append(_text_block(new.text))
                continue
            out.append(new)
        return out

    def obj(self, obj: dict[str, Any], path: str, key: str | None, fixed_keys: frozenset[str] = frozenset(),
             *, done: dict[str, Any] | None = None, check_signed: bool = True) -> Any:
        """``done``: keys whose new value the caller already computed (kept in their place)."""
        r = self.rules
        t = obj.get("type")
        if t == "image" and r.drop_images:
            self.note("image", "dropped", path)
            return _Removed(IMAGE_MARKER)
        if t in ("thinking", "redactedThinking") and r.drop_thinking and key == "content":
            self.note("thinking", "dropped", path)
            return _Removed(None)
        if check_signed and _is_signed(obj, key):
            return self.signed(obj, path, key)
        out: dict[str, Any] = {}
        for k, v in obj.items():
            if done is not None and k in done:
                out[k] = done[k]
                continue
            new_key = k if k in fixed_keys else self.text(k, _key_path(path, "<key>"))
            while (new_key != k and new_key in obj) or new_key in out:
                new_key += "#"  # two keys redacted to the same marker must both survive
            sub = _key_path(path, new_key)
            if r.drop_images and k == "images" and isinstance(v, list) and v:
                self.note("image", "dropped", sub)
                out[new_key] = []
                continue
            if isinstance(v, str) and k not in fixed_keys and secret_key_name(k) and v and not MARKER.fullmatch(v):
                self.note("secret-key-value", "redacted", sub)
                out[new_key] = marker("secret-key-value")
                continue
            new = self.value(v, sub, k, fixed=k in fixed_keys) if not (
                t == "image" and k == "data" and isinstance(v, str)) else v
            if isinstance(new, _Removed):
                continue
            out[new_key] = new
        return out

    def signed(self, obj: dict[str, Any], path: str, key: str | None) -> Any:
        """Scan a signed block as a whole; any hit removes it (an edit would fail its signature)."""
        mark = len(self.findings)
        probe = self.obj(obj, path, key, check_signed=False)
        if probe == obj:
            del self.findings[mark:]
            return obj
        hits = self.findings[mark:]
        del self.findings[mark:]
        for f in hits:
            self.findings.append(Finding(f.category, "removed", f.line, f.entry_id, path))
        self.note("signed-block", "removed", path)
        if obj.get("type") == "toolCall" and isinstance(obj.get("id"), str):
            self.removed_calls.add(obj["id"])
            return _Removed(TOOL_CALL_MARKER)
        return _Removed(SIGNED_MARKER)

    # ----- records

    def entry(self, e: Any) -> Any:
        self.extra = {}  # paths repeat from entry to entry: nothing carries over
        if not isinstance(e, dict):
            return self.value(e, "$", None)
        r = self.rules
        e = dict(e)
        kind = e.get("type")
        if r.drop_custom and kind == "custom" and "data" in e:
            # the entry stays (children keep their parent); only its payload goes
            del e["data"]
            self.note("custom", "dropped", "$.data")
        if r.drop_custom and kind == "custom_message" and _replace(e, "content", CUSTOM_MARKER, "details"):
            self.note("custom", "dropped", "$.content")
        message = e.get("message")
        done = {"message": self.message(message)} if isinstance(message, dict) else None
        return self.obj(e, "$", None, _ENVELOPE, done=done)

    def message(self, m: dict[str, Any]) -> dict[str, Any]:
        r = self.rules
        m = dict(m)
        role = m.get("role")
        if role == "toolResult" and r.drop_tool_output:
            self.drop_result(m, "tool-output", TOOL_OUTPUT_MARKER)
        if role in ("bashExecution", "pythonExecution") and r.drop_tool_output and "output" in m and \
                _replace(m, "output", TOOL_OUTPUT_MARKER, "images"):
            self.note("tool-output", "dropped", "$.message.output")
        if role in ("custom", "hookMessage") and r.drop_custom and _replace(m, "content", CUSTOM_MARKER, "details"):
            self.note("custom", "dropped", "$.message.content")
        payload = m.get("providerPayload")
        if isinstance(payload, dict) and r.drop_thinking and any(
                isinstance(i, dict) and i.get("type") == "reasoning" for i in payload.get("items") or []):
            del m["providerPayload"]
            self.note("thinking", "dropped", "$.message.providerPayload")
        out: dict[str, Any] = {}
        for k, v in m.items():
            if k in _MESSAGE_FIXED:
                out[k] = self.value(v, _key_path("$.message", k), k, fixed=True)
                continue
            # a key is text like any other, and one naming a secret takes its value (as in obj)
            new_key = self.text(k, _key_path("$.message", "<key>"))
            while (new_key != k and new_key in m) or new_key in out:
                new_key += "#"
            path = _key_path("$.message", new_key)
            if isinstance(v, str) and secret_key_name(k) and v and not MARKER.fullmatch(v):
                self.note("secret-key-value", "redacted", path)
                out[new_key] = marker("secret-key-value")
                continue
            if k == "content" and isinstance(v, list):
                out[new_key] = self.content(v, path)
                continue
            mark = len(self.findings)
            new = self.value(v, path, k)
            if k == "providerPayload" and any(f.action == "removed" for f in self.findings[mark:]):
                # a replay payload missing one of its signed items is worse than none: omp
                # rebuilds the request from the message content when there is no payload
                self.note("provider-payload", "removed", path)
                continue
            if not isinstance(new, _Removed):
                out[new_key] = new
        return out

    def joined_hits(self, blocks: list[Any], path: str) -> None:
        """Scan each run of adjacent text (or thinking) blocks as one string, so a secret split
        across blocks is found; each block's part of it is redacted in that block."""
        run: list[tuple[str, str]] = []  # (path of the string, the string)
        kind: str | None = None
        for i, block in enumerate([*blocks, None]):
            t = block.get("type") if isinstance(block, dict) else None
            field = {"text": "text", "thinking": "thinking"}.get(t) if isinstance(t, str) else None
            value = block.get(field) if field is not None and isinstance(block, dict) else None
            if not isinstance(value, str) or t != kind:
                if len(run) > 1:
                    self.spread(run)
                run = []
                kind = t if isinstance(value, str) else None
            if isinstance(value, str) and field is not None:
                run.append((_key_path(f"{path}[{i}]", field), value))

    def spread(self, run: list[tuple[str, str]]) -> None:
        offsets: list[int] = []
        pos = 0
        for _, s in run:
            offsets.append(pos)
            pos += len(s)
        for h in self.m.hits("".join(s for _, s in run)):
            parts = [(k, max(h.start, o) - o, min(h.end, o + len(s)) - o)
                     for k, ((_, s), o) in enumerate(zip(run, offsets, strict=True))
                     if h.start < o + len(s) and h.end > o]
            # all of them, also hits inside one block: their context (a name, "Bearer") may be in the
            # block before; one the block's own scan finds too merges with it
            for k, a, b in parts:
                self.extra.setdefault(run[k][0], []).append(Hit(a, b, h.category, h.rank))

    def content(self, blocks: list[Any], path: str) -> list[Any]:
        self.joined_hits(blocks, path)
        out: list[Any] = []
        for i, block in enumerate(blocks):
            sub = f"{path}[{i}]"
            fixed = frozenset({"type", "id"}) if isinstance(block, dict) and block.get("type") == "toolCall" \
                else frozenset({"type"})
            new = self.obj(block, sub, "content", fixed) if isinstance(block, dict) else self.value(
                block, sub, "content")
            if isinstance(new, _Removed):
                if new.text is not None:
                    out.append(_text_block(new.text))
                continue
            out.append(new)
        if blocks and not out:
            out.append(_text_block(THINKING_MARKER))  # an assistant turn keeps a block to show
        return out

    def drop_result(self, m: dict[str, Any], category: str, text: str) -> None:
        before = m.get("content", _ABSENT), m.get("details", _ABSENT)
        m["content"] = [_text_block(text)]
        details = m.get("details")
        if isinstance(details, dict) and "usage" in details:
            m["details"] = {"usage": details["usage"]}  # subagent usage still counts in the statistics
        else:
            m.pop("details", None)
        if (m["content"], m.get("details", _ABSENT)) != before:  # (not a result dropped before)
            self.note(category, "dropped", "$.message.content")


def _replace(obj: dict[str, Any], key: str, marker_text: str, also: str) -> bool:
    """Set ``obj[key]`` to ``marker_text`` and drop ``obj[also]``; whether anything changed (a
    file redacted before holds the marker already: nothing to report again)."""
    if obj.get(key) == marker_text and also not in obj:
        return False
    obj[key] = marker_text
    obj.pop(also, None)
    return True


def _home_dirs(rules: RedactRules, cwd: Any) -> list[str]:
    homes = {rules.home} if rules.home else {str(Path.home())}
    if isinstance(cwd, str):
        m = re.match(r"(/home/[^/]+|/Users/[^/]+|/root)(?=/|$)", cwd)
        if m:
            homes.add(m.group(1))
    return [h.rstrip("/") for h in homes if h and h.rstrip("/").count("/") >= 1 and len(h.rstrip("/")) > 1]


def _literal_texts(rules: RedactRules, header: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(path, placeholder, category) for ``--paths``: the cwd, then the home directories."""
    if not rules.paths:
        return []
    out: list[tuple[str, str, str]] = []
    cwd = header.get("cwd")
    # (a file redacted before has the placeholder for its cwd: nothing to replace)
    if isinstance(cwd, str) and len(cwd.rstrip("/")) > 1 and cwd != CWD_PLACEHOLDER:
        out.append((cwd.rstrip("/"), CWD_PLACEHOLDER, "path-cwd"))
    for home in sorted(_home_dirs(rules, cwd), key=len, reverse=True):
        out.append((home, HOME_PLACEHOLDER, "path-home"))
    return out


def _literals(rules: RedactRules, header: dict[str, Any]) -> list[tuple[re.Pattern[str], str, str]]:
    # a path ends where a path name could not go on (so /home/u/app does not eat /home/u/app2)
    end = r"(?![A-Za-z0-9._\-])"
    return [(re.compile(re.escape(text) + end), placeholder, category)
            for text, placeholder, category in _literal_texts(rules, header)]


def build_matcher(rules: RedactRules) -> Matcher:
    """The matcher for ``rules``; raises SecretsFileError / PatternError (one line each)."""
    secrets: list[tuple[str, str]] = [("secret", s) for s in rules.secrets]
    for f in rules.secrets_files:
        secrets.extend(("secrets-file", value) for _, value in parse_secrets_file(f))
    return Matcher(builtin=rules.builtin, secrets=secrets, patterns=rules.patterns)


def _escaped(text: str) -> bytes:
    """``text`` as it appears inside a JSON string of the file (omp's serializer)."""
    return (codec.stringify(text) or '""')[1:-1].encode("utf-8", "surrogatepass")


def _shallow(raw: bytes, value_of: Callable[[], Any]) -> bool:
    """Whether the walk surely fits the record ``raw`` in Python's stack (a few frames per level:
    a record it cannot walk is reported, so one is never copied unwalked). orjson refuses more
    than 254 levels, and the walk takes about 450."""
    if raw.count(b"[") + raw.count(b"{") <= 254:
        return True
    try:
        orjson.dumps(value_of())
    except orjson.JSONEncodeError:
        return False
    return True


class _Job:
    """One redaction of one session, record by record: the title slot and header first (their
    errors come before anything is written), then :meth:`entries`, then :meth:`finish`."""

    def __init__(self, session: Session, rules: RedactRules, matcher: Matcher) -> None:
        self.session = session
        self.matcher = matcher
        if session.header is None:
            raise RedactError(f"{session.path or 'session'}: not a session file (no valid header); nothing to redact")
        literals = _literals(rules, session.header)
        self.r = r = _Redactor(rules, self.matcher, literals)
        user_rules = any(d.category in ("secret", "secrets-file", "pattern") for d in self.matcher.detectors)
        self.prefilter = Prefilter(
            matcher.hits, builtin=rules.builtin, user_rules=user_rules,
            literals=[_escaped(text) for text, _, _ in _literal_texts(rules, session.header)],
            drop_images=rules.drop_images, drop_thinking=rules.drop_thinking,
            drop_tool_output=rules.drop_tool_output, drop_custom=rules.drop_custom)
        j = session.journal
        self._resolved = j.blob_records() if j.decode_hook is not None else set()
        self._plain_kept: dict[int, bool] = {}  # records kept decoded: whether each is its bytes
        slot = session.title_slot
        if slot is not None:
            r.line = 1
            slot = TitleSlot(r.text(slot.title, "$.title"), slot.source, r.text(slot.updated_at, "$.updatedAt"))
            try:
                build_title_slot(slot.title, slot.source, slot.updated_at)
            except ValueError:  # omp reads a slot of any width; one whose metadata passes 256 bytes cannot be rebuilt
                raise RedactError(f"{session.path or 'session'}: line 1: title slot metadata longer than 256 bytes; "
                                  "cannot rewrite it") from None
        self.title_slot = slot
        r.line = j.line_of(j.start(0)) if len(j) else None
        header = self._guarded(lambda: r.obj(session.header, "$", None, _ENVELOPE))
        assert isinstance(header, dict)
        self.header: dict[str, Any] = header
        self.deferred: list[Finding] = []  # tool results of removed calls: reported after every entry
        r.removed_calls |= self._removed_calls()
        # with a call removed, every tool result is walked: its id may be spelled otherwise in the
        # result (a control character escaped otherwise), and "toolResult" cannot be but with a
        # \u of a letter, which the prefilter walks anyway
        self._results_walked = bool(r.removed_calls)

    def _guarded(self, walk: Any) -> Any:
        r = self.r
        try:
            return walk()
        except RecursionError:
            # the reader accepts deeper nesting than this recursive walk fits in Python's stack
            raise RedactError(f"{self.session.path or 'session'}: line {r.line}"
                              + (f" entry {r.entry_id}" if r.entry_id else "") + ": nested too deeply to redact"
                              ) from None

    def _plain(self, k: int) -> bool:
        """Whether entry ``k`` is what its bytes say (not migrated, sanitized, blob-resolved or
        added in memory): a record holding a blob reference is one the scan found it in, or one it
        decoded. A record kept decoded (the scan decodes a part of the file it cannot take whole,
        such as the lines around a damaged one, and what load changed is kept) is plain when it
        equals its bytes decoded again: what is kept as read never depends on how the scan cut
        the file (one process or two)."""
        i = k + 1
        if i in self._resolved or self.session.migrated:
            return False
        j = self.session.journal
        kept = j.values.get(i, _AS_READ)
        if kept is _AS_READ:
            return True
        plain = self._plain_kept.get(i)
        if plain is None:
            raw = j.raw(i)
            try:
                plain = bool(raw) and kept == decode_record(raw)
            except RecursionError:  # too deep to compare (the walk reports it, with its line)
                plain = False
            self._plain_kept[i] = plain
        return plain

    def _maybe_signed(self) -> Iterator[int]:
        """The entries that may hold a signed tool call, judged a group of records at a time on
        their bytes (read once, with what lies between them): a group without the key, a \\u
        escape that could spell it or an entry decoded before has none. (Resolving a blob ref
        replaces an image's string, never makes a key.) On a big file a forked child judges the
        later entries meanwhile (split.forked)."""
        j = self.session.journal
        n = len(self.session)
        mid = later_part(n, j.size, 55)  # (the other commands' split: the child is the slower)
        later = forked(lambda: self._signed_groups(mid, n), j.size) if mid < n else None
        try:
            groups = self._signed_groups(0, mid)
        except BaseException:
            if later is not None:
                later.cancel()
            raise
        for first, last in groups + (later() if later is not None else []):
            yield from range(first, last)

    def _signed_groups(self, first: int, end: int) -> list[tuple[int, int]]:
        """Of entries ``first``..``end - 1``, the groups (first, last + 1) that may hold a signed call."""
        j = self.session.journal
        decoded = sorted(i - 1 for i in j.values if i > 0)  # (the header is record 0)
        groups: list[tuple[int, int]] = []
        while first < end:
            start, last = j.start(first + 1), first + 1
            while last < end and j.end(last + 1) - start <= _GROUP_BYTES:
                last += 1
            group = j.read(start, j.end(last))
            if (b"thoughtSignature" in group or u_escape_of_text(group)
                    or bisect_left(decoded, first) < bisect_left(decoded, last)):
                groups.append((first, last))
            first = last
        return groups

    def _removed_calls(self) -> set[str]:
        """The ids of the signed tool calls the walk removes, known before the first entry is
        written: a tool result can come before its call in the file, and its content goes too."""
        j = self.session.journal
        probe = _Redactor(self.r.rules, self.matcher, self.r.literals)
        for k in self._maybe_signed():
            raw = j.raw(k + 1)
            if b"thoughtSignature" not in raw and not u_escape_of_text(raw) and self._plain(k):
                continue  # no signed tool call (its key is spelled out unless escaped)
            value = j.peek(k + 1, raw)
            if not _has_signed_call(value) or (self._plain(k) and not self.prefilter.may_change(raw, _given(value))):
                continue
            with contextlib.suppress(RecursionError):  # the main walk reports it, with its line
                probe.entry(value)
            probe.findings.clear()
        return probe.removed_calls

    def _read(self, lo: int, hi: int | None) -> Iterator[tuple[int, bytes]]:
        """Entries ``lo``..``hi - 1``: (k, the record's bytes)."""
        raw_of = self.session.journal.raw_in_order()  # a window of the file read at a time, each record once
        for k in range(lo, len(self.session) if hi is None else hi):
            yield k, raw_of(k + 1)

    def _copies(self, k: int, raw: bytes, value_of: Callable[[], Any]) -> bool:
        """Whether entry ``k`` needs no walk, its depth aside (see _shallow); ``value_of()``: the
        entry, asked for only when its bytes cannot tell."""
        return (self._plain(k) and not (self._results_walked and b'"toolResult"' in raw)
                and not self.prefilter.may_change(raw, value_of))

    def _walked(self, k: int, value: Any) -> Any:
        r = self.r
        r.line = self.session.line_of_entry(k)
        eid = value.get("id") if isinstance(value, dict) else None
        r.entry_id = eid if isinstance(eid, str) else None
        out = self._guarded(lambda: r.entry(value))
        return self._drop_removed_result(out) if r.removed_calls else out

    def _redacted(self, k: int, raw: bytes, value_of: _Decoded) -> Any:
        """Entry ``k`` redacted; ``_AS_READ`` when nothing in it is changed and its bytes hold
        nothing the entry does not (its line can be kept); ``_UNCHANGED`` when nothing in it is
        changed but its bytes may hold more: a key given twice (the entry holds the last value,
        the line both), a number spelled otherwise than JavaScript does (a ``--secret`` number is
        looked for in JavaScript's spelling). A record the prefilter clears from its bytes alone
        (hints, key names and literals are looked for in all of them) is not even decoded."""
        if self._copies(k, raw, value_of):
            consulted = value_of.decoded  # (the keys or the text runs were judged on the entry)
            if _shallow(raw, value_of):
                return _UNCHANGED if consulted and not _one_key_each(raw) else _AS_READ
        value = value_of()
        out = self._walked(k, value)
        if out != value:  # (the walk builds a new value: equal when it changed nothing)
            return out
        return _UNCHANGED if self.r.number_secrets or not _one_key_each(raw) else _AS_READ

    def _kept(self, k: int, raw: bytes) -> bytes | None:
        """Entry ``k``'s line as read, to be written as it is when nothing in it is redacted;
        None unless it is what its bytes say (see _plain), on one line (a value spanning lines is
        written on one) and UTF-8 (else it is written from what omp reads)."""
        return raw if self._plain(k) and is_utf8_line(raw) else None

    def entries(self, lo: int = 0, hi: int | None = None) -> Iterator[tuple[Any, bytes | None]]:
        """Each redacted entry (of ``lo``..``hi - 1``), and its line as read (line feed included)
        when it is written as it is (see :meth:`_lines`), else None."""
        peek = self.session.journal.peek
        for k, raw in self._read(lo, hi):
            value_of = _Decoded(peek, k + 1, raw)
            out = self._redacted(k, raw, value_of)
            kept = self._kept(k, raw) if out is _AS_READ else None
            if out is _AS_READ or out is _UNCHANGED:
                yield value_of(), None if kept is None else kept + b"\n"
            else:
                yield out, None

    def _lines(self, lo: int, hi: int) -> Iterator[bytes]:
        """:meth:`entries` as lines: an entry with nothing redacted is its line as read (its bytes
        kept, the line feed after them written) where it can be (see :meth:`_redacted` and
        :meth:`_kept`), and every other one is written with omp's serializer. A record is decoded
        only when that takes it."""
        peek = self.session.journal.peek
        for k, raw in self._read(lo, hi):
            value_of = _Decoded(peek, k + 1, raw)
            out = self._redacted(k, raw, value_of)
            if out is _AS_READ:
                kept = self._kept(k, raw)
                if kept is not None:
                    yield kept
                    yield b"\n"
                    continue
            if out is _AS_READ or out is _UNCHANGED:
                out = value_of()
            yield codec.dumps_line(out)

    def piece(self, lo: int, hi: int) -> bytes:
        """Entries ``lo``..``hi - 1`` redacted, for :func:`~omp_session.format.split.interleaved`
        (a forked child makes every other piece of a large file): their lines, and what they
        reported (taken out of this job: the caller adds each piece's in order), pickled."""
        r = self.r
        mark, later = len(r.findings), len(self.deferred)
        data = b"".join(self._lines(lo, hi))
        found, deferred = r.findings[mark:], self.deferred[later:]
        del r.findings[mark:], self.deferred[later:]
        return pickle.dumps((data, found, deferred), protocol=pickle.HIGHEST_PROTOCOL)

    def _drop_removed_result(self, e: Any) -> Any:
        """A removed tool call takes its result's content with it (the entry stays for the tree)."""
        r = self.r
        m = e.get("message") if isinstance(e, dict) else None
        if not (isinstance(m, dict) and m.get("role") == "toolResult" and m.get("toolCallId") in r.removed_calls):
            return e
        r.entry_id = e.get("id") if isinstance(e.get("id"), str) else None
        m = dict(m)
        mark = len(r.findings)
        r.drop_result(m, "tool-call-removed", TOOL_CALL_MARKER)
        self.deferred.extend(r.findings[mark:])
        del r.findings[mark:]
        return dict(e, message=m)

    def finish(self) -> list[Finding]:
        """The report, once every entry was taken: malformed records are dropped and said so."""
        r, j = self.r, self.session.journal
        r.findings.extend(self.deferred)
        self.deferred = []
        r.entry_id = None
        for span in j.malformed:
            r.line = j.line_of(span.start)
            r.note("malformed-record", "dropped", "$")
        return r.findings

    def head(self) -> bytes:
        """The title slot (if the input had one) and the header, as written."""
        s = self.title_slot
        slot = build_title_slot(s.title, s.source, s.updated_at) if s is not None else b""
        return slot + codec.dumps_line(self.header)


def _given(value: Any) -> Callable[[], Any]:
    return lambda: value


class _Decoded:
    """``peek(i, raw)``, made when first called (most records copied as they are never are)."""

    __slots__ = ("i", "peek", "raw", "value")

    def __init__(self, peek: Callable[[int, bytes], Any], i: int, raw: bytes) -> None:
        self.peek, self.i, self.raw = peek, i, raw
        self.value: Any = _AS_READ  # (not itself: a cycle would keep the bytes until a collection)

    def __call__(self) -> Any:
        if self.value is _AS_READ:
            self.value = self.peek(self.i, self.raw)
        return self.value

    @property
    def decoded(self) -> bool:
        return self.value is not _AS_READ


def _one_key_each(raw: bytes) -> bool:
    """Whether no object of the JSON text ``raw`` gives a key twice (False when that cannot be
    told: a text Python's parser refuses, or nests too deeply for it)."""
    try:
        json.loads(raw, object_pairs_hook=_no_twice)
    except (ValueError, RecursionError):
        return False
    return True


def _no_twice(pairs: list[tuple[str, Any]]) -> None:
    if len({key for key, _ in pairs}) != len(pairs):
        raise ValueError("a key given twice")


def _has_signed_call(value: Any) -> bool:
    """Whether ``value`` holds a tool call with a thought signature anywhere (the only blocks whose
    removal takes a tool result's content too), found without recursion."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if v.get("type") == "toolCall" and isinstance(v.get("thoughtSignature"), str) and v["thoughtSignature"]:
                return True
            stack.extend(x for x in v.values() if isinstance(x, dict | list))
        elif isinstance(v, list):
            stack.extend(x for x in v if isinstance(x, dict | list))
    return False


def _with_session(session: Session | str | os.PathLike[str], rules: RedactRules, run: Any) -> Any:
    """``run(session, matcher)``; a bad rule is reported before the session is read."""
    matcher = build_matcher(rules)
    if isinstance(session, Session):
        return run(session, matcher)
    from omp_session.model.session import open_session

    with open_session(session) as s:
        return run(s, matcher)


def redact(session: Session | str | os.PathLike[str], rules: RedactRules | None = None) -> RedactResult:
    """The redacted header, title slot and entries of ``session`` (a Session or a path), and the
    report, in memory (:func:`redact_to` streams a big session to a file instead). Nothing is
    written; see :func:`write_redacted`. Malformed records are dropped (they cannot be scanned
    structurally) and reported."""
    rules = rules or RedactRules()

    def run(s: Session, matcher: Matcher) -> RedactResult:
        job = _Job(s, rules, matcher)
        entries, lines = map(list, zip(*job.entries(), strict=True)) if len(s) else ([], [])
        return RedactResult(job.header, entries, job.title_slot, job.finish(), s.path, lines)

    result: RedactResult = _with_session(session, rules, run)
    return result


class _Discard:
    """Where a check writes: nowhere."""

    def write(self, data: bytes) -> None:
        pass


def redact_to(session: Session | str | os.PathLike[str], rules: RedactRules | None,
              out: str | os.PathLike[str] | None, *, force: bool = False) -> RedactReport:
    """Redact ``session`` straight into ``out``, one record at a time (memory stays bounded
    whatever the session's size); the same bytes and report as :func:`redact` then
    :func:`write_redacted`. ``out`` is written atomically (see store/atomic.py: a device or FIFO
    is streamed into); refused when it is the input, or exists without ``force``. Errors in the
    title slot or header come before anything is written. ``out`` None: a check, the same
    report and nothing written."""
    rules = rules or RedactRules()
    target = None if out is None else Path(out)

    def run(s: Session, matcher: Matcher) -> RedactReport:
        job = _Job(s, rules, matcher)
        sink: Any = contextlib.nullcontext(_Discard()) if target is None else open_output(
            target, force=force, error=RedactError, source=s.path,
            in_place="is the input session; redact never writes in place")
        with sink as f:
            f.write(job.head())
            j = s.journal
            # records are decoded and dropped, making no cycles: the collector's passes walked
            # every object the session keeps for nothing (in one process at 1 GB, 16.0-16.8 s of
            # CPU without them, 17.0-18.5 s with them; gc_pause)
            with gc_paused():
                for piece in interleaved(j.entry_pieces(range(len(s))), job.piece, j.size):
                    data, found, deferred = pickle.loads(piece)
                    f.write(data)
                    job.r.findings += found
                    job.deferred += deferred
        return RedactReport(job.finish(), s.path, target)

    report: RedactReport = _with_session(session, rules, run)
    return report


def write_redacted(result: RedactResult, out: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Write ``result`` to ``out`` atomically (a temp file in the same directory, then a rename).

    Refuses the input file itself, and an existing ``out`` unless ``force``. On any failure
    nothing is left behind: not the temp file, not a partial ``out``.
    """
    target = Path(out)
    write_new_file(target, [result.to_bytes()], force=force, error=RedactError, source=result.source,
                   in_place="is the input session; redact never writes in place")
    return target

