"""Bugs found reviewing ``omp-session stats`` (issue 15): tables and bars on terminals too narrow
for them, model names read as rich markup, the status of requests without a time, and blocks
with --since."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import builders
from builders import usage
from omp_session.cli import cli
from omp_session.cli._style import width

SONNET, GPT = "anthropic/sonnet", "openai/gpt-5"


def _ms(ts: str) -> int:
    return int(datetime.fromisoformat(ts).timestamp() * 1000)


def _session(folder: Path, sid: str, calls: list[tuple[str, str, int, float]]) -> None:
    entries = []
    for n, (ts, model, tokens, cost) in enumerate(calls):
        provider, name = model.split("/", 1)
        entries.append(builders.entry(f"{sid}{n}", f"{sid}{n - 1}" if n else None, timestamp=ts,
                                      message=builders.assistant("ok", provider=provider, model=name, timestamp=None,
                                                                 usage=usage(tokens, tokens // 10, cost))))
    builders.write_session(folder / f"2026-03-01T00-00-00-000Z_{sid}.jsonl", entries,
                           head=builders.header(sid, timestamp="2026-03-01T00:00:00.000Z", cwd="/w"))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions" / "-w"
    _session(folder, "aaaa1111", [("2026-03-01T10:20:00.000Z", SONNET, 1000, 0.5),
                                  ("2026-03-01T11:00:00.000Z", GPT, 2000, 1.0),
                                  ("2026-03-01T23:30:00.000Z", SONNET, 100, 0.25)])
    _session(folder, "bbbb2222", [("2026-03-02T09:00:00.000Z", GPT, 400, 0.125)])
    return tmp_path / "sessions"


def _stats(root: Path, *args: str, columns: int = 120) -> Result:
    return CliRunner(env={"COLUMNS": str(columns)}).invoke(cli, ["stats", "--all", "--root", str(root), "--no-cache",
                                                                 "--tz", "UTC", *args])


def _ok(result: Result) -> str:
    assert result.exit_code == 0, result.output
    return result.stdout


NOW = "2026-03-02T10:30:00.000Z"  # 90 minutes into the block of the 09:00 request


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("omp_session.cli.stats.now_ms", lambda: _ms(NOW))


# ----- too narrow for any table ---------------------------------------------------------------------


@pytest.mark.parametrize("columns", [10, 13, 20, 25, 28, 34, 37, 40])
@pytest.mark.parametrize(("args", "shown"), [
    ((), ["2026-03-01", "2026-03-02", "$1.75", "$0.75", "$1.00", "$0.12", "$1.88", "3.4k", "2.2k"]),
    (("--by", "session"), ["aaaa1111", "bbbb2222", "$1.75", "$0.12", "$1.88"]),
    (("--blocks",), ["2026-03-01", "2026-03-02", "ACTIVE", "$1.50", "$0.25", "$0.12", "$1.88"]),
])
def test_every_row_and_number_is_shown_at_any_width(root: Path, clock: None, columns: int, args: tuple[str, ...],
                                                     shown: list[str]) -> None:
    out = _ok(_stats(root, *args, columns=columns))
    lines = out.splitlines()
    assert all(width(line) <= columns for line in lines), out
    # a table cut at the terminal's edge loses its right-hand columns: every one ends in a border
    assert all(line[-1] in "┓┃┩│┤┘" for line in lines if line[:1] in "┏┃┡│├└"), out
    flat = "".join(line.strip() for line in lines)
    for text in shown:
        assert text.replace(" ", "") in flat.replace(" ", ""), (text, out)


@pytest.mark.parametrize("columns", [13, 20, 30])
def test_bars_keep_their_values_at_any_width(root: Path, columns: int) -> None:
    out = _ok(_stats(root, "--chart", columns=columns))
    lines = out.splitlines()
    assert all(width(line) <= columns for line in lines), out
    assert "$1.75" in out and "$0.12" in out and "█" in out


# ----- model names are text, not markup -------------------------------------------------------------


def test_a_model_name_with_brackets_is_shown_as_it_is(tmp_path: Path, clock: None) -> None:
    odd = ["p/x[/bold]", "p/[red]y", "openrouter/meta-llama/llama-3"]
    _session(tmp_path / "s" / "-w", "cccc", [("2026-03-02T10:00:00.000Z", m, 10, 0.5) for m in odd])
    for args in ((), ("--blocks",), ("--blocks", "--compact"), ("--chart",), ("--blocks", "--chart")):
        out = _ok(_stats(tmp_path / "s", *args, columns=200))
        if args in ((), ("--blocks",)):
            # the provider goes, the model keeps its own slashes
            assert "x[/bold]" in out and "[red]y" in out and "meta-llama/llama-3" in out, (args, out)


# ----- requests without a time ------------------------------------------------------------------------


def test_requests_without_a_time_have_no_to_time(tmp_path: Path, clock: None) -> None:
    folder = tmp_path / "s" / "-w"
    entries = [builders.entry("u0", None, timestamp="not a time",
                              message=builders.assistant("ok", timestamp=None, usage=usage(10, 1, 0.5)))]
    builders.write_session(folder / "2026-03-01T00-00-00-000Z_u.jsonl", entries,
                           head=builders.header("u", timestamp="2026-03-01T00:00:00.000Z", cwd="/w"))
    out = _ok(_stats(tmp_path / "s", "--blocks", columns=200))
    row = next(line for line in out.splitlines() if line.startswith("│(unknown)"))
    assert "$0.50" in row and " to " not in row and "to │" not in row


# ----- blocks and --since ----------------------------------------------------------------------------


def test_since_inside_a_block_keeps_the_block(root: Path, clock: None) -> None:
    # the 09:00 request opened the active block; --since 09:30 leaves it out but not its block
    _session(root / "-w", "cccc3333", [("2026-03-02T10:00:00.000Z", GPT, 100, 0.5)])
    doc = json.loads(_ok(_stats(root, "--blocks", "--json", "--since", "2026-03-02T09:30")))
    (active,) = doc["blocks"]
    assert active["start"] == "2026-03-02T09:00:00+00:00" and active["active"] is True
    assert active["firstRequest"] == "2026-03-02T10:00:00+00:00" and active["remainingMinutes"] == 210
    assert active["billed"]["cost"] == doc["total"]["billed"]["cost"] == 0.5
