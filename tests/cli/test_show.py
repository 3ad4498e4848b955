"""``show`` reports what ``validate`` reports (issue 15, item 5), and ``show``, ``tree`` and
``context`` refuse a file that is not a session in one line (item 12)."""

from __future__ import annotations

import json
import os
from functools import partial
from pathlib import Path

import pytest

import builders
from builders import assistant, entry, header, jsonl, stamp, user
from omp_session.cli import cli

run = partial(builders.run, cli)


def _cut_mid_write(tmp_path: Path) -> Path:
    """A session whose last record was cut inside a UTF-8 character (a crash mid-write): omp reads
    it, but can never rewrite it, so whatever is added after resuming never reaches the disk."""
    records = [header("s1", cwd="/p"), entry("aaaaaaaa", None, timestamp=stamp(1), message=user("hello")),
               entry("bbbbbbbb", "aaaaaaaa", timestamp=stamp(2), message=assistant("hi"))]
    last = jsonl([entry("cccccccc", "bbbbbbbb", timestamp=stamp(3), message=user("h\u00e9llo"))]).encode()
    path = tmp_path / "cut.jsonl"
    path.write_bytes(jsonl(records).encode() + last[: last.index(b"\xa9")])
    return path


def test_show_reports_validates_findings_on_a_file_cut_mid_write(tmp_path: Path) -> None:
    path = _cut_mid_write(tmp_path)
    code, out, _ = run("validate", "--json", str(path))
    found = [json.loads(x) for x in out.splitlines()]
    assert code == 1 and "omp-stops-saving" in {d["code"] for d in found}
    code, out, _ = run("show", str(path), "--json")
    info = json.loads(out)
    assert code == 0
    assert [(d["code"], d["severity"]) for d in info["diagnostics"]] == [(d["code"], d["severity"]) for d in found]
    errors = sum(d["severity"] == "error" for d in found)
    warnings = sum(d["severity"] == "warning" for d in found)
    assert info["diagnostics_summary"] == {"error": errors, "warning": warnings, "info": 0}
    assert info["diagnostics_worst"] == "omp-stops-saving"
    code, out, _ = run("show", str(path))
    problems = next(line for line in out.splitlines() if line.lstrip().startswith("problems"))
    assert problems.split(None, 1)[1] == f"1 error (omp-stops-saving), {warnings} warnings"
    assert "[omp-stops-saving]" in out


def test_show_json_keeps_its_fields(tmp_path: Path) -> None:
    sample = Path(__file__).resolve().parents[2] / "src" / "omp_session" / "samples" / "sample.jsonl"
    _, out, _ = run("show", str(sample), "--json")
    info = json.loads(out)
    assert list(info) == ["path", "id", "title", "title_source", "cwd", "created", "version", "migrated", "size",
                          "parent_session", "entries", "entry_types", "malformed_records", "leaf_id",
                          "branch_length", "branches", "branch_tips", "labels", "models", "usage",
                          "diagnostics_summary", "diagnostics_worst", "diagnostics"]
    assert info["diagnostics_summary"] == {"error": 0, "warning": 0, "info": 0} and info["diagnostics_worst"] is None
    _, out, _ = run("show", str(sample))
    assert out.splitlines()[-1].split() == ["problems", "none"]


def _text_file(tmp_path: Path) -> Path:
    path = tmp_path / "hostname"
    path.write_text("builder-7\n")
    return path


def _empty(tmp_path: Path) -> Path:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    return path


def _binary(tmp_path: Path) -> Path:
    path = tmp_path / "image.jsonl"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    return path


@pytest.mark.parametrize("command", ["show", "tree", "context"])
@pytest.mark.parametrize("make", [_text_file, _empty, _binary])
def test_a_file_that_is_not_a_session_is_one_line_exit_1(command: str, make: object, tmp_path: Path) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    code, out, err = run(command, os.fspath(path))
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and err.startswith(f"omp-session: {path}: not an omp session file")


def test_a_damaged_session_without_its_header_is_still_shown(tmp_path: Path) -> None:
    path = tmp_path / "headless.jsonl"
    path.write_text(jsonl([entry("aaaaaaaa", None, timestamp=stamp(1), message=user("hello"))]))
    for command in ("show", "tree", "context"):
        code, _out, err = run(command, str(path))
        assert code == 0 and "not an omp session" not in err, command
    _, out, _ = run("show", str(path), "--json")
    assert json.loads(out)["diagnostics_worst"] == "invalid-header"


def test_styles_only_on_a_terminal_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from omp_session.cli._style import Styler

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert Styler()("x", "bold", "red") == "\x1b[1;31mx\x1b[0m"
    monkeypatch.setenv("NO_COLOR", "")  # empty: not set, as no-color.org says
    assert Styler()("x", "dim") == "\x1b[2mx\x1b[0m"
    monkeypatch.setenv("NO_COLOR", "1")
    assert Styler()("x", "bold") == "x"
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert Styler()("x", "bold") == "x"


def test_piped_text_is_plain(tmp_path: Path) -> None:
    path = _cut_mid_write(tmp_path)
    for command in ("show", "tree", "context"):
        code, out, _ = run(command, str(path))
        assert code == 0 and "\x1b" not in out and out.endswith("\n"), command


