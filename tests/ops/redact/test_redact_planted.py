"""redact: every planted secret, in every encoding, in every place text lives, goes (issue 16 item 5),
and realistic code comes out untouched (issue 15 item 8).

The leak check decodes what it reads (JSON escapes, ``%XX``, ``+``) and also joins all the strings
of a record, so a secret left in pieces, or left encoded, still counts as leaked.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus, unquote, unquote_plus

import pytest

import builders
from builders import assistant, entry, tool_result, user
from omp_session.ops.redact.detectors import Matcher
from omp_session.ops.redact.rewrite import RedactRules, redact

CORPUS = Path(__file__).resolve().parents[2] / "data" / "redact" / "code_corpus.txt"
SID = "01a22de6-8032-77dc-a320-124d5453cf73"

AWS_PAIR_SECRET = "q8Rk2LzN5vXbT7mWcJ4hYp1sGfD9aE3uKo6iBnQx"
# name -> (carrier text, the values that must not survive); built-in detectors only
BUILTIN: dict[str, tuple[str, list[str]]] = {
    "anthropic": ("key sk-ant-api03-Zq8xW2vK9mNpL4rT7yHbC1dF6gJ0sA3eU5iO here",
                  ["sk-ant-api03-Zq8xW2vK9mNpL4rT7yHbC1dF6gJ0sA3eU5iO"]),
    "openai": ("key sk-proj-Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx here", ["sk-proj-Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx"]),
    "google": ("key AIzaSyD4k9Lm2Np7Qr1St5Uv8Wx3Yz6Ab0Cd9Ef here", ["AIzaSyD4k9Lm2Np7Qr1St5Uv8Wx3Yz6Ab0Cd9Ef"]),
    "aws-id": ("key AKIAZ7QX4MPLR2VN8KTY here", ["AKIAZ7QX4MPLR2VN8KTY"]),
    "aws-pair": (f"AKIAQ3MZ7RX2WPL5VN8K {AWS_PAIR_SECRET}", ["AKIAQ3MZ7RX2WPL5VN8K", AWS_PAIR_SECRET]),
    "aws-named": ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9KxA2LmP",
                  ["wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9KxA2LmP"]),
    "github": ("key ghp_R4nD0mT0k3nV4lu3F0rT3st1ngPurp0s3sXy here", ["ghp_R4nD0mT0k3nV4lu3F0rT3st1ngPurp0s3sXy"]),
    "gitlab": ("key glpat-Xy7Wv5Ut3Sr1Qp9On7Ml here", ["glpat-Xy7Wv5Ut3Sr1Qp9On7Ml"]),
    "slack": ("key xoxb-2837465019-Qw3Er5Ty7Ui9 here", ["xoxb-2837465019-Qw3Er5Ty7Ui9"]),
    "stripe": ("key sk_live_4eC39HqLyjWDarjtT1zdp7dc here", ["sk_live_4eC39HqLyjWDarjtT1zdp7dc"]),
    "huggingface": ("key hf_QwErTyUiOpAsDfGhJkLzXcVbNm1234567890 here", ["hf_QwErTyUiOpAsDfGhJkLzXcVbNm1234567890"]),
    "jwt": ("key eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyZWRhY3QtdGVzdCJ9.c2lnbmF0dXJlLXZhbHVlLWhlcmU here",
            ["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyZWRhY3QtdGVzdCJ9.c2lnbmF0dXJlLXZhbHVlLWhlcmU"]),
    "url-password": ("postgres://admin:Pg7pa55wordZ@db.example.com/app", ["Pg7pa55wordZ"]),
    "authorization": ("Authorization: Bearer opaqueBearerCredential42", ["opaqueBearerCredential42"]),
    "env-assignment": ("DATABASE_PASSWORD=Tr0ub4dor-and-3", ["Tr0ub4dor-and-3"]),
    "private-key": ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAPEMBODYX\n"
                    "-----END OPENSSH PRIVATE KEY-----", ["b3BlbnNzaC1rZXktdjEAAAAAPEMBODYX"]),
}
# the user's own --secret values (characters that encodings change on purpose)
USER_SECRETS = ["corp/vault+pass=W9 x!", "plainUserSecret8472"]
USER: dict[str, tuple[str, list[str]]] = {f"user-{k}": (f"see {v} now", [v]) for k, v in enumerate(USER_SECRETS)}


def _u_escape(s: str) -> str:
    return "".join(c if c.isalnum() else f"\\u{ord(c):04x}" for c in s)


def _lower_hex(s: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), s)


ENCODINGS: dict[str, Callable[[str], str]] = {
    "plain": lambda c: c,
    # JSON text inside a string (tool arguments kept as a JSON string, logs of API bodies)
    "json-escaped": lambda c: json.dumps(json.dumps({"q": c})),
    "u-escaped": lambda c: '{"q":"' + _u_escape(c) + '"}',
    # right after an escape: the left-boundary trap (%20, %22, %3D)
    "percent": lambda c: (f"https://x.test/s?q=key%20{quote(c, safe='')}&r=%22{quote(c, safe='')}%22"
                          f"&k%3D{quote(c, safe='')}"),
    "percent-lower": lambda c: _lower_hex(f"https://x.test/s?q=%22{quote(c, safe='')}%22"),
    "percent-twice": lambda c: f"https://x.test/s?q={quote(quote(c, safe=''), safe='')}",
    "plus": lambda c: f"https://x.test/s?q={quote_plus(c, safe='')}&x=1",
}
USER_ONLY_ENCODINGS: dict[str, Callable[[str], str]] = {  # base64 is matched for the user's own values only
    "base64": lambda c: base64.b64encode(c.encode()).decode(),
    "base64-url": lambda c: base64.urlsafe_b64encode(b"x" + c.encode()).decode(),
}
PLACES = ["user-text", "assistant-text", "split-text-blocks", "thinking", "tool-args-deep", "tool-args-path",
          "tool-args-key", "tool-result", "tool-result-details", "bash-execution", "custom-data",
          "custom-message", "compaction-summary", "branch-summary", "label", "title-change", "header",
          "title-record"]


def _deep(value: Any, depth: int = 6) -> Any:
    for k in range(depth):
        value = {f"level{k}": [value]} if k % 2 else [{"arg": value}]
    return value


def _entries(place: str, texts: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any], str | None]:
    """Entries (a chain), header fields and title slot holding ``texts`` in ``place``."""
    out: list[dict[str, Any]] = []
    head: dict[str, Any] = {}
    slot: str | None = None

    def add(kind: str = "message", **fields: Any) -> None:
        out.append(entry(f"e{len(out):07d}", f"e{len(out) - 1:07d}" if out else None, type=kind, **fields))

    add(message=user("start"))
    for k, t in enumerate(texts):
        call = f"call_{k}"
        if place == "user-text":
            add(message=user(t))
        elif place == "assistant-text":
            add(message=assistant([{"type": "text", "text": t}]))
        elif place == "split-text-blocks":
            for cut in (len(t) // 2, len(t) // 3):
                add(message=assistant([{"type": "text", "text": t[:cut]}, {"type": "text", "text": t[cut:]}]))
        elif place == "thinking":
            add(message=assistant([{"type": "thinking", "thinking": t}, {"type": "text", "text": "ok"}]))
        elif place.startswith("tool-args"):
            args = {"tool-args-deep": {"command": "run", "opts": _deep(t)},
                    "tool-args-path": {"path": f"/srv/data/{t}/file.txt"},
                    "tool-args-key": {"env": {t: 1}}}[place]
            add(message=assistant([{"type": "toolCall", "id": call, "name": "bash", "arguments": args}],
                                  stop_reason="toolUse"))
            add(message=tool_result("done", call_id=call))
        elif place == "tool-result":
            add(message=tool_result([{"type": "text", "text": t}], call_id=call))
        elif place == "tool-result-details":
            add(message=tool_result("done", call_id=call, details={"stdout": _deep(t, 3)}))
        elif place == "bash-execution":
            add(message={"role": "bashExecution", "command": t, "output": t, "exitCode": 0, "cancelled": False,
                         "truncated": False, "timestamp": 5})
        elif place == "custom-data":
            add("custom", customType="ext-state", data={"note": _deep(t, 4)})
        elif place == "custom-message":
            add("custom_message", customType="ext", content=t, display=True, details={"more": [t]})
        elif place == "compaction-summary":
            add("compaction", summary=t, shortSummary=t, firstKeptEntryId="e0000000", tokensBefore=10)
        elif place == "branch-summary":
            add("branch_summary", fromId="e0000000", summary=t, details={"d": t})
        elif place == "label":
            add("label", targetId="e0000000", label=t)
        elif place == "title-change":
            add("title_change", title=t, source="user")
        elif place == "header":
            head = {"title": t, "cwd": f"/home/u/{t}"}
        elif place == "title-record":
            slot = t
    return out, head, slot


def _unescape(s: str) -> Iterator[str]:
    """``s`` and what it decodes to, layer by layer."""
    seen = {s}
    yield s
    cur = [s]
    for _ in range(4):
        nxt = []
        for v in cur:
            for d in (unquote(v), unquote_plus(v),
                      re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), v).replace('\\"', '"')
                      .replace("\\\\", "\\").replace("\\/", "/").replace("\\n", "\n")):
                if d not in seen:
                    seen.add(d)
                    nxt.append(d)
                    yield d
        cur = nxt


def _strings(v: Any) -> Iterator[str]:
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            yield x
        elif isinstance(x, list):
            stack.extend(reversed(x))
        elif isinstance(x, dict):
            for k, y in reversed(list(x.items())):
                stack.append(y)
                stack.append(k)


def _joined_blocks(v: Any) -> Iterator[str]:
    """The texts of each list of content blocks, joined (what a reader sees as one text)."""
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, list):
            yield "".join(b.get("text") or b.get("thinking") or "" for b in x if isinstance(b, dict)
                          and isinstance(b.get("text") or b.get("thinking") or "", str))
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())


def readable(data: bytes) -> list[str]:
    """Every string of the output, each content list's texts joined, all decoded layer by layer."""
    out: list[str] = []
    for raw in data.decode("utf-8").splitlines():
        record = json.loads(raw)
        for s in [*_strings(record), *_joined_blocks(record)]:
            out.extend(_unescape(s))
    return out


