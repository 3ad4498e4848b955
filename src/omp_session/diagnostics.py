"""Findings about a session file: stable codes, a severity and a location.

``CODES`` is the one list of diagnostic codes. Like pypa/packaging's ``_Validator(added=...)``,
each code knows the spec check it stands for, how serious it is and what it means; whatever
reports findings (``validate``, the reader, ``show``) takes the severity from here, and
docs/diagnostics.md's table is checked against it (tests/test_diagnostics.py), so the code, the
report and the documentation cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, NamedTuple

__all__ = ["CODES", "Code", "Diagnostic", "Severity", "Summary", "code_info", "format_location", "severity_count",
           "summarize"]


def format_location(path: str | None, line: int | None, offset: int | None, entry_id: str | None) -> str:
    """``path, line N, byte N, entry ID`` with the parts that are known."""
    parts = [path] if path else []
    if line is not None:
        parts.append(f"line {line}")
    if offset is not None:
        parts.append(f"byte {offset}")
    if entry_id is not None:
        parts.append(f"entry {entry_id}")
    return ", ".join(parts)


class Severity(StrEnum):
    ERROR = "error"      # omp cannot load/resume the file, or misbehaves on it
    WARNING = "warning"  # omp tolerates it, but data is lost or ambiguous
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding. ``line`` is 1-based (physical line), ``offset`` a byte offset."""

    code: str
    severity: Severity
    message: str
    line: int | None = None
    offset: int | None = None
    entry_id: str | None = None
    path: str | None = None

    def location(self) -> str:
        return format_location(self.path, self.line, self.offset, self.entry_id)

    def __str__(self) -> str:
        where = self.location()
        return f"{where}: {self.severity.value}: {self.message} [{self.code}]" if where else \
            f"{self.severity.value}: {self.message} [{self.code}]"

    @classmethod
    def of(cls, code: str, message: str, *, severity: Severity | None = None, line: int | None = None,
           offset: int | None = None, entry_id: str | None = None, path: str | None = None) -> Diagnostic:
        """A finding of a registered code (KeyError otherwise), with the registry's severity unless
        ``severity`` is given: only a code whose ``Code.also`` lists other severities needs it."""
        info = code_info(code)
        return cls(code, severity if severity is not None else info.severity, message, line=line,
                   offset=offset, entry_id=entry_id, path=path)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "severity": self.severity.value, "message": self.message}
        for key in ("path", "line", "offset", "entry_id"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


# Most serious first: the order of ``Summary.counts`` and what "worst" means.
_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


@dataclass(frozen=True, slots=True)
class Code:
    """One diagnostic code, as a row of the table in docs/diagnostics.md.

    ``severity`` is what a finding of this code gets unless its call site says otherwise;
    ``also`` lists the other severities some of its findings carry (``summary`` says when), so
    those call sites must pass one. ``spec`` names the spec checks (S14's V-numbers, sections
    S...) or the issue the code comes from; empty when none does.
    """

    code: str
    severity: Severity
    spec: str
    summary: str
    also: tuple[Severity, ...] = ()

    @property
    def severities(self) -> tuple[Severity, ...]:
        return (self.severity, *self.also)


_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO

# In the order of docs/diagnostics.md. A new code goes here and in that table (the test says
# which row it expects); a code is never renamed or reused, since --json output and scripts key
# on it.
#
# blob-malformed-ref is a warning in validate but an info in Session.diagnostics
# (model/session.py, when a blob store is given); validate replaces the reader's finding with
# its own, so only Session users see the info. tests/test_diagnostics.py records it as known.
_ALL = (
    Code("not-a-session", _E, "issue 4",
         "empty, binary, or no JSON object with a string `type` (PNG, random bytes, text)"),
    Code("unreadable", _E, "", "(CLI only) the file cannot be read"),
    Code("invalid-header", _E, "V3, S1.4.4", 'the first record is not `{"type":"session","id":<string>}`'),
    Code("header-not-first", _E, "V3", "the header exists but not as the first record"),
    Code("extra-header", _W, "S1.2.9", 'a second `type:"session"` record'),
    Code("title-slot-invalid", _E, "V2, S1.2.5",
         'the first line is a `type:"title"` record omp rejects (`v`, field types, `source`)'),
    Code("title-slot-short", _E, "V2, S1.2.8", "valid slot shorter than 256 bytes"),
    Code("title-slot-long", _W, "V2", "valid slot longer than 256 bytes"),
    Code("title-slot-pad", _W, "V2", "slot `pad` holds more than spaces"),
    Code("title-mismatch", _I, "V17, S1.2.6",
         "header title differs from the slot title, or slot empty while header has one"),
    Code("version-legacy", _W, "V4, S5",
         "no/`null`/<2 version (warning): ids regenerated and entries chained (branches flattened); "
         "2 (info): migrated on next write", also=(_I,)),
    Code("version-invalid", _W, "V4, S5.1", "`version` not a number, or not an integer"),
    Code("version-future", _I, "V4", "version > 3"),
    Code("newer-omp-features", _I, "issue 17",
         "a header `version` > 3, entry types or fields on known entry types that no omp we know "
         "(up to 18.3.4) writes: one finding per file naming the first few; the file loads losslessly"),
    Code("header-cwd-missing", _W, "S2.1", "header without `cwd`"),
    Code("omp-cannot-open", _E, "V1, V11, S1.4.6-7",
         "a `null` record; a `message` entry without a message object; a non-string header `cwd`"),
    Code("migration-non-object", _E, "S1.4.6", "a non-object record in a v1 file"),
    Code("usage-cost-invalid", _E, "V11, S1.4.7",
         "assistant `usage` without a `cost` object (error), or whose `cost.total` is not a number "
         "(warning)", also=(_W,)),
    Code("assistant-content-invalid", _E, "V11, S1.4.7",
         'assistant `content` not an array: error when missing/non-iterable or on a `stopReason:"error"` '
         "turn, warning for a string", also=(_W,)),
    Code("message-role-invalid", _W, "V11", "message without a string `role`"),
    Code("ttsr-rules-invalid", _E, "V12",
         "`injectedRules` not an array: error when not iterable, warning for a string or non-string "
         "elements", also=(_W,)),
    Code("malformed-record", _W, "V1, S1.4.3", "a line that is not JSON"),
    Code("trailing-garbage", _W, "V1", "text after a record on its line"),
    Code("glued-records", _W, "V1, S1.4.9", "a second record glued onto a line (missing LF, two writers)"),
    Code("truncated-record", _W, "V1, S1.4.3",
         "the last record cut off (crash mid-write), possibly inside a UTF-8 character; says how many "
         "lines it swallows"),
    Code("nul-fill", _W, "issue 4", "NUL padding (preallocated block after power loss)"),
    Code("multiline-record", _I, "V1", "a record spread over several lines"),
    Code("non-object-record", _W, "V1, S1.4.6", "a number/string/array/boolean record"),
    Code("no-final-newline", _W, "V13, S1.4.9", "last line without LF"),
    Code("bom", _W, "V14", "leading UTF-8 BOM"),
    Code("invalid-utf8", _W, "V14", "invalid UTF-8 (first bad byte located)"),
    Code("omp-stops-saving", _E, "S1.4.8",
         "BOM or invalid UTF-8 in a file below 8 MiB that omp must rewrite (malformed records, migration)"),
    Code("crlf", _I, "issue 4", "CRLF line endings"),
    Code("entry-type-invalid", _W, "V5", "missing/non-string `type`"),
    Code("entry-id-invalid", _W, "V5", "missing/non-string/empty `id`"),
    Code("entry-parent-invalid", _W, "V5, S1.6.2", '`parentId` absent, `""`, or not string/null'),
    Code("entry-timestamp-invalid", _W, "V5, S6.4", "`timestamp` missing or not `Date.parse`-able"),
    Code("duplicate-id", _W, "V6, S1.6.1", "an id used by an earlier, different entry"),
    Code("duplicate-record", _W, "V6", "the same record written twice"),
    Code("tree-cycle", _E, "V6, S1.6.1", "duplicate ids make an entry its own ancestor"),
    Code("parent-missing", _W, "V6, S1.6.2", "`parentId` names no entry"),
    Code("self-parent", _W, "V7", "`parentId` is the entry's own id"),
    Code("parent-cycle", _W, "V7, S1.6.3", "parent links loop"),
    Code("compaction-ref-missing", _W, "V8",
         "`firstKeptEntryId`/`providerReplayThroughEntryId` names no entry"),
    Code("compaction-ref-off-path", _W, "V8", "that entry is not on the compaction's branch"),
    Code("label-target-missing", _W, "V8, S6.6", "`label.targetId` names no entry"),
    Code("branch-summary-from", _W, "V8", '`fromId` neither `parentId` nor `"root"` with null parent'),
    Code("tool-result-orphan", _W, "V8", "a toolResult whose call is not on its branch"),
    Code("tool-call-dangling", _W, "V8", "a toolCall with no result although the branch continues"),
    Code("blob-missing", _W, "V9", "`blob:sha256:<hex>` with no blob in the store"),
    Code("blob-malformed-ref", _W, "V9", "a `blob:sha256:` string that is not 64 lowercase hex"),
    Code("blob-hash-mismatch", _W, "V9", "the blob's content does not hash to its name"),
    Code("leaf-not-message", _I, "V10, S6.1",
         "the last record is a label, unknown type, side-branch `model_usage` or non-object"),
    Code("content-truncated", _I, "V15", "a string ends with omp's truncation notice"),
    Code("custom-message-invalid", _W, "V16", "bad `content`, `display` or `attribution`"),
    Code("model-change-legacy", _W, "V19", "`model_change` without a string `model`"),
    Code("parent-session", _I, "V18", "`parentSession` present (path or id)"),
    Code("filename-id-mismatch", _I, "V20", "`<timestamp>_<id>.jsonl` name vs header id"),
    Code("repair-quarantine", _I, "issue 15",
         "the file is a quarantine written by `repair` (`<session>.quarantine`, formerly `.quarantine.jsonl`), "
         "not a session; not checked"),
)

CODES: Mapping[str, Code] = MappingProxyType({c.code: c for c in _ALL})


def code_info(code: str) -> Code:
    """The registry entry of ``code``; KeyError naming the registry for a code nobody registered."""
    try:
        return CODES[code]
    except KeyError:
        raise KeyError(f"unregistered diagnostic code {code!r}: add it to CODES in omp_session/diagnostics.py "
                       "and to docs/diagnostics.md") from None


class Summary(NamedTuple):
    counts: dict[Severity, int]  # every severity, most serious first, zeros included
    worst: str | None  # the code of the first of the most serious findings; None when there are none


def severity_count(n: int, severity: str) -> str:
    """``2 warnings``, ``1 error``, ``3 info``: a count of findings as ``show`` and ``validate`` say it."""
    return f"{n:,} {severity}" + ("s" if n != 1 and severity != "info" else "")


def summarize(diagnostics: Iterable[Diagnostic]) -> Summary:
    """How many findings of each severity, and the code that matters most (for a one-line status
    such as ``show``'s: "2 errors (omp-cannot-open), 5 warnings")."""
    counts = dict.fromkeys(sorted(Severity, key=_RANK.__getitem__), 0)
    worst: Diagnostic | None = None
    for d in diagnostics:
        counts[d.severity] += 1
        if worst is None or _RANK[d.severity] < _RANK[worst.severity]:
            worst = d
    return Summary(counts, worst.code if worst is not None else None)