def test_show_lists_the_worst_findings_first_and_a_screenful_at_most(tmp_path: Path) -> None:
    # twelve missing blobs (warnings) and a file cut mid-write (an error, last in the file)
    image = {"type": "image", "data": "blob:sha256:" + "ab" * 32, "mimeType": "image/png"}
    records = [header("s1", cwd="/p")]
    parent = None
    for k in range(12):
        ident = f"{k:08x}"
        records.append(entry(ident, parent, timestamp=stamp(k), message=user([image])))
        parent = ident
    last = jsonl([entry("ffffffff", parent, timestamp=stamp(20), message=user("h\u00e9llo"))]).encode()
    path = tmp_path / "many.jsonl"
    path.write_bytes(jsonl(records).encode() + last[: last.index(b"\xa9")])
    total = len(json.loads(run("show", str(path), "--json")[1])["diagnostics"])
    code, out, _ = run("show", str(path))
    assert code == 0
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("problems"))
    shown = lines[at + 1:]
    assert len(shown) == 11 and "[omp-stops-saving]" in shown[0] and "error" in shown[0]
    assert all(": warning: " in line for line in shown[1:10])
    assert shown[10] == f"  … and {total - 10} more: omp-session validate {path} lists them all"
    assert str(path) not in "\n".join(shown[:10])  # the path is the one shown above


@pytest.mark.parametrize("n", [3, 8, 9, 40])
def test_show_lists_eight_labels_at_most_after_their_count(tmp_path: Path, n: int) -> None:
    records: list[object] = [header("s1", cwd="/p")]
    records += [entry(f"e{k}", f"e{k - 1}" if k else None, timestamp=stamp(1), message=user(f"q{k}"))
                for k in range(n)]
    records += [entry(f"l{k}", f"e{n - 1}" if k == 0 else f"l{k - 1}", type="label", timestamp=stamp(2),
                      targetId=f"e{k}", label=f"mark-{k}") for k in range(n)]
    path = tmp_path / "labels.jsonl"
    path.write_text(jsonl(records))
    code, out, _ = run("show", str(path))
    row = next(line for line in out.splitlines() if line.lstrip().startswith("labels"))
    pairs = ", ".join(f"e{k}=mark-{k}" for k in range(min(n, 8)))
    assert code == 0 and row.split(None, 1)[1] == (pairs if n <= 8 else f"{n}: {pairs}, …")
    code, out, _ = run("show", str(path), "--json")
    assert json.loads(out)["labels"] == {f"e{k}": f"mark-{k}" for k in range(n)}


def _fourteen_missing_blobs(path: Path) -> Path:
    """A session whose 14 images are missing from the blob store: 14 warnings, 4 past the ten shown."""
    image = {"type": "image", "data": "blob:sha256:" + "ab" * 32, "mimeType": "image/png"}
    records = [header("s1", cwd="/p")]
    for k in range(14):
        records.append(entry(f"{k:08x}", f"{k - 1:08x}" if k else None, timestamp=stamp(k), message=user([image])))
    path.parent.mkdir()
    path.write_text(jsonl(records))
    return path


