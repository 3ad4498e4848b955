"""omp_session.diagnostics: the code registry, checked against the source that emits codes and
against docs/diagnostics.md, so the three cannot drift apart (issue 14)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from omp_session import diagnostics
from omp_session.diagnostics import CODES, Diagnostic, Severity, code_info, summarize
from omp_session.ops.validate import check
from omp_session.ops.validate.report import MAX_PER_CODE, Report

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "omp_session"
DOC = ROOT / "docs" / "diagnostics.md"

_CODE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")

# Registered before anything emits them; their summary must say "reserved".
RESERVED: frozenset[str] = frozenset()

# Call sites known to disagree with the registry, to be fixed in their own module: (file under
# src/omp_session, code, severity). Once one is fixed, the test asks for its entry to go.
KNOWN_DRIFT = {
    # The reader reports what validate calls a warning as an info (validate replaces the
    # reader's finding); model/session.py should take the registry's severity.
    ("model/session.py", "blob-malformed-ref", Severity.INFO),
}


@dataclass(frozen=True)
class Emission:
    """A call that creates a finding of a literal code: ``severity`` is None when the call site
    leaves it to the registry."""

    file: str
    line: int
    code: str
    severity: Severity | None


def _strings(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        body, orelse = _strings(node.body), _strings(node.orelse)
        return body + orelse if body is not None and orelse is not None else None
    return None


def _severities(node: ast.expr) -> list[Severity] | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Severity":
        return [Severity[node.attr]]
    if isinstance(node, ast.IfExp):
        body, orelse = _severities(node.body), _severities(node.orelse)
        return body + orelse if body is not None and orelse is not None else None
    return None


def _callee(call: ast.Call) -> str:
    f = call.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        owner = f.value.id if isinstance(f.value, ast.Name) else ""
        return f"{owner}.{f.attr}" if owner == "Diagnostic" else f.attr
    return ""


def _emissions(source: str, rel: str) -> list[Emission]:
    """Findings made by ``Diagnostic(code, severity, ...)``, ``_diag(code, severity, ...)``,
    ``Diagnostic.of(code, ..., severity=...)`` and the report helpers ``add([entry,] code,
    message, severity=...)``. A set's ``add(x)`` takes one argument, so it is never taken for one."""
    out: list[Emission] = []
    for call in ast.walk(ast.parse(source)):
        if not isinstance(call, ast.Call):
            continue
        name = _callee(call)
        if name not in ("Diagnostic", "Diagnostic.of", "add", "_diag") or len(call.args) < 2:
            continue
        at = next((i for i, a in enumerate(call.args[:2]) if _strings(a) is not None), None)
        if at is None:
            continue  # a code in a variable: a wrapper passing one on
        code_node = call.args[at]
        codes = _strings(code_node) or []
        assert all(_CODE.match(c) for c in codes), f"{rel}:{call.lineno}: {codes} do not look like codes"
        if name in ("Diagnostic", "_diag"):
            sev_node: ast.expr | None = call.args[at + 1]
        else:
            sev_node = next((k.value for k in call.keywords if k.arg == "severity"), None)
        sevs = _severities(sev_node) if sev_node is not None else None
        assert sev_node is None or sevs is not None, f"{rel}:{call.lineno}: a severity the test cannot read"
        if sevs is None:
            out.extend(Emission(rel, call.lineno, c, None) for c in codes)
        elif (isinstance(code_node, ast.IfExp) and isinstance(sev_node, ast.IfExp)
              and ast.dump(code_node.test) == ast.dump(sev_node.test)):  # each code with its own
            out.extend(Emission(rel, call.lineno, c, s) for c, s in zip(codes, sevs, strict=True))
        else:
            out.extend(Emission(rel, call.lineno, c, s) for c in codes for s in sevs)
    return out


EMISSIONS = [e for path in sorted(SRC.rglob("*.py"))
             for e in _emissions(path.read_text("utf-8"), path.relative_to(SRC).as_posix())]


def _where(found: list[Emission]) -> str:
    return ", ".join(f"{e.file}:{e.line}" for e in found)


# ----------------------------------------------------------------- the registry against the source


def test_every_emitted_code_is_registered() -> None:
    unknown = [e for e in EMISSIONS if e.code not in CODES]
    assert not unknown, "unregistered codes (add them to CODES and docs/diagnostics.md): " + "; ".join(
        f"{e.code} at {e.file}:{e.line}" for e in unknown)


def test_every_registered_code_is_emitted_or_reserved() -> None:
    emitted = {e.code for e in EMISSIONS}
    assert sorted(CODES.keys() - emitted - RESERVED) == []
    assert sorted(RESERVED & emitted) == [], "emitted now: no longer reserved"
    for code in RESERVED:
        assert "reserved" in CODES[code].summary, code


def test_explicit_severities_are_registered_ones() -> None:
    drift = {(e.file, e.code, e.severity) for e in EMISSIONS
             if e.code in CODES and e.severity is not None and e.severity not in CODES[e.code].severities}
    assert drift - KNOWN_DRIFT == set(), "a call site disagrees with the registry's severity"
    assert KNOWN_DRIFT - drift == set(), "fixed: remove it from KNOWN_DRIFT"


def test_every_registered_severity_is_used() -> None:
    """``also`` must not promise a severity no call site gives, nor hide one that one does."""
    for c in CODES.values():
        if not c.also:
            continue
        used = {e.severity for e in EMISSIONS if e.code == c.code}
        assert used == set(c.severities), (c.code, used)


