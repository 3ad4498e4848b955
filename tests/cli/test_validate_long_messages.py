"""A diagnostic can quote a value a megabyte long (a parentId of a million backslashes): the
validate report shows it cut, at once (rich's markup escaping is quadratic on such runs; this
took over 20 minutes), and --json keeps the whole message."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from omp_session.cli import cli


def test_a_megabyte_value_in_a_message_is_cut_in_the_report(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    value = "\\\\" * 300_000
    path.write_text('{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'
                    '{"type":"message","id":"a","parentId":"' + value + '","timestamp":"2026-01-01T00:00:01.000Z",'
                    '"message":{"role":"user","content":"x","timestamp":1}}\n')
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code in (0, 1), result.output
    assert all(len(line) < 2_000 for line in result.output.splitlines())
    as_json = CliRunner().invoke(cli, ["validate", str(path), "--json"])
    messages = [json.loads(line)["message"] for line in as_json.stdout.splitlines()]
    assert any(len(m) > 300_000 for m in messages)  # whole in --json