def test_at_a_narrow_terminal_the_validate_command_is_shown_whole(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The line naming ``validate`` is for copying: where it does not fit, the command goes on a
    line of its own instead of being cut."""
    from screen import run_main

    path = _fourteen_missing_blobs(tmp_path / ("a-rather-long-folder-name-" * 3) / "many.jsonl")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    lines = run_main(monkeypatch, ["show", str(path)], tty=False, columns=80).splitlines()
    assert lines[-2:] == ["  … and 4 more; this lists them all:", f"  omp-session validate {path}"]
    wide = run_main(monkeypatch, ["show", str(path)], tty=False, columns=400).splitlines()
    assert wide[-1] == f"  … and 4 more: omp-session validate {path} lists them all"


def test_counts_and_tokens_have_thousands_separators(tmp_path: Path) -> None:
    records: list[object] = [header("s1", cwd="/p")]
    parent = None
    for k in range(1001):
        records.append(entry(f"e{k}", parent, timestamp=stamp(1), message=user(f"q{k}")))
        parent = f"e{k}"
    records.append(entry("a", parent, timestamp=stamp(2),
                         message=assistant("hi", usage={"input": 1234567, "output": 7654, "cacheRead": 0,
                                                         "cacheWrite": 0, "totalTokens": 1242221,
                                                         "cost": {"total": 1.5}})))
    path = tmp_path / "s.jsonl"
    path.write_text(jsonl(records))
    code, out, _ = run("show", str(path))
    rows = {line.split(None, 1)[0]: line.split(None, 1)[1] for line in out.splitlines()
            if line.startswith(" ") and not line.startswith("  ")}
    assert code == 0
    assert rows["entries"] == "1,002 (message 1,002)"
    assert rows["leaf"] == "a (branch of 1,002 entries)"
    assert out.count("$1.5000 · 1,234,567 in / 7,654 out") == 2


def test_the_validate_line_is_measured_in_terminal_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Wide characters in the path: the line naming ``validate`` is kept whole only when its
    cells (not its characters) fit; else the command goes on a line of its own."""
    from screen import run_main

    from omp_session.cli._style import width

    path = _fourteen_missing_blobs(tmp_path / ("日本語のフォルダ" * 2) / "many.jsonl")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    cells = len(f"  … and 4 more: omp-session validate {path} lists them all") + 2
    lines = run_main(monkeypatch, ["show", str(path)], tty=False, columns=cells).splitlines()
    assert [x for x in lines if width(x) > cells and not x.startswith("  omp-session validate ")] == []
    assert lines[-1] == f"  omp-session validate '{path}'"  # (shlex quotes what is not ASCII)


def test_show_problems_row_names_every_code_of_its_worst_severity(tmp_path: Path) -> None:
    # a file cut mid-record has two warnings of two codes; the row read "2 warnings
    # (no-final-newline)", as if both were that one
    records = [header("s1", cwd="/p"), entry("aaaaaaaa", None, timestamp=stamp(1), message=user("hello")),
               entry("bbbbbbbb", "aaaaaaaa", timestamp=stamp(2), message=assistant("hi"))]
    path = tmp_path / "cut.jsonl"
    path.write_bytes(jsonl(records).encode() + b'{"type":"message","id":"cc')
    code, out, _ = run("show", str(path), "--json")
    info = json.loads(out)
    assert code == 0
    codes = [d["code"] for d in info["diagnostics"] if d["severity"] == "warning"]
    assert sorted(codes) == ["no-final-newline", "truncated-record"]
    code, out, _ = run("show", str(path))
    problems = next(line for line in out.splitlines() if line.lstrip().startswith("problems"))
    assert code == 0 and problems.split(None, 1)[1] == f"2 warnings ({', '.join(dict.fromkeys(codes))})"


def test_show_problems_row_names_three_codes_then_how_many_more() -> None:
    from omp_session.cli._render import problems_line

    assert problems_line({"error": 0, "warning": 5, "info": 1}, ["a", "b", "c", "d", "e"]) == \
        "5 warnings (a, b, c, 2 more codes), 1 info"
    assert problems_line({"error": 5, "warning": 1, "info": 0}, ["x", "y", "z", "w"]) == \
        "5 errors (x, y, z, 1 more code), 1 warning"
    assert problems_line({"error": 0, "warning": 0, "info": 0}, []) == "none"


def _with_side_calls(tmp_path: Path) -> Path:
    """A side call (model_usage) hanging off the current branch, another off an abandoned one."""
    from builders import usage
    side = {"input": 11000, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 11005,
            "cost": {"input": 0.011, "output": 0.0001, "cacheRead": 0, "cacheWrite": 0, "total": 0.0111}}
    records = [header("s1", cwd="/p"),
               entry("aaaaaaaa", None, timestamp=stamp(1), message=user("hello")),
               entry("dddddddd", "aaaaaaaa", timestamp=stamp(2), type="model_usage", purpose="title",
                     provider="anthropic", model="haiku", usage=side),
               entry("bbbbbbbb", "aaaaaaaa", timestamp=stamp(3),
                     message=assistant("hi", model="sonnet", usage=usage(100, 20, 0.5))),
               entry("eeeeeeee", "aaaaaaaa", timestamp=stamp(4), message=user("abandoned")),
               entry("ffffffff", "eeeeeeee", timestamp=stamp(5), type="model_usage", purpose="title",
                     provider="anthropic", model="haiku", usage=side),
               entry("cccccccc", "bbbbbbbb", timestamp=stamp(6), message=user("more"))]
    path = tmp_path / "s.jsonl"
    path.write_text(jsonl(records))
    return path


def test_show_branch_cost_counts_the_side_calls_hanging_off_the_branch_as_stats_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # omp attaches a side call (model_usage: the title, auto-thinking) to the branch without making
    # it part of it; stats' current view counts it, show's "cost (branch)" did not: every session
    # with a generated title read two current costs
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = _with_side_calls(tmp_path)
    code, out, _ = run("show", str(path), "--json")
    assert code == 0
    mine = json.loads(out)["usage"]
    assert json.loads(out)["leaf_id"] == "cccccccc"
    assert (mine["branch"]["input"], mine["branch"]["output"]) == (11100, 25)  # one side call, not the other's
    assert (mine["all"]["input"], mine["all"]["output"]) == (22100, 30)
    code, out, _ = run("stats", str(path), "--json", "--no-cache")
    assert code == 0
    current = json.loads(out)["total"]["current"]
    assert (current["input"], current["output"], current["cost"]) == (11100, 25, mine["branch"]["cost"])


def test_the_markdown_header_counts_the_branch_as_show_does(tmp_path: Path) -> None:
    path = _with_side_calls(tmp_path)
    code, out, _ = run("export", str(path), "--format", "md", "-o", "-")
    assert code == 0
    head = out.split("\n## ")[0].splitlines()
    assert "- **Tokens and cost (this branch):** 11,100 in · 25 out · \\$0.5111" in head
    assert "- **Models:** anthropic/sonnet" in head  # a side call's model is not the conversation's
