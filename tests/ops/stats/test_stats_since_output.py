"""``stats --since 7d`` (an age, as on list/search/sync) and ``stats -o/--output FILE`` with the
format taken from the suffix, ``--html`` kept as its alias (issue 15, item 10)."""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path

import pytest

import builders
from builders import usage
from omp_session.cli import cli
from omp_session.errors import StatsOptionError
from omp_session.js.date import to_iso
from omp_session.ops.stats.group import parse_window, zone
from omp_session.ops.stats.report import stats

DAY_MS = 86_400_000


def _ago(ms: int) -> str:
    return to_iso(int(time.time() * 1000) - ms)


@pytest.fixture
def session(tmp_path: Path) -> Path:
    """Spending 2 days ago (input 20) and 10 days ago (input 100)."""
    entries = []
    for n, (age, tokens) in enumerate(((10 * DAY_MS, 100), (2 * DAY_MS, 20))):
        ts = _ago(age)
        entries.append(builders.entry(f"a{n}", f"a{n - 1}" if n else None, timestamp=ts,
                                      message=builders.assistant("ok", usage=usage(tokens, 1, 0.5),
                                                                 timestamp=builders.TS)))
    path = tmp_path / "sessions" / "-w" / "2026-01-01T00-00-00-000Z_s.jsonl"
    return builders.write_session(path, entries, head=builders.header("s", timestamp=_ago(11 * DAY_MS), cwd="/w"))


def _cli(*args: str) -> tuple[int, str, str]:
    r = builders.invoke(cli, "stats", *args)
    return r.exit_code, r.stdout, r.stderr


# ----- --since 7d -------------------------------------------------------------------------------


def test_since_takes_an_age(session: Path) -> None:
    assert stats([session], since="7d", tz="UTC", cache=False).total.billed.input == 20
    assert stats([session], since="264h", tz="UTC", cache=False).total.billed.input == 20 + 100
    assert stats([session], until="7d", tz="UTC", cache=False).total.billed.input == 100
    assert stats([session], since="9000m", until="3d", tz="UTC", cache=False).total.billed.input == 0


def test_an_age_is_counted_back_from_now() -> None:
    before = time.time() * 1000
    w = parse_window("7d", "30m", zone("UTC"))
    after = time.time() * 1000
    assert w.since is not None and w.until is not None
    assert before - 7 * DAY_MS <= w.since <= after - 7 * DAY_MS
    assert before - 1_800_000 <= w.until <= after - 1_800_000


@pytest.mark.parametrize("text", ["7", "d", "7w", "-7d", "7 d", "1.5d"])
def test_what_is_not_an_age_is_still_refused(text: str) -> None:
    with pytest.raises(StatsOptionError, match="7d"):
        parse_window(text, None, zone("UTC"))


def test_cli_since_age(session: Path) -> None:
    code, out, err = _cli(str(session), "--since", "7d", "--json", "--tz", "UTC")
    assert code == 0, err
    assert json.loads(out)["total"]["billed"]["input"] == 20
    code, _, err = _cli(str(session), "--since", "7y")
    assert code == 2 and "7d" in err


# ----- -o/--output ------------------------------------------------------------------------------


def test_output_html_is_the_html_page(session: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.html", tmp_path / "b.HTML"
    assert _cli(str(session), "--tz", "UTC", "--html", str(a))[0] == 0
    code, out, err = _cli(str(session), "--tz", "UTC", "-o", str(b))
    assert code == 0, err
    assert out == ""  # the page is the result: no table on stdout, as with --html
    page_a, page_b = a.read_text(), b.read_text()
    assert page_b.startswith("<!DOCTYPE html>") or page_b.lstrip().lower().startswith("<!doctype html>")
    assert page_a == page_b
    code, _, err = _cli(str(session), "--output", str(b))
    assert code == 1 and "already exists" in err
    assert _cli(str(session), "--output", str(b), "--force")[0] == 0


def test_output_json_and_csv_by_suffix(session: Path, tmp_path: Path) -> None:
    code, out, err = _cli(str(session), "--tz", "UTC", "--json")
    assert code == 0, err
    assert _cli(str(session), "--tz", "UTC", "-o", str(tmp_path / "r.json"))[0] == 0
    assert json.loads((tmp_path / "r.json").read_text()) == json.loads(out)
    code, out, err = _cli(str(session), "--tz", "UTC", "--csv")
    assert _cli(str(session), "--tz", "UTC", "-o", str(tmp_path / "r.csv"))[0] == 0
    assert list(csv.reader(io.StringIO((tmp_path / "r.csv").read_text()))) == list(csv.reader(io.StringIO(out)))


def test_output_and_stdout_formats_together(session: Path, tmp_path: Path) -> None:
    code, out, err = _cli(str(session), "--tz", "UTC", "-o", str(tmp_path / "r.html"), "--json")
    assert code == 0, err
    assert json.loads(out)["total"]["billed"]["input"] == 120 and (tmp_path / "r.html").is_file()


@pytest.mark.parametrize("args", [("-o", "report.txt"), ("-o", "report"), ("--html", "a.html", "-o", "b.html")])
def test_output_usage_errors(session: Path, tmp_path: Path, args: tuple[str, ...]) -> None:
    code, _, err = _cli(str(session), *(str(tmp_path / a) if a.startswith(("report", "a.", "b.")) else a
                                          for a in args))
    assert code == 2, err
    assert not list(tmp_path.glob("report*")) and not list(tmp_path.glob("*.html"))