def test_validate_takes_severities_from_the_registry() -> None:
    """In ops/validate a call site names a severity only for a code that has several, and always
    for those: the registry decides the rest, so the two cannot disagree."""
    for e in EMISSIONS:
        if not e.file.startswith("ops/validate/"):
            continue
        several = bool(CODES[e.code].also)
        assert (e.severity is not None) == several, f"{e.code} at {e.file}:{e.line}"


def test_scanner_reads_every_call_shape() -> None:
    source = """
Diagnostic("unreadable", Severity.ERROR, "m", path=p)
Diagnostic.of("not-a-session", "m", path=p)
Diagnostic.of("usage-cost-invalid", "m", severity=Severity.WARNING)
self._diag("tree-cycle", Severity.ERROR, "m")
report.add("header-not-first" if c else "extra-header", "m", offset=1)
report.add("glued-records" if g else "crlf", "m", severity=Severity.WARNING if g else Severity.INFO)
self.add(i, "ttsr-rules-invalid", "m", severity=Severity.ERROR if f else Severity.WARNING)
add(k, code, "m")
seen.add("not-a-code")
"""
    assert [(e.line, e.code, e.severity) for e in _emissions(source, "x.py")] == [
        (2, "unreadable", Severity.ERROR), (3, "not-a-session", None), (4, "usage-cost-invalid", Severity.WARNING),
        (5, "tree-cycle", Severity.ERROR), (6, "header-not-first", None), (6, "extra-header", None),
        (7, "glued-records", Severity.WARNING), (7, "crlf", Severity.INFO),
        (8, "ttsr-rules-invalid", Severity.ERROR), (8, "ttsr-rules-invalid", Severity.WARNING),
    ]
    with pytest.raises(AssertionError, match="cannot read"):
        _emissions('Diagnostic("bom", severity_of(x), "m")', "x.py")


def test_codes_validate_replaces_are_registered() -> None:
    assert check._SESSION_CODES_REPLACED - CODES.keys() == set()


# ----------------------------------------------------------------- the registry itself


def test_registry_is_well_formed() -> None:
    assert len(diagnostics._ALL) == len(CODES), "a code registered twice"
    for name, c in CODES.items():
        assert name == c.code and _CODE.match(name), name
        assert c.severity not in c.also and len(set(c.also)) == len(c.also), name
        assert c.summary and c.summary == c.summary.strip(), name
        assert "|" not in c.summary + c.spec, f"{name}: a | breaks the Markdown table"


def test_code_info() -> None:
    assert code_info("tree-cycle") is CODES["tree-cycle"]
    assert code_info("tree-cycle").severity is Severity.ERROR
    with pytest.raises(KeyError, match="unregistered diagnostic code 'no-such-code'"):
        code_info("no-such-code")


def test_diagnostic_of_takes_the_registry_severity() -> None:
    d = Diagnostic.of("crlf", "CRLF", offset=4, path="f.jsonl")
    assert d == Diagnostic("crlf", Severity.INFO, "CRLF", offset=4, path="f.jsonl")
    assert Diagnostic.of("usage-cost-invalid", "m", severity=Severity.WARNING).severity is Severity.WARNING
    with pytest.raises(KeyError):
        Diagnostic.of("no-such-code", "m")


def test_report_takes_the_registry_severity_and_keeps_it_past_the_cap() -> None:
    report = Report("f.jsonl", None)
    for _ in range(MAX_PER_CODE + 3):
        report.add("nul-fill", "NUL")
    report.add("version-legacy", "v2", severity=Severity.INFO)
    found = report.result()
    assert [(d.code, d.severity) for d in found[-2:]] == [("version-legacy", Severity.INFO),
                                                          ("nul-fill", Severity.WARNING)]
    assert found[-1].message == "3 more findings of this kind are not listed"
    assert {d.severity for d in found if d.code == "nul-fill"} == {Severity.WARNING}
    with pytest.raises(KeyError):
        report.add("no-such-code", "m")


def test_summarize() -> None:
    found = [Diagnostic("crlf", Severity.INFO, "m"), Diagnostic("bom", Severity.WARNING, "m"),
             Diagnostic("tree-cycle", Severity.ERROR, "m"), Diagnostic("omp-cannot-open", Severity.ERROR, "m")]
    counts, worst = summarize(found)
    assert list(counts.items()) == [(Severity.ERROR, 2), (Severity.WARNING, 1), (Severity.INFO, 1)]
    assert worst == "tree-cycle"  # the first of the most serious
    assert summarize(found[:2]).worst == "bom"
    empty = summarize([])
    assert empty.worst is None and set(empty.counts.values()) == {0} and len(empty.counts) == len(Severity)


# ----------------------------------------------------------------- docs/diagnostics.md


def _doc_rows() -> list[list[str]]:
    lines = DOC.read_text("utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| code | severity | meaning | spec |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def _registry_row(c: diagnostics.Code) -> list[str]:
    """The registry's columns of the doc's table: code, severity, meaning, spec."""
    return [f"`{c.code}`", " / ".join(s.value for s in c.severities), c.summary, c.spec or "—"]


def test_doc_table_is_the_registry() -> None:
    rows = _doc_rows()
    doc = [row[:4] for row in rows]
    expected = [_registry_row(c) for c in CODES.values()]
    for got, want in zip(doc, expected, strict=False):
        assert got == want, "docs/diagnostics.md row differs from CODES; the registry says:\n| " + " | ".join(want)
    assert [r[0] for r in doc] == [r[0] for r in expected], "the doc's codes differ from CODES (or their order)"
    assert all(len(row) == 6 and all(row) for row in rows), "every row has all six cells"
