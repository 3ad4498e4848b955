"""A tool output's terminal colour codes are not shown in search snippets: every ANSI escape
sequence (CSI ``ESC [ ... final``, OSC ``ESC ] ... BEL/ST``) goes whole, and the matches stay
marked where they are. The 8-bit forms (U+009B, U+009D...) are not taken for sequences: in
decoded text they are mis-decoded characters (UTF-8 read as Latin-1) far more often."""

from __future__ import annotations

import json
from pathlib import Path

from builders import run
from omp_session.cli import cli
from omp_session.ops.search.index import HIGHLIGHT
from omp_session.ops.search.query import SearchHit, search
from omp_session.ops.search.snippet import plain_snippet, strip_ansi

_OUTPUT = ("\x1b[32m✓\x1b[0m loads the config file \x1b[2m[357ms]\x1b[22m\n"
           "\x1b]8;;http://example.com\x07link\x1b]8;;\x1b\\ \x1b[31mred\x1b[0m \x1b(B\x1b[m config again")


def _root(tmp_path: Path, text: str = _OUTPUT) -> Path:
    root = tmp_path / "sessions"
    bucket = root / "-w"
    bucket.mkdir(parents=True)
    lines = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
         "message": {"role": "user", "content": "run the tests", "timestamp": 1}},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-01-01T00:00:02.000Z",
         "message": {"role": "assistant", "timestamp": 2,
                     "content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "bun test"}}]}},
        {"type": "message", "id": "t1", "parentId": "a1", "timestamp": "2026-01-01T00:00:03.000Z",
         "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "bash", "isError": False, "timestamp": 3,
                     "content": [{"type": "text", "text": text}]}},
    ]
    (bucket / "2026-01-01T00-00-00-000Z_s1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root


def test_strip_ansi_removes_whole_sequences() -> None:
    assert strip_ansi("\x1b[32m✓\x1b[0m ok \x1b[2m[357ms]\x1b[22m") == "✓ ok [357ms]"
    assert strip_ansi("\x1b]8;;http://x\x07link\x1b]8;;\x1b\\ end") == "link end"
    assert strip_ansi("\x1b[31mred\x1b[0m \x1b[1;38;5;208mX\x1b(B\x1b[m") == "red X"
    # UTF-8 read as Latin-1: ” is "â\x80\x9d" and “ is "â\x80\x9c", an 8-bit OSC and ST if taken
    # for controls, and the words between them were lost
    garbled = "“Hello.” He left the building at noon. “Bye.”".encode().decode("latin-1")
    assert strip_ansi(garbled) == garbled
    assert strip_ansi("[32m stays: no ESC") == "[32m stays: no ESC"


def test_a_mark_inside_a_sequence_is_kept_balanced() -> None:
    # FTS5's snippet() may mark a token of the sequence ("32m"): the sequence goes, the marks
    # stay paired (and an empty pair goes too)
    start, end = HIGHLIGHT
    assert plain_snippet(f"\x1b[{start}32m{end}✓ {start}config{end}") == f"✓ {start}config{end}"
    assert plain_snippet("lone \x1b and \x07 bell") == "lone  and  bell"


def test_snippets_have_no_escape_sequences(tmp_path: Path) -> None:
    root = _root(tmp_path)
    hits = search("config", root=root, index_path=tmp_path / "i.sqlite").hits
    assert len(hits) == 1
    start, end = HIGHLIGHT
    assert hits[0].snippet == (f"✓ loads the {start}config{end} file [357ms] link red {start}config{end} again")
    assert hits[0].snippet_text() == "✓ loads the [config] file [357ms] link red [config] again"


def test_a_mis_decoded_text_keeps_its_words_in_the_snippet(tmp_path: Path) -> None:
    root = _root(tmp_path, "“Hello.” He left the building at noon. “Bye.”".encode().decode("latin-1"))
    hits = search("building", root=root, index_path=tmp_path / "i.sqlite").hits
    start, end = HIGHLIGHT
    assert len(hits) == 1 and f"He left the {start}building{end} at noon." in hits[0].snippet


def test_a_hit_made_elsewhere_is_plain_too() -> None:
    # the store's hits (serve --store, search --store, the MCP server) are SearchHits as well
    hit = SearchHit("s", None, "/p", None, "e", "message", "toolResult", "tool_result", None,
                    "\x1b[32m✓\x1b[0m \x02config\x03", 0.0)
    assert hit.snippet == "✓ \x02config\x03"


def test_the_cli_prints_no_escape_sequences(tmp_path: Path) -> None:
    root = _root(tmp_path)
    index = str(tmp_path / "i.sqlite")
    code, out, err = run(cli, "search", "config", "--root", str(root), "--index", index)
    assert code == 0, err
    assert "\x1b" not in out and "\x9b" not in out and "[32m" not in out and "[22m" not in out
    assert "✓ loads the config file [357ms] link red config again" in out
    code, out, err = run(cli, "search", "config", "--root", str(root), "--index", index, "--json")
    assert code == 0, err
    assert json.loads(out)[0]["snippet"] == "✓ loads the [config] file [357ms] link red [config] again"


def test_a_long_coloured_text_is_made_plain_around_the_match() -> None:
    # only a stretch around the match is made plain: it must still start and end cleanly
    from omp_session.ops.search.snippet import cut_snippet, hit_pattern

    pattern = hit_pattern('"needle"')
    assert pattern is not None
    line = "\x1b[32m✓\x1b[0m passes \x1b]8;;http://example.com/" + "x" * 300 + "\x07link\x1b]8;;\x07 \x1b[2m[3ms]\x1b[22m\n"
    for before in range(0, 3000, 97):  # the stretch's start falls everywhere in a line
        text = line * 40 + "p" * before + " the needle here " + line * 40
        got = cut_snippet(text, pattern, 24, ("<", ">"))
        assert got is not None and "<needle>" in got
        assert not any(c in got for c in "\x1b\x07\x9b"), repr(got)
        assert "32m" not in got and "22m" not in got and "8;;" not in got and "example.com" not in got
        assert got.startswith("…") and got.endswith("…")


def test_a_secret_joined_by_the_snippets_cleaning_is_still_redacted(tmp_path: Path) -> None:
    """The shown snippet drops control characters, which can join a key split by one (a NUL, a
    DEL): the redaction of the snippet as shown still masks it (a guard: a review suspected it)."""
    from builders import entry, header, stamp, user, write_session
    from omp_session.mcp_server.tools import Library

    token = "ghp_" + "B1c2D3e4F5g6H7i8J9k0L1m2N3o4P5q6R7s8"
    write_session(tmp_path / "s" / "--p--" / "2026-01-01T00-00-00-000Z_eeee.jsonl", [
        entry("u1", None, timestamp=stamp(1), message=user(f"needle token {token[:12]}\x7f{token[12:]} end")),
    ], head=header("eeee", cwd="/p"))
    hits = Library(tmp_path / "s", redact=True).search_sessions({"query": "needle"})["hits"]
    assert hits and token[4:24] not in hits[0]["snippet"] and "[REDACTED:" in hits[0]["snippet"], hits