def leaked(data: bytes | list[str], values: list[str]) -> bool:
    texts = readable(data) if isinstance(data, bytes) else data
    needles = [*values, *(c for v in values for c in _b64_cores(v))]
    return any(n in t for t in texts for n in needles)


def _b64_cores(value: str) -> list[str]:
    raw = value.encode()
    out = []
    for k in range(3):
        enc = base64.b64encode(b"P" * k + raw + b"S").decode()
        core = enc[-(-8 * k // 6): (8 * (k + len(raw))) // 6]
        if len(core) >= 8:
            out += [core, core.replace("+", "-").replace("/", "_")]
    return out


def cases() -> Iterator[tuple[str, str, str, str, list[str]]]:
    """(encoding, place, item name, encoded carrier text, forbidden values)"""
    for enc, f in {**ENCODINGS, **USER_ONLY_ENCODINGS}.items():
        items = USER if enc in USER_ONLY_ENCODINGS else {**BUILTIN, **USER}
        for place in PLACES:
            for name, (carrier, values) in items.items():
                yield enc, place, name, f(carrier), values


def measure(tmp: Path, redact_fn: Callable[[Path, RedactRules], bytes] | None = None
            ) -> dict[tuple[str, str], tuple[int, list[str]]]:
    """(encoding, place) -> (planted, names leaked). The items of one encoding and place share a
    session (their values differ, so a leak names its item), except where a record holds one
    string (the header, the title slot)."""
    rules = RedactRules(secrets=USER_SECRETS)
    run = redact_fn or (lambda p, r: redact(p, r).to_bytes())
    groups: dict[tuple[str, str, int], list[tuple[str, str, list[str]]]] = {}
    for n, (enc, place, name, text, values) in enumerate(cases()):
        single = place in ("header", "title-record")
        groups.setdefault((enc, place, n if single else -1), []).append((name, text, values))
    out: dict[tuple[str, str], tuple[int, list[str]]] = {}
    for n, ((enc, place, _), items) in enumerate(groups.items()):
        entries, head, slot = _entries(place, [text for _, text, _ in items])
        f = builders.write_session(tmp / f"s{n}.jsonl", entries, head=builders.header(SID, **head), slot=slot)
        if slot is not None and not leaked(f.read_bytes()[:256], items[0][2]):
            continue  # the slot cut the value off before it was written: nothing was planted
        texts = readable(run(f, rules))
        planted, names = out.get((enc, place), (0, []))
        out[(enc, place)] = (planted + len(items), names + [name for name, _, values in items if leaked(texts, values)])
    return out


def test_no_planted_secret_survives_in_any_encoding_or_place(tmp_path: Path) -> None:
    result = measure(tmp_path)
    planted = sum(p for p, _ in result.values())
    assert planted >= 1000 and {p for _, p in result} == set(PLACES)
    leaks = {k: names for k, (_, names) in result.items() if names}
    assert not leaks, leaks


def test_the_leak_check_sees_what_it_must() -> None:
    for enc, f in ENCODINGS.items():
        for carrier, values in BUILTIN.values():
            data = (json.dumps(builders.header(SID, title=f(carrier))) + "\n").encode()
            assert leaked(data, values), enc
    split = assistant([{"type": "text", "text": "ghp_R4nD0mT0k3"}, {"type": "text", "text": "nV4lu3F0rT3st1ngPurp0s3sXy"}])
    assert leaked((json.dumps(split) + "\n").encode(), BUILTIN["github"][1])


@pytest.mark.parametrize("text", [
    "https://x.test/?q=key%20AKIAZ7QX4MPLR2VN8KTY", "https://x.test/?q=%22ghp_R4nD0mT0k3nV4lu3F0rT3st1ngPurp0s3sXy%22",
    "https://x.test/?k%3DAKIAZ7QX4MPLR2VN8KTY", '{"q":"\\u0022ghp_R4nD0mT0k3nV4lu3F0rT3st1ngPurp0s3sXy\\u0022"}',
    "https://x.test/?q=DATABASE_PASSWORD+%3D+Tr0ub4dor-and-3&x=1",
])
def test_token_right_after_an_escape_is_redacted(text: str) -> None:
    out, cats = Matcher().scrub(text)
    assert cats and not any(s in out for s in ("AKIAZ7", "ghp_R4", "Tr0ub4")), out


def test_url_escape_runs_keep_their_neighbours() -> None:
    out, _ = Matcher().scrub("https://x.test/?q=key%20AKIAZ7QX4MPLR2VN8KTY%20end&n=%2Fhome")
    assert out == "https://x.test/?q=key%20[REDACTED:aws-access-key-id]%20end&n=%2Fhome"


@pytest.mark.parametrize("text", [
    "AKIAQ3MZ7RX2WPL5VN8K q8Rk2LzN5vXbT7mWcJ4hYp1sGfD9aE3uKo6iBnQx",
    "bob,,AKIAQ3MZ7RX2WPL5VN8K,q8Rk2LzN5vXbT7mWcJ4hYp1sGfD9aE3uKo6iBnQx",
    '{"AccessKeyId": "ASIAQ3MZ7RX2WPL5VN8K", "SecretAccessKey": "q8Rk2LzN5vXbT7mWcJ4hYp1sGfD9aE3uKo6iBnQx"}',
    "aws_access_key_id = AKIAQ3MZ7RX2WPL5VN8K\naws_secret_access_key = q8Rk2LzN5vXbT7mWcJ4hYp1sGfD9aE3uKo6iBnQx",
])
def test_aws_secret_key_next_to_its_key_id(text: str) -> None:
    out, cats = Matcher().scrub(text)
    assert "q8Rk2LzN5" not in out and "aws-secret-key" in cats, out


def test_secret_split_across_adjacent_text_blocks_redacted_in_both(tmp_path: Path) -> None:
    blocks = [{"type": "text", "text": "token ghp_R4nD0mT0k3nV4"}, {"type": "text", "text": "lu3F0rT3st1ngPurp0s3sXy ok"},
              {"type": "text", "text": "mine: corp/vau"}, {"type": "text", "text": "lt+pass=W9 x! end"}]
    f = builders.write_session(tmp_path / "s.jsonl", [entry("e1", message=assistant(blocks))], head=builders.header(SID))
    result = redact(f, RedactRules(secrets=[USER_SECRETS[0]]))
    content = result.entries[0]["message"]["content"]
    assert [b["text"] for b in content] == ["token [REDACTED:github-token]", "[REDACTED:github-token] ok",
                                            "mine: [REDACTED:secret]", "[REDACTED:secret] end"]
    assert [(x.category, x.path) for x in result.findings] == [
        ("github-token", "$.message.content[0].text"), ("github-token", "$.message.content[1].text"),
        ("secret", "$.message.content[2].text"), ("secret", "$.message.content[3].text")]


# ----- false positives: realistic code ------------------------------------------------------------------

def corpus() -> list[tuple[str, str]]:
    """(label, snippet) from tests/data/redact/code_corpus.txt."""
    out: list[tuple[str, list[str]]] = []
    for line in CORPUS.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("#### "):
            out.append((line[5:].strip(), []))
        elif out:
            out[-1][1].append(line)
    return [(label, "".join(lines)) for label, lines in out]


def test_corpus_is_big_and_varied() -> None:
    snippets = corpus()
    assert len(snippets) >= 200
    languages = {label.split(":")[0] for label, _ in snippets}
    assert {"python", "javascript", "typescript", "shell", "yaml", "json", "go", "rust", "sql", "config"} <= languages


def test_realistic_code_is_left_alone() -> None:
    m = Matcher()
    changed = [(label, m.scrub(text)[0]) for label, text in corpus() if m.scrub(text)[1]]
    assert not changed, changed


def test_realistic_code_is_left_alone_in_a_session(tmp_path: Path) -> None:
    entries = []
    for k, (_, text) in enumerate(corpus()):
        call = {"type": "toolCall", "id": f"c{k}", "name": "write", "arguments": {"path": "a.py", "content": text}}
        entries.append(entry(f"a{k:05d}", f"r{k - 1:05d}" if k else None, message=assistant([call], stop_reason="toolUse")))
        entries.append(entry(f"r{k:05d}", f"a{k:05d}", message=tool_result([{"type": "text", "text": text}],
                                                                              call_id=f"c{k}")))
    f = builders.write_session(tmp_path / "s.jsonl", entries, head=builders.header(SID))
    result = redact(f)
    assert result.findings == []


@pytest.mark.parametrize(("text", "secret"), [
    ("key = key[:state]", None),
    ("rows = sorted(sessions, key=lambda x: x.created_at)", None),
    ("PASSWORD=hunter22", "hunter22"),
    ("export GITHUB_TOKEN=abc123def456", "abc123def456"),
    ("db_password: s3cr3t-pass", "s3cr3t-pass"),
    ('client = Client(token="live-token-value")', "live-token-value"),
    ("password = Tr0ub4dor3", "Tr0ub4dor3"),
    ("cache_key = 'f3A9kQ2mZ8xL4pW7nR1tY6vB'", "f3A9kQ2mZ8xL4pW7nR1tY6vB"),  # weak name, random value
    ("SECRET_KEY_BASE=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "9f86d081884c7d659a2f"),
    ("spring.datasource.password=Hx7pQ2wZ", "Hx7pQ2wZ"),
    ("PGPASSWORD=Kq8mZ2 psql -h db", "Kq8mZ2"),
    ("https://x.test/cb?token=abc123def456&state=xyz", "abc123def456"),
    ("const apiKey = 'AKfY7Wq2Lm9Zp4Xs8Tn3Vb6Rc1'", "AKfY7Wq2Lm9Zp4Xs8Tn3Vb6Rc1"),
])
def test_env_assignment_judges_the_value(text: str, secret: str | None) -> None:
    out, cats = Matcher().scrub(text)
    if secret is None:
        assert (out, cats) == (text, [])
    else:
        assert secret not in out and cats == ["env-assignment"], out
