"""``size``'s counts read as ``show``'s do: with thousands separators."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import builders
from builders import entry, header, jsonl, stamp, user
from omp_session.cli import cli

run = partial(builders.run, cli)


def test_size_counts_have_thousands_separators(tmp_path: Path) -> None:
    records: list[object] = [header("s1", cwd="/p")]
    records += [entry(f"e{k}", f"e{k - 1}" if k else None, timestamp=stamp(1), message=user(f"q{k}"))
                for k in range(1234)]
    path = tmp_path / "s.jsonl"
    path.write_text(jsonl(records))
    code, out, _ = run("size", str(path))
    lines = out.splitlines()
    assert code == 0 and lines[0].endswith(", 1,234 entries")
    rows = {line.split()[0]: line.split()[1] for line in lines if line.startswith("  ") and len(line.split()) > 2}
    assert rows["message"] == rows["user"] == "1,234"
