"""``omp-session stats`` as ccusage users expect it (issue 15): days by default with each day's
models below them (also in --json and --csv), a compact table for narrow terminals, 5-hour billing
blocks, and --html kept as a hidden alias of -o."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import builders
from builders import usage
from omp_session.cli import cli
from omp_session.cli._style import width
from omp_session.cli.stats import BLOCK_CSV_FIELDS, CSV_FIELDS

SONNET, GPT = "anthropic/sonnet", "openai/gpt-5"
LONG = "amazon-bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0"


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
    """Two sessions: on 2026-03-01 (UTC) sonnet $0.75 and gpt-5 $1.00, on 2026-03-02 gpt-5 $0.125."""
    folder = tmp_path / "sessions" / "-w"
    _session(folder, "aaaa1111", [("2026-03-01T10:20:00.000Z", SONNET, 1000, 0.5),
                                  ("2026-03-01T11:00:00.000Z", GPT, 2000, 1.0),
                                  ("2026-03-01T23:30:00.000Z", SONNET, 100, 0.25)])
    _session(folder, "bbbb2222", [("2026-03-02T09:00:00.000Z", GPT, 400, 0.125)])
    return tmp_path / "sessions"


def _stats(root: Path, *args: str, columns: int = 120) -> Result:
    return CliRunner(env={"COLUMNS": str(columns)}).invoke(cli, ["stats", "--all", "--root", str(root), "--no-cache",
                                                                 *args])


def _ok(result: Result) -> str:
    assert result.exit_code == 0, result.output
    return result.stdout


def _header(lines: list[str]) -> list[str]:
    return [cell.strip() for cell in lines[1].split("┃")[1:-1]]


def _labels(out: str) -> list[str]:
    """The first cell of each body row."""
    return [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]


# ----- days by default, with their models ---------------------------------------------------------


def test_day_is_the_default_with_each_days_models_below_it(root: Path) -> None:
    out = _ok(_stats(root, "--tz", "UTC"))
    assert _header(out.splitlines())[0] == "day"
    assert _labels(out) == ["2026-03-01", f"└ {GPT}", f"└ {SONNET}", "2026-03-02", f"└ {GPT}", "total"]
    row = next(line for line in out.splitlines() if f"└ {SONNET}" in line)
    assert "$0.75" in row and " 2 " in row  # its own requests and cost, not the day's
    assert _labels(_ok(_stats(root, "--tz", "UTC", "--no-models"))) == ["2026-03-01", "2026-03-02", "total"]
    # the day follows --tz: 23:30 UTC is the next day in Berlin
    assert _labels(_ok(_stats(root, "--tz", "Europe/Berlin")))[:6] == [
        "2026-03-01", f"└ {GPT}", f"└ {SONNET}", "2026-03-02", f"└ {SONNET}", f"└ {GPT}"]


@pytest.mark.parametrize("by", ["week", "month"])
def test_weeks_and_months_have_their_models_too(root: Path, by: str) -> None:
    labels = _labels(_ok(_stats(root, "--tz", "UTC", "--by", by)))
    assert labels[1:3] == [f"└ {GPT}", f"└ {SONNET}"] and labels[-1] == "total"


@pytest.mark.parametrize("by", ["session", "model", "provider", "project"])
def test_other_groupings_have_no_model_rows(root: Path, by: str) -> None:
    labels = _labels(_ok(_stats(root, "--tz", "UTC", "--by", by)))
    assert len(labels) >= 2 and labels[-1] == "total" and not [x for x in labels if x.startswith("└")]
    assert "models" not in json.loads(_ok(_stats(root, "--tz", "UTC", "--by", by, "--json")))["groups"][0]


def test_json_rows_carry_their_models(root: Path) -> None:
    doc = json.loads(_ok(_stats(root, "--tz", "UTC", "--json")))
    assert doc["by"] == "day"
    first, second = doc["groups"]
    assert list(first) == ["key", "billed", "current", "models"]
    assert [(m["key"], m["billed"]["cost"], m["billed"]["requests"]) for m in first["models"]] == [
        (GPT, 1.0, 1), (SONNET, 0.75, 2)]
    assert list(first["models"][0]) == ["key", "billed", "current"]
    for g in (first, second):  # a day's models add up to the day
        for field in ("input", "output", "totalTokens", "requests"):
            assert sum(m["billed"][field] for m in g["models"]) == g["billed"][field]
            assert sum(m["current"][field] for m in g["models"]) == g["current"][field]
    plain = json.loads(_ok(_stats(root, "--tz", "UTC", "--json", "--no-models")))
    assert [list(g) for g in plain["groups"]] == [["key", "billed", "current"]] * 2
    assert plain["total"] == doc["total"]


def test_csv_model_rows_follow_their_day(root: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(_ok(_stats(root, "--tz", "UTC", "--csv")))))
    assert list(rows[0]) == list(CSV_FIELDS) and CSV_FIELDS[-1] == "model"
    assert [(r["key"], r["model"]) for r in rows] == [("2026-03-01", ""), ("2026-03-01", GPT),
                                                      ("2026-03-01", SONNET), ("2026-03-02", ""),
                                                      ("2026-03-02", GPT)]
    day = rows[0]
    assert float(day["billed_cost"]) == 1.75
    assert sum(int(r["billed_input"]) for r in rows[1:3]) == int(day["billed_input"]) == 3100
    plain = list(csv.DictReader(io.StringIO(_ok(_stats(root, "--tz", "UTC", "--csv", "--no-models")))))
    assert [(r["key"], r["model"]) for r in plain] == [("2026-03-01", ""), ("2026-03-02", "")]
    sessions = list(csv.DictReader(io.StringIO(_ok(_stats(root, "--tz", "UTC", "--csv", "--by", "session")))))
    assert [r["model"] for r in sessions] == ["", ""] and sessions[0]["id"] == "aaaa1111"


# ----- widths and --compact ------------------------------------------------------------------------


@pytest.mark.parametrize(("columns", "names"), [
    (60, ["day", "tokens", "cost"]),
    (80, ["day", "reqs", "tokens", "cost", "tokens (cur)", "cost (cur)"]),
    (120, ["day", "reqs", "input", "output", "tokens", "cost", "tokens (cur)", "cost (cur)"]),
    (140, ["day", "reqs", "input", "output", "cache read", "cache write", "tokens", "cost", "tokens (cur)",
           "cost (cur)"]),
])
def test_the_table_fits_the_terminal(root: Path, columns: int, names: list[str]) -> None:
    lines = _ok(_stats(root, "--tz", "UTC", columns=columns)).splitlines()
    assert all(width(line) <= columns for line in lines)
    assert _header(lines) == names
    assert f"└ {SONNET}" in "\n".join(lines) and "$1.88" in lines[-3]  # the total row, in every layout


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_compact_is_key_tokens_and_cost_at_any_width(root: Path, columns: int) -> None:
    lines = _ok(_stats(root, "--tz", "UTC", "--compact", columns=columns)).splitlines()
    assert _header(lines) == ["day", "tokens", "cost"] and all(width(line) <= columns for line in lines)
    assert _labels("\n".join(lines))[:3] == ["2026-03-01", f"└ {GPT}", f"└ {SONNET}"]


def test_a_table_too_wide_for_the_terminal_becomes_compact(root: Path) -> None:
    _session(root / "-w", "cccc3333", [("2026-03-01T12:00:00.000Z", LONG, 10, 0.5)])
    # a model folded over two lines reads badly: where the base table cannot keep it whole, compact;
    # the input/output columns go first (61 cells of model name, 55 of numbers)
    for columns, names in ((100, ["day", "tokens", "cost"]),
                           (120, ["day", "reqs", "tokens", "cost", "tokens (cur)", "cost (cur)"]),
                           (140, ["day", "reqs", "input", "output", "tokens", "cost", "tokens (cur)", "cost (cur)"])):
        lines = _ok(_stats(root, "--tz", "UTC", columns=columns)).splitlines()
        assert all(width(line) <= columns for line in lines)
        assert _header(lines) == names
        assert any(f"└ {LONG}" in line for line in lines)


def test_session_titles_may_fold_in_the_full_table(root: Path) -> None:
    title = "refactor the importer so that it streams " * 3
    path = next((root / "-w").glob("*aaaa1111.jsonl"))
    head, *rest = path.read_text().splitlines(keepends=True)
    path.write_text(json.dumps({**json.loads(head), "title": title.strip()}) + "\n" + "".join(rest))
    lines = _ok(_stats(root, "--tz", "UTC", "--by", "session", columns=80)).splitlines()
    assert "reqs" in _header(lines) and all(width(line) <= 80 for line in lines)
    label = "".join(line.split("│")[1] for line in lines if line.startswith("│") and "bbbb2222" not in line)
    assert "refactor the importer" in label and "(aaaa1111)" in label.replace(" ", "")


# ----- 5-hour blocks ------------------------------------------------------------------------------

NOW = "2026-03-02T10:30:00.000Z"  # 90 minutes into the block of the 09:00 request


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("omp_session.cli.stats.now_ms", lambda: _ms(NOW))


def test_blocks_json(root: Path, clock: None) -> None:
    doc = json.loads(_ok(_stats(root, "--blocks", "--tz", "Europe/Berlin", "--json")))
    assert doc["now"] == "2026-03-02T11:30:00+01:00" and doc["tz"] == "Europe/Berlin"
    shape = [(b["kind"], b["start"], b["end"], b["billed"]["requests"], b["active"]) for b in doc["blocks"]]
    assert shape == [
        ("block", "2026-03-01T11:00:00+01:00", "2026-03-01T16:00:00+01:00", 2, False),
        ("gap", "2026-03-01T16:00:00+01:00", "2026-03-02T00:00:00+01:00", 0, False),
        ("block", "2026-03-02T00:00:00+01:00", "2026-03-02T05:00:00+01:00", 1, False),
        ("gap", "2026-03-02T05:00:00+01:00", "2026-03-02T10:00:00+01:00", 0, False),
        ("block", "2026-03-02T10:00:00+01:00", "2026-03-02T15:00:00+01:00", 1, True)]
    first, active = doc["blocks"][0], doc["blocks"][-1]
    assert first["firstRequest"] == "2026-03-01T11:20:00+01:00" and first["lastRequest"] == "2026-03-01T12:00:00+01:00"
    assert [m["key"] for m in first["models"]] == [GPT, SONNET] and first["projected"] is None
    assert active["elapsedMinutes"] == 90 and active["remainingMinutes"] == 210
    # $0.125 in the 90 minutes since its first request: 300 minutes at that rate
    assert active["projected"] == {"totalTokens": round(440 * 300 / 90), "cost": pytest.approx(0.125 * 300 / 90)}
    assert doc["total"]["billed"]["cost"] == sum(b["billed"]["cost"] for b in doc["blocks"]) == 1.875
    utc = json.loads(_ok(_stats(root, "--blocks", "--tz", "UTC", "--json")))
    assert utc["blocks"][0]["start"] == "2026-03-01T10:00:00+00:00"


def test_blocks_table(root: Path, clock: None) -> None:
    out = _ok(_stats(root, "--blocks", "--tz", "Europe/Berlin"))
    lines = out.splitlines()
    assert _header(lines) == ["block", "status", "models", "reqs", "input", "output", "tokens", "cost"]
    assert _labels(out) == ["2026-03-01 11:00", "(gap)", "2026-03-02 00:00", "(gap)", "2026-03-02 10:00",
                            "projected", "total"]
    assert "to 12:00" in out and "8h 00m idle" in out and "gpt-5, sonnet" in out
    active = next(line for line in lines if line.startswith("│2026-03-02 10:00"))
    assert "ACTIVE 1h 30m in, 3h 30m left" in active and "$0.12" in active
    projected = next(line for line in lines if "projected" in line)
    assert "by 15:00" in projected and "$0.42" in projected
    assert "times in Europe/Berlin" in out
    assert "│2026-03-01 10:00" in _ok(_stats(root, "--blocks", "--tz", "UTC"))


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_blocks_fit_the_terminal(root: Path, clock: None, columns: int) -> None:
    lines = _ok(_stats(root, "--blocks", "--tz", "UTC", columns=columns)).splitlines()
    assert all(width(line) <= columns for line in lines)
    assert _header(lines)[0] == "block" and _header(lines)[-2:] == ["tokens", "cost"]
    compact = _ok(_stats(root, "--blocks", "--tz", "UTC", "--compact", columns=columns)).splitlines()
    assert _header(compact) == ["block", "status", "tokens", "cost"]


def test_blocks_csv_and_output_file(root: Path, clock: None, tmp_path: Path) -> None:
    text = _ok(_stats(root, "--blocks", "--tz", "UTC", "--csv"))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert tuple(rows[0]) == BLOCK_CSV_FIELDS
    assert [(r["kind"], r["active"], r["billed_requests"]) for r in rows] == [
        ("block", "false", "2"), ("gap", "false", "0"), ("block", "false", "1"), ("gap", "false", "0"),
        ("block", "true", "1")]
    assert rows[0]["models"] == f"{GPT};{SONNET}" and rows[0]["projected_cost"] == ""
    assert float(rows[-1]["projected_cost"]) == pytest.approx(0.125 * 300 / 90)
    out = tmp_path / "blocks.csv"
    result = _stats(root, "--blocks", "--tz", "UTC", "-o", str(out))
    assert _ok(result) == "" and out.read_text() == text


def test_blocks_chart(root: Path, clock: None) -> None:
    out = _ok(_stats(root, "--blocks", "--tz", "UTC", "--chart"))
    assert out.startswith("billed cost by 5-hour block")
    assert "2026-03-01 10:00" in out and "(gap)" not in out and "█" in out and "$1.50" in out


@pytest.mark.parametrize(("args", "message"), [
    (("--blocks", "--by", "day"), "give --by or --blocks, not both"),
    (("--by", "model", "--blocks"), "give --by or --blocks, not both"),
    (("--blocks", "-o", "x.html"), "--blocks writes .json or .csv"),
])
def test_blocks_usage_errors(root: Path, tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    result = _stats(root, *(str(tmp_path / a) if a.endswith(".html") else a for a in args))
    assert result.exit_code == 2 and message in result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stdout == ""
    assert not list(tmp_path.glob("*.html"))


# ----- --html, the old spelling of -o FILE.html -----------------------------------------------------


def test_html_still_writes_the_page_and_says_to_use_o(root: Path, tmp_path: Path) -> None:
    old, new = tmp_path / "old.html", tmp_path / "new.html"
    result = _stats(root, "--tz", "UTC", "--html", str(old))
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [f"omp-session: --html is deprecated; use -o {old}",
                                          f"omp-session: wrote {old}"]
    assert _ok(_stats(root, "--tz", "UTC", "-o", str(new))) == ""
    assert old.read_text() == new.read_text() and old.read_text().startswith("<!DOCTYPE html>")
    odd = tmp_path / "page.txt"  # whatever its suffix, as before
    result = _stats(root, "--tz", "UTC", "--html", str(odd))
    assert result.exit_code == 0 and "use -o FILE.html" in result.stderr
    assert odd.read_text() == new.read_text()


def test_help_shows_the_new_flags_and_not_html() -> None:
    result = CliRunner(env={"COLUMNS": "100"}).invoke(cli, ["stats", "--help"])
    assert result.exit_code == 0
    assert "--html" not in result.stdout
    for flag in ("--blocks", "--compact", "--no-models", "[default: day]"):
        assert flag in result.stdout
