"""The command line: every command works, has help and is documented."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from omp_session.cli import cli

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "src" / "omp_session" / "samples" / "sample.jsonl"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_show_json() -> None:
    code, out, _ = run("show", str(SAMPLE), "--json")
    info = json.loads(out)
    assert code == 0 and info["title"] == "Fix CSV importer quoted newlines" and info["entries"] == 14
    assert info["leaf_id"] == "fac25287" and info["diagnostics"] == []


def test_tree_json_marks_the_branch() -> None:
    code, out, _ = run("tree", str(SAMPLE), "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 14
    off = [r["id"] for r in rows if not r["on_branch"]]
    assert set(off) == {"bf760380", "0c843b62", "d1e979c8", "a1b45091"}
    assert [r.get("label") for r in rows if r["id"] == "52592a2f"] == ["diagnosis"]


def test_context_json_follows_the_compaction() -> None:
    code, out, _ = run("context", str(SAMPLE), "--json")
    ctx = json.loads(out)
    assert code == 0
    assert [m["role"] for m in ctx["messages"]] == ["compactionSummary", "user", "assistant"]
    assert ctx["models"] == {"default": "anthropic/claude-sonnet-4-5"} and ctx["thinkingLevel"] == "high"


def test_demo_prints_all_three_views() -> None:
    code, out, _ = run("demo")
    assert code == 0 and "Fix CSV importer" in out and "compactionSummary" in out and "diagnosis" in out


@pytest.mark.parametrize("args", [("show", "/nonexistent/x.jsonl"), ("tree", "/")])
def test_errors_are_one_line_exit_1(args: tuple[str, ...]) -> None:
    code, _out, err = run(*args)
    assert code == 1 and err.startswith("omp-session: ") and err.count("\n") == 1 and "Traceback" not in err


def test_usage_error_exits_2() -> None:
    code, _, _ = run("show")
    assert code == 2


def test_every_command_has_help_and_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    for name, command in cli.commands.items():
        assert command.help, name
        code, out, _ = run(name, "--help")
        assert code == 0 and "Usage:" in out
        assert f"omp-session {name}" in readme, name


def test_module_entry_point() -> None:
    out = subprocess.run([sys.executable, "-m", "omp_session", "--help"], capture_output=True, text=True, check=True)
    assert "show" in out.stdout


def test_demo_shows_labels_and_bracketed_text_verbatim() -> None:
    code, out, _ = run("demo")
    assert code == 0 and "[diagnosis]" in out


def test_every_help_fits_80_columns_and_shows_no_markup(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 80 columns no line of any command's --help (subcommands of groups too) is wider, and no
    reStructuredText markup from the docstrings (``x``) shows."""
    monkeypatch.setenv("COLUMNS", "80")
    pages: list[tuple[str, str]] = [("omp-session", run("--help")[1])]
    for name, command in cli.commands.items():
        pages.append((name, run(name, "--help")[1]))
        for sub in getattr(command, "commands", {}):
            pages.append((f"{name} {sub}", run(name, sub, "--help")[1]))
    wide = [(name, line) for name, out in pages for line in out.splitlines() if len(line) > 80]
    marked = [(name, line) for name, out in pages for line in out.splitlines() if "``" in line]
    assert wide == [] and marked == []
