"""redact: secrets out in every encoding, everywhere a string can hide, tree intact (issue 6)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from click.testing import CliRunner

import builders
import omp_session
from builders import ORACLE, assistant, invoke
from omp_session.cli.redact import redact as redact_cli
from omp_session.diagnostics import Severity
from omp_session.errors import PatternError, RedactError, SecretsFileError
from omp_session.format.blobs import MemoryBlobStore
from omp_session.ops.redact.detectors import Matcher, parse_secrets_file
from omp_session.ops.redact.rewrite import RedactRules, redact, write_redacted
from omp_session.ops.validate.check import validate
from omp_session.write.manager import SessionManager

# One sample per built-in detector (made up, in each provider's shape).
BUILTIN = {
    "anthropic-api-key": "sk-ant-api03-Zq8xW2vK9mNpL4rT7yHbC1dF6gJ0sA3eU5iO",
    "openai-api-key": "sk-proj-Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx",
    "google-api-key": "AIzaSyD4k9Lm2Np7Qr1St5Uv8Wx3Yz6Ab0Cd9Ef",
    "aws-access-key-id": "AKIAZ7QX4MPLR2VN8KTY",
    "github-token": "ghp_R4nD0mT0k3nV4lu3F0rT3st1ngPurp0s3sXy",
    "gitlab-token": "glpat-Xy7Wv5Ut3Sr1Qp9On7Ml",
    "slack-token": "xoxb-2837465019-Qw3Er5Ty7Ui9",
    "stripe-key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "huggingface-token": "hf_QwErTyUiOpAsDfGhJkLzXcVbNm1234567890",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyZWRhY3QtdGVzdCJ9.c2lnbmF0dXJlLXZhbHVlLWhlcmU",
}
# Built in, but only with their context; the value checked is the secret part.
CONTEXT = {
    "aws-secret-key": ("aws_secret_access_key = ", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9KxA2LmP"),
    "url-password": ("postgres://admin:", "Pg7pa55wordZ"),
    "authorization-header": ("Authorization: Bearer ", "opaqueBearerCredential42"),
    "env-assignment": ("DATABASE_PASSWORD=", "Tr0ub4dor-and-3"),
}
PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAPEMBODYX\n-----END OPENSSH PRIVATE KEY-----"
PEM_BODY = "b3BlbnNzaC1rZXktdjEAAAAAPEMBODYX"
# User rules: checked in every encoding. Characters that URL-encoding changes are on purpose.
EXPLICIT = "corp/vault+pass=W9 x!"
FROM_FILE = "s3cret-from-dotenv/42+z"
FROM_FILE_QUOTED = "quoted value with # hash"


def b64_cores(value: str) -> list[str]:
    """What of base64(prefix + value + suffix) depends on value alone, for 3 prefix lengths."""
    raw = value.encode()
    out = []
    for k in range(3):
        enc = base64.b64encode(b"P" * k + raw + b"S").decode()
        core = enc[-(-8 * k // 6): (8 * (k + len(raw))) // 6]
        out += [core, core.replace("+", "-").replace("/", "_")]
    return out


def encodings(value: str) -> list[str]:
    return sorted({value, quote(value, safe=""), quote_plus(value), *b64_cores(value)})


def planted_text(tag: str) -> str:
    """Every secret, in every encoding, in one text."""
    parts = [f"[{tag}]"]
    parts += [f"key {v} here" for v in BUILTIN.values()]
    parts += [f"{ctx}{v}" + ("@db.example.com/app" if c == "url-password" else "") for c, (ctx, v) in CONTEXT.items()]
    parts.append(PEM)
    for value in (EXPLICIT, FROM_FILE, FROM_FILE_QUOTED):
        parts.append(f"raw {value} end")
        parts.append(f"url ?q={quote(value, safe='')}&r={quote_plus(value)}")
        for k in range(3):
            blob = ("P" * k + value + "S").encode()
            parts.append("b64 " + base64.b64encode(blob).decode() + " " + base64.urlsafe_b64encode(blob).decode())
    return "\n".join(parts)


def forbidden() -> list[str]:
    out = list(BUILTIN.values()) + [v for _, v in CONTEXT.values()] + [PEM_BODY]
    for value in (EXPLICIT, FROM_FILE, FROM_FILE_QUOTED):
        out += encodings(value)
    return out


def assert_clean(data: bytes) -> None:
    text = data.decode("utf-8")
    left = [v for v in forbidden() if v in text or json.dumps(v)[1:-1] in text]
    assert not left, f"survived: {left}"


@pytest.fixture
def secrets_file(tmp_path: Path) -> Path:
    f = tmp_path / "secrets.env"
    f.write_text(f"# deploy secrets\nexport DEPLOY_KEY={FROM_FILE}\nQUOTED=\"{FROM_FILE_QUOTED}\"\n\nEMPTY=\n")
    return f


def rules(secrets_file: Path, **kw: Any) -> RedactRules:
    return RedactRules(secrets=[EXPLICIT], secrets_files=[secrets_file], **kw)


def make_session(tmp_path: Path, home: Path) -> Path:
    """A session written by SessionManager with the planted text in every place a string can be."""
    cwd = home / "work" / "proj"
    cwd.mkdir(parents=True)
    sm = SessionManager.create(str(cwd), str(tmp_path / "sessions"), blob_store=MemoryBlobStore())
    t = planted_text
    u = sm.append_message({"role": "user", "content": t("user") + f"\nin {cwd}/src and {home}/.ssh/config", "timestamp": 1})
    sm.append_session_init({"systemPrompt": t("system"), "task": t("task"), "tools": ["bash"]})
    call = {"type": "toolCall", "id": "call_1", "name": "bash",
            "arguments": {"command": t("args"), "env": {"nested": [t("deep")], BUILTIN["openai-api-key"]: 1},
                          "headers": {"Authorization": "Bearer plainHeaderCredential9"}}}
    signed_call = {"type": "toolCall", "id": "call_2", "name": "bash", "arguments": {"c": t("signed-call")},
                   "thoughtSignature": "c2lnbmF0dXJl"}
    payload = {"type": "openaiResponsesHistory", "items": [
        {"type": "reasoning", "id": "rs_1", "encrypted_content": "ZW5j", "summary": [{"text": t("payload")}]},
        {"type": "message", "content": [{"type": "output_text", "text": t("payload-msg")}]}]}
    sm.append_message(assistant([
        {"type": "thinking", "thinking": t("thinking")},
        {"type": "thinking", "thinking": t("signed-thinking"), "thinkingSignature": "sig"},
        {"type": "thinking", "thinking": "nothing secret here", "thinkingSignature": "keep-me"},
        {"type": "redactedThinking", "data": "b3BhcXVl"},
        {"type": "text", "text": t("text")},
        {"type": "text", "text": t("signed-text"), "textSignature": "tsig"},
        call, signed_call], api="openai-responses", provider="openai", model="gpt-x", stop_reason="toolUse",
        providerPayload=payload, errorMessage=t("error")))
    sm.append_message({"role": "toolResult", "toolCallId": "call_1", "toolName": "bash", "isError": False,
                       "content": [{"type": "text", "text": t("result")},
                                   {"type": "image", "data": "aW1hZ2U=", "mimeType": "image/png"}],
                       "details": {"stdout": t("details")}, "timestamp": 3})
    sm.append_message({"role": "toolResult", "toolCallId": "call_2", "toolName": "bash", "isError": False,
                       "content": [{"type": "text", "text": t("result-of-signed")}], "timestamp": 4})
    sm.append_message({"role": "bashExecution", "command": t("bash-cmd"), "output": t("bash-out"),
                       "exitCode": 0, "cancelled": False, "truncated": False, "timestamp": 5})
    custom = sm.append_custom_entry("ext-state", {"note": t("custom-data")})
    sm.append_custom_message_entry("ext", t("custom-message"), True, {"more": t("custom-details")})
    sm.append_mode_change("plan", {"plan": t("mode")})
    sm.append_label_change(u, "label " + BUILTIN["github-token"])
    sm.append_message({"role": "user", "content": [{"type": "text", "text": t("user-block")}], "timestamp": 6})
    first = sm.get_leaf_id()
    sm.append_compaction(t("compaction"), "short " + BUILTIN["stripe-key"], first, 1000, details={"f": t("cd")})
    sm.set_session_name("title " + BUILTIN["anthropic-api-key"], "user")
    sm.branch(custom)  # the custom entry gets a second child: a branch
    sm.branch_with_summary(custom, t("branch-summary"), {"d": t("bs-details")})
    sm.append_message({"role": "user", "content": "last", "timestamp": 7})
    sm.close()
    path = sm.get_session_file()
    assert path is not None
    return Path(path)


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home" / "alice"
    return make_session(tmp_path, home), home


def tree_shape(path: Path, ids: bool = True) -> list[tuple[Any, ...]]:
    """(id, parent position, type) per entry; ids of files from before v3 are generated on every
    load (migration), so those compare by position only."""
    with omp_session.open(path) as s:
        entries = list(s.entries)
        migrated = s.migrated
    def get(e: Any, key: str) -> Any:
        return e.get(key) if isinstance(e, dict) else repr(e)  # non-object lines stay as they are

    where = {get(e, "id"): k for k, e in enumerate(entries)}
    return [(get(e, "id") if ids and not migrated else None, where.get(get(e, "parentId")), get(e, "type"))
            for e in entries]


def no_errors(path: Path) -> None:
    errors = [d for d in validate(path) if d.severity == Severity.ERROR]
    assert not errors, errors


# ----- detectors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("category", sorted(BUILTIN))
def test_each_builtin_detector(category: str) -> None:
    out, cats = Matcher().scrub(f"before {BUILTIN[category]} after")
    assert out == f"before [REDACTED:{category}] after" and cats == [category]


@pytest.mark.parametrize("category", sorted(CONTEXT))
def test_context_detectors_redact_only_the_secret(category: str) -> None:
    ctx, value = CONTEXT[category]
    out, cats = Matcher().scrub(ctx + value + "@host")
    assert value not in out and out.startswith(ctx) and cats == [category]


def test_pem_block_and_truncated_pem() -> None:
    assert Matcher().scrub(f"a\n{PEM}\nb")[0] == "a\n[REDACTED:private-key]\nb"
    assert PEM_BODY not in Matcher().scrub(PEM.split("-----END")[0])[0]  # cut-off output still goes


@pytest.mark.parametrize("text", [
    "max_tokens=4096", "the password policy says", "sk-short", "token count: 5", "AKIA is a prefix",
    "see https://example.com/path", "Authorization header missing", "PASSWORD=$DB_PASSWORD",
])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert Matcher().scrub(text) == (text, [])


@pytest.mark.parametrize("k", [0, 1, 2])
@pytest.mark.parametrize("urlsafe", [False, True])
def test_explicit_secret_in_base64_at_every_alignment(k: int, urlsafe: bool) -> None:
    enc = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    text = "x " + enc(b"Q" * k + EXPLICIT.encode() + b" tail").decode() + " y"
    out, cats = Matcher(builtin=False, secrets=[("secret", EXPLICIT)]).scrub(text)
    assert cats == ["secret"] and not any(c in out for c in b64_cores(EXPLICIT))


def test_explicit_secret_url_encoded_both_cases() -> None:
    m = Matcher(builtin=False, secrets=[("secret", EXPLICIT)])
    lower = re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), quote(EXPLICIT, safe=""))
    for form in (quote(EXPLICIT, safe=""), lower, quote_plus(EXPLICIT)):
        assert m.scrub(f"?q={form}&") == ("?q=[REDACTED:secret]&", ["secret"])


def test_custom_pattern_and_named_group() -> None:
    m = Matcher(builtin=False, patterns=[r"ticket-\d+", r"pin=(?P<secret>\d{4})"])
    assert m.scrub("ticket-123 pin=9876")[0] == "[REDACTED:pattern] pin=[REDACTED:pattern]"
    with pytest.raises(PatternError, match="invalid --pattern"):
        Matcher(patterns=["(unclosed"])
    with pytest.raises(PatternError, match="empty string"):
        Matcher(patterns=["x*"])


def test_secrets_file_parsing(tmp_path: Path) -> None:
    f = tmp_path / "a.env"
    f.write_text("A=1\nexport B='single # kept'\nC=\"dq \\\"esc\\\"\" # comment\nD=plain # comment\nE: colon\n")
    assert parse_secrets_file(f) == [("A", "1"), ("B", "single # kept"), ("C", 'dq "esc"'), ("D", "plain"),
                                     ("E", "colon")]
    for bad, why in [("just words", "not a NAME=value"), ("X=\"open", "unterminated"), ("Y='a' b", "after")]:
        f.write_text(f"OK=1\n{bad}\n")
        with pytest.raises(SecretsFileError, match=f":2: .*{why}"):
            parse_secrets_file(f)
    with pytest.raises(SecretsFileError, match="cannot read"):
        parse_secrets_file(tmp_path / "missing.env")


# ----- whole sessions ------------------------------------------------------------------------------

def test_planted_secrets_do_not_survive_anywhere(planted: tuple[Path, Path], secrets_file: Path,
                                                 tmp_path: Path) -> None:
    path, home = planted
    raw = path.read_bytes()
    assert BUILTIN["anthropic-api-key"].encode() in raw and b64_cores(EXPLICIT)[2].encode() in raw
    result = redact(path, rules(secrets_file, paths=True, home=str(home)))
    out = write_redacted(result, tmp_path / "out.jsonl")
    data = out.read_bytes()
    assert_clean(data)
    assert str(home).encode() not in data and b"<cwd>/src and ~/.ssh/config" in data
    assert tree_shape(out) == tree_shape(path)
    no_errors(out)
    found = {f.category for f in result.findings}
    assert set(BUILTIN) | set(CONTEXT) | {"private-key", "secret", "secrets-file", "signed-block",
                                          "secret-key-value", "path-cwd", "path-home"} <= found
    # the report never holds a value
    report = json.dumps([f.to_json() for f in result.findings])
    assert not any(v in report for v in forbidden())


def test_signed_blocks_removed_whole_unsigned_kept(planted: tuple[Path, Path], secrets_file: Path) -> None:
    path, _ = planted
    result = redact(path, rules(secrets_file))
    a = next(e["message"] for e in result.entries if e.get("message", {}).get("role") == "assistant")
    kinds = [(b["type"], b.get("text", "")[:20]) for b in a["content"]]
    assert ("text", "[REDACTED: signed bl") in kinds and ("text", "[REDACTED: tool call") in kinds
    assert {"type": "thinking", "thinking": "nothing secret here", "thinkingSignature": "keep-me"} in a["content"]
    assert {"type": "redactedThinking", "data": "b3BhcXVl"} in a["content"]  # nothing to redact: kept
    assert "providerPayload" not in a  # its signed reasoning item held a secret
    results = {e["message"]["toolCallId"]: e["message"] for e in result.entries
               if e.get("message", {}).get("role") == "toolResult"}
    assert results["call_2"]["content"] == [{"type": "text", "text": "[REDACTED: tool call removed]"}]
    assert results["call_1"]["content"][1]["type"] == "image"  # images stay unless asked
    call = next(b for b in a["content"] if b.get("id") == "call_1")
    assert call["arguments"]["headers"]["Authorization"] == "[REDACTED:secret-key-value]"
    assert "[REDACTED:openai-api-key]" in call["arguments"]["env"]  # a key that is a secret


def test_structural_options(planted: tuple[Path, Path], secrets_file: Path, tmp_path: Path) -> None:
    path, _ = planted
    result = redact(path, rules(secrets_file, drop_tool_output=True, drop_images=True, drop_thinking=True,
                                drop_custom=True))
    out = write_redacted(result, tmp_path / "dropped.jsonl")
    assert tree_shape(out) == tree_shape(path)
    no_errors(out)
    data = out.read_text()
    assert '"type":"thinking"' not in data and '"type":"redactedThinking"' not in data
    assert '"type":"image"' not in data and "aW1hZ2U=" not in data
    for tag in ("result", "details", "bash-out", "custom-data", "custom-message", "custom-details"):
        assert f"[{tag}]" not in data, tag
    custom = next(e for e in result.entries if e["type"] == "custom")
    assert "data" not in custom and custom["customType"] == "ext-state"  # kept: it has children


def test_title_slot_header_and_title_change(planted: tuple[Path, Path], tmp_path: Path) -> None:
    path, _ = planted
    out = write_redacted(redact(path), tmp_path / "t.jsonl")
    first = out.read_bytes().split(b"\n")[0]
    assert len(first) == 255 and b"[REDACTED:anthropic-api-key]" in first
    with omp_session.open(out) as s:
        assert s.header is not None and s.header["title"] == "title [REDACTED:anthropic-api-key]"
        change = next(e for e in s.entries if e["type"] == "title_change")
        assert change["title"] == "title [REDACTED:anthropic-api-key]"
        assert s.labels() and all("ghp_" not in v for v in s.labels().values())


def test_write_is_atomic_and_refuses(planted: tuple[Path, Path], tmp_path: Path) -> None:
    path, _ = planted
    result = redact(path)
    with pytest.raises(RedactError, match="in place"):
        write_redacted(result, path, force=True)
    target = tmp_path / "o.jsonl"
    target.write_text("keep")
    with pytest.raises(RedactError, match="already exists"):
        write_redacted(result, target)
    assert target.read_text() == "keep"
    write_redacted(result, target, force=True)
    assert target.read_bytes() == result.to_bytes()
    with pytest.raises(RedactError, match="cannot write"):
        write_redacted(result, tmp_path / "no-dir" / "o.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_not_a_session(tmp_path: Path) -> None:
    f = tmp_path / "x.jsonl"
    f.write_text('{"hello": 1}\n')
    with pytest.raises(RedactError, match="not a session"):
        redact(f)


def test_corpus_files_keep_their_tree(make_corpus: Callable[[int, int], Path], tmp_path: Path) -> None:
    corpus = make_corpus(61, 40)
    done = 0
    for f in sorted(corpus.glob("*.jsonl")):
        if any(d.severity == Severity.ERROR for d in validate(f)):
            continue  # redaction does not repair: only clean inputs must give clean outputs
        out = write_redacted(redact(f, RedactRules(paths=True, drop_images=True, drop_thinking=True)),
                             tmp_path / f.name)
        keep_ids = b'"version":3' in f.read_bytes()[:1024]
        assert tree_shape(out, keep_ids) == tree_shape(f, keep_ids), f.name
        no_errors(out)
        done += 1
    assert done >= 10


# ----- CLI -----------------------------------------------------------------------------------------

run = partial(invoke, redact_cli)


def test_cli(planted: tuple[Path, Path], secrets_file: Path, tmp_path: Path) -> None:
    path, _ = planted
    out = tmp_path / "cli.jsonl"
    r = run(str(path), "-o", str(out), "--secret", EXPLICIT, "--secrets-from", str(secrets_file), "--report",
            "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["counts"]["anthropic-api-key"] >= 1 and doc["findings"][0]["line"] >= 1
    assert_clean(out.read_bytes())
    assert not any(v in r.output for v in forbidden())
    human = run(str(path), "-o", str(tmp_path / "h.jsonl"), "--report")
    assert human.exit_code == 0 and "wrote" in human.output and "anthropic-api-key: redacted at line" in human.output


@pytest.mark.parametrize(("args", "message"), [
    (["-o", "{out}"], "already exists"),
    (["-o", "{session}"], "in place"),
    (["-o", "{new}", "--pattern", "(x"], "invalid --pattern"),
    (["-o", "{new}", "--secrets-from", "{bad}"], "not a NAME=value line"),
    (["-o", "{new}", "--secrets-from", "{missing}"], "cannot read"),
])
def test_cli_errors_are_one_line(planted: tuple[Path, Path], tmp_path: Path, args: list[str], message: str) -> None:
    path, _ = planted
    (tmp_path / "exists.jsonl").write_text("x")
    (tmp_path / "bad.env").write_text("nonsense\n")
    subst = {"out": tmp_path / "exists.jsonl", "session": path, "new": tmp_path / "new.jsonl",
             "bad": tmp_path / "bad.env", "missing": tmp_path / "missing.env"}
    r = run(str(path), *[a.format(**subst) for a in args])
    assert r.exit_code == 1 and message in r.output and r.output.count("\n") == 1, r.output
    assert not (tmp_path / "new.jsonl").exists() and (tmp_path / "exists.jsonl").read_text() == "x"


def test_cli_check_writes_nothing_and_says_what_it_would_redact(planted: tuple[Path, Path], secrets_file: Path,
                                                                 tmp_path: Path) -> None:
    """``--check``: the report of the redaction ``-o`` would write, nothing written, exit 1 when
    anything would be redacted, 0 when nothing."""
    path, _ = planted
    out = tmp_path / "written.jsonl"
    wrote = run(str(path), "-o", str(out), "--secret", EXPLICIT, "--secrets-from", str(secrets_file), "--json",
                "--report")
    before = sorted(str(p) for p in [*tmp_path.rglob("*"), *path.parent.rglob("*")])
    checked = run(str(path), "--check", "--secret", EXPLICIT, "--secrets-from", str(secrets_file), "--json")
    assert checked.exit_code == 1, checked.output
    doc, written = json.loads(checked.output), json.loads(wrote.output)
    assert doc["output"] is None and doc["counts"] == written["counts"] and doc["findings"] == written["findings"]
    assert doc["findings"] and not any(v in checked.output for v in forbidden())
    human = run(str(path), "--check")
    assert human.exit_code == 1 and " redaction(s) to make, nothing written (" in human.output
    assert "anthropic-api-key: redacted at line" in human.output  # the report comes with --check
    assert sorted(str(p) for p in [*tmp_path.rglob("*"), *path.parent.rglob("*")]) == before
    clean = run(str(out), "--check", "--secret", EXPLICIT, "--secrets-from", str(secrets_file))
    assert clean.exit_code == 0 and clean.output == f"{out}: nothing to redact\n", clean.output
    again = tmp_path / "again.jsonl"  # redacted twice: what the first left stays as it is
    assert run(str(out), "-o", str(again), "--secret", EXPLICIT, "--secrets-from", str(secrets_file)).exit_code == 0
    assert again.read_bytes() == out.read_bytes()
    again.unlink()
    for args in (["-o", str(tmp_path / "x.jsonl")], ["--force"]):
        r = run(str(path), "--check", *args)
        assert r.exit_code == 2 and "--check writes nothing" in r.output
    assert not (tmp_path / "x.jsonl").exists()


def test_cli_usage_and_missing_session(tmp_path: Path) -> None:
    assert run(str(tmp_path / "none.jsonl")).exit_code == 2  # -o is required
    r = run(str(tmp_path / "none.jsonl"), "-o", str(tmp_path / "o.jsonl"))
    assert r.exit_code == 1 and "no such file" in r.output


# ----- the real omp ------------------------------------------------------------------------------

@pytest.mark.oracle
def test_redacted_files_open_in_omp_with_the_same_tree(planted: tuple[Path, Path], secrets_file: Path,
                                                       make_corpus: Callable[[int, int], Path],
                                                       tmp_path: Path) -> None:
    path, home = planted
    pairs: list[tuple[Path, Path]] = []
    outdir = tmp_path / "out"
    outdir.mkdir()
    options = [{}, {"paths": True, "home": str(home)},
               {"drop_tool_output": True, "drop_images": True, "drop_thinking": True, "drop_custom": True}]
    for i, kw in enumerate(options):
        pairs.append((path, write_redacted(redact(path, rules(secrets_file, **kw)), outdir / f"planted{i}.jsonl")))
    for f in sorted(make_corpus(61, 40).glob("*.jsonl")):
        if not any(d.severity == Severity.ERROR for d in validate(f)):
            pairs.append((f, write_redacted(redact(f, RedactRules(paths=True, drop_thinking=True)),
                                            outdir / f"c-{f.name}")))
    listing = tmp_path / "list.txt"
    listing.write_text("".join(f"{a}\n{b}\n" for a, b in pairs))
    proc = subprocess.run([str(ORACLE / "omp-reference"), "load", "--jobs", "4", "--list", str(listing)],
                          capture_output=True, text=True, timeout=300, check=True)
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(records) == 2 * len(pairs)
    for (src, dst), before, after in zip(pairs, records[0::2], records[1::2], strict=True):
        assert after["error"] is None and not after["view_errors"], (dst.name, after["error"], after["view_errors"])
        assert [(n["index"], n["depth"]) for n in after["tree"]] == [(n["index"], n["depth"]) for n in before["tree"]]
        if b'"version":3' in src.read_bytes()[:1024]:  # else omp makes new ids on every migration
            assert [n["id"] for n in after["tree"]] == [n["id"] for n in before["tree"]], dst.name
            assert after["branch"] == before["branch"] and after["leaf_id"] == before["leaf_id"], dst.name
        assert after["loader"]["malformed_records"] == 0 and not after["loader"]["invalid_header"]
        assert after["after_flush"]["changed"] is False, dst.name  # omp has nothing to fix in it


# ----- review fixes -----------------------------------------------------------------------------------

@pytest.mark.parametrize("form", [
    "corp\\/vault+pass=W9 x!",                      # JSON text that escapes "/" (PHP, some Java)
    "\\u0063orp\\u002Fvault\\u002bpass=W9\\u0020x!",  # JSON text with \\uXXXX escapes, either case
    "corp%2Fvault%2Bpass%3DW9%20x!",                 # JavaScript encodeURIComponent keeps "!'()*"
    "corp/vault%2Bpass%3dW9+x%21",                   # partly encoded, "+" for the space
])
def test_explicit_secret_json_escaped_or_partly_url_encoded(form: str) -> None:
    m = Matcher(builtin=False, secrets=[("secret", EXPLICIT)])
    assert m.scrub(f"a {form} b") == ("a [REDACTED:secret] b", ["secret"])


def test_text_starting_like_an_image_url_or_blob_ref_is_scanned(tmp_path: Path) -> None:
    key = BUILTIN["aws-access-key-id"]
    texts = [f"data:image/png;base64,AAAA\nlater: {key}", f"blob:sha256:notahash {key}",
             f"data:image/png;base64,AAAA\n{key}"]
    f = tmp_path / "s.jsonl"
    header = builders.header("01a22de6-8032-77dc-a320-124d5453cf73")
    lines = [header] + [builders.entry(f"e{k}", f"e{k - 1}" if k else None, message=builders.user(t))
                        for k, t in enumerate(texts)]
    builders.write_jsonl(f, lines, compact=False, ensure_ascii=True)
    data = redact(f).to_bytes()
    assert key.encode() not in data and data.count(b"[REDACTED:aws-access-key-id]") == 3


@pytest.mark.parametrize("n", [2000])
def test_cli_nesting_too_deep_even_to_read_is_a_one_line_error(tmp_path: Path, n: int) -> None:
    f = tmp_path / "s.jsonl"
    f.write_bytes(b'{"type":"session","version":3,"id":"01a22de6-8032-77dc-a320-124d5453cf73",'
                  b'"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}\n{"type":"custom","customType":"x",'
                  b'"id":"aaaaaaaa","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","data":'
                  + b"[" * n + b"]" * n + b"}\n")
    res = CliRunner().invoke(redact_cli, [str(f), "-o", str(tmp_path / "o.jsonl")])
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.output
    assert "nested too deeply" in res.output and len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "o.jsonl").exists()


def test_deeply_nested_value_is_a_one_line_error(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    header = (b'{"type":"session","version":3,"id":"01a22de6-8032-77dc-a320-124d5453cf73",'
              b'"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}\n')
    n = 300  # the reader opens it; a recursive walk of it does not fit Python's default stack
    f.write_bytes(header + b'{"type":"custom","customType":"x","id":"aaaaaaaa","parentId":null,'
                  b'"timestamp":"2026-01-01T00:00:00.000Z","data":' + b'{"a":[' * n + b'"x"' + b']}' * n + b'}\n')
    with omp_session.open(f) as s:
        assert len(s.entries) == 1
    with pytest.raises(RedactError, match=r"line 2.*nested too deeply"):
        redact(f)
    res = CliRunner().invoke(redact_cli, [str(f), "-o", str(tmp_path / "o.jsonl")])
    assert res.exit_code == 1 and "nested too deeply" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "o.jsonl").exists()


def test_cli_unusable_output_name_is_a_one_line_error(planted: tuple[Path, Path], tmp_path: Path) -> None:
    path, _ = planted
    out = tmp_path / ("x" * 300 + ".jsonl")  # stat() of it fails with "File name too long"
    res = CliRunner().invoke(redact_cli, [str(path), "-o", str(out)])
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit)
    assert "File name too long" in res.output and len(res.output.strip().splitlines()) == 1


@pytest.mark.parametrize("updated_at", ["AKIAZ7QX4MPLR2VN8KTY", "AKIAZ7QX4MPLR2VN8KTY " + "9" * 300])
def test_title_slot_updated_at_is_scanned_and_an_oversized_slot_is_an_error(tmp_path: Path,
                                                                            updated_at: str) -> None:
    f = tmp_path / "s.jsonl"
    slot = {"type": "title", "v": 1, "title": "t", "updatedAt": updated_at, "pad": ""}
    header = builders.header("01a22de6-8032-77dc-a320-124d5453cf73")
    f.write_text(json.dumps(slot) + "\n" + json.dumps(header) + "\n")
    with omp_session.open(f) as s:
        assert s.title_slot is not None and s.title_slot.updated_at == updated_at
    if len(updated_at) < 200:
        assert b"AKIAZ7QX4MPLR2VN8KTY" not in redact(f).to_bytes()
    else:
        with pytest.raises(RedactError, match="title slot"):
            redact(f)


@pytest.mark.parametrize(("text", "expected"), [
    # OpenAI replay payloads keep tool-call arguments as a JSON string: a quoted value with spaces
    ('{"command":"login","password":"correct horse battery staple"}',
     '{"command":"login","password":"[REDACTED:env-assignment]"}'),
    ("DB_PASSWORD='two words here'", "DB_PASSWORD='[REDACTED:env-assignment]'"),
    ('api_key: "a \\"quoted\\" one"', 'api_key: "[REDACTED:env-assignment]"'),
    ('TOKEN="unterminated value', 'TOKEN="[REDACTED:env-assignment] value'),  # as before
    # a name that is only the secret word (the name had to have a prefix before)
    ("PASSWORD=hunter22", "PASSWORD=[REDACTED:env-assignment]"),
    ("mysql --password=hunter22 db", "mysql --password=[REDACTED:env-assignment] db"),
    ('{"token": "abc123def"}', '{"token": "[REDACTED:env-assignment]"}'),
])
def test_env_assignment_quoted_value_is_redacted_whole(text: str, expected: str) -> None:
    assert Matcher().scrub(text) == (expected, ["env-assignment"])


def test_explicit_secret_that_is_a_json_number(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    header = builders.header("01a22de6-8032-77dc-a320-124d5453cf73")
    entry = {"type": "custom", "customType": "x", "id": "aaaaaaaa", "parentId": None,
             "timestamp": "2026-01-01T00:00:00.000Z", "data": {"pin": 48151623, "n": [2.5, 48151623], "ok": 7}}
    f.write_text(json.dumps(header) + "\n" + json.dumps(entry) + "\n")
    result = redact(f, RedactRules(secrets=["48151623"]))
    assert b"48151623" not in result.to_bytes()
    assert result.entries[0]["data"] == {"pin": "[REDACTED:secret]", "n": [2.5, "[REDACTED:secret]"], "ok": 7}


@pytest.mark.parametrize(("text", "expected"), [
    ("postgres://admin:p@ssw0rd@db.example.com/app", "postgres://admin:[REDACTED:url-password]@db.example.com/app"),
    ("redis://:s3cretpass@localhost:6379/0", "redis://:[REDACTED:url-password]@localhost:6379/0"),  # no user
    ("see https://host:8080/a?to=x@y.z", "see https://host:8080/a?to=x@y.z"),
])
def test_url_password_with_at_sign_or_without_user(text: str, expected: str) -> None:
    assert Matcher().scrub(text)[0] == expected


def test_secret_key_value_starting_with_a_bracket_is_redacted(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    header = builders.header("01a22de6-8032-77dc-a320-124d5453cf73")
    entry = {"type": "custom", "customType": "x", "id": "aaaaaaaa", "parentId": None,
             "timestamp": "2026-01-01T00:00:00.000Z",
             "data": {"password": "[Br4cketed pass", "token": "[REDACTED:secret-key-value]"}}
    f.write_text(json.dumps(header) + "\n" + json.dumps(entry) + "\n")
    result = redact(f)
    assert result.entries[0]["data"] == {"password": "[REDACTED:secret-key-value]",
                                         "token": "[REDACTED:secret-key-value]"}
    assert [x.path for x in result.findings] == ["$.data.password"]  # an existing marker is not counted again


@pytest.mark.parametrize("option", ["--paths", "--drop-tool-output", "--drop-custom"])
def test_a_file_redacted_before_checks_clean_with_the_same_option(tmp_path: Path, option: str) -> None:
    """What --paths and the --drop-* options left (``<cwd>``, the removal markers) is not redacted
    again nor reported: a second run gives the same bytes and --check passes (found in review)."""
    from click.testing import CliRunner

    from builders import entry, header, tool_result, user, write_session
    from omp_session.cli import cli

    def redact(*args: str) -> Any:
        return CliRunner().invoke(cli, ["redact", *args])

    src = write_session(tmp_path / "s.jsonl", [
        entry("u1", None, message=user(f"in {tmp_path}/proj/src")),
        entry("a1", "u1", message=assistant([{"type": "toolCall", "id": "c1", "name": "bash",
                                              "arguments": {"command": "ls"}}])),
        entry("r1", "a1", message=tool_result("a.py", call_id="c1")),
        entry("b1", "r1", message={"role": "bashExecution", "command": "ls", "output": "a.py", "exitCode": 0,
                                   "timestamp": 1}),
        entry("x1", "b1", type="custom_message", customType="ext", content="ext says", display=True)],
        head=header("s1", cwd=f"{tmp_path}/proj"))
    out, again = tmp_path / "out.jsonl", tmp_path / "again.jsonl"
    first = redact(str(src), "-o", str(out), option, "--json")
    assert first.exit_code == 0 and json.loads(first.output)["counts"], first.output
    second = redact(str(out), "-o", str(again), option, "--json")
    assert second.exit_code == 0 and json.loads(second.output)["counts"] == {}, second.output
    assert again.read_bytes() == out.read_bytes()
    checked = redact(str(out), "--check", option)
    assert checked.exit_code == 0 and checked.stdout == f"{out}: nothing to redact\n", checked.output
