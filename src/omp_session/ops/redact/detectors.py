"""What ``redact`` looks for in a string: the built-in detectors, user secrets in every encoding
they are likely to travel in, custom patterns, and the ``.env`` secrets-file parser.

A :class:`Matcher` finds spans in one string, and in its decoded views (``%XX``, ``\\uXXXX``,
``+`` in a query: decode.py), and replaces them with ``[REDACTED:<category>]`` in a single pass
(markers are never scanned again, so a pattern matching a marker cannot loop). Overlapping hits
are merged: the earliest start wins, then the longest span.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, quote_plus

from omp_session.errors import PatternError, SecretsFileError

from .assign import ASSIGNMENT, NAME_HINTS, find_assignments, secret_span
from .decode import decoded_views

__all__ = [
    "BUILTIN_DETECTORS",
    "MARKER",
    "MIN_SECRET_LEN",
    "SECRET_KEY_ENDINGS",
    "SECRET_KEY_WORDS",
    "Detector",
    "Hit",
    "Matcher",
    "encoded_forms",
    "marker",
    "merge_hits",
    "parse_secrets_file",
    "secret_key_name",
]

# Shorter explicit secrets would redact ordinary words and numbers all over the transcript.
MIN_SECRET_LEN = 4
# A base64 core shorter than this matches by chance inside unrelated base64 (images, signatures).
_MIN_B64_CORE = 8


def marker(category: str) -> str:
    return f"[REDACTED:{category}]"


# what a redaction left (a marker above, or a removal's "[REDACTED: image removed]"): a file
# redacted again keeps it as it is and reports nothing for it
MARKER = re.compile(r"\[REDACTED[^\]]*\]")


@dataclass(frozen=True, slots=True)
class Detector:
    """``group``: which group is the secret (0: the whole match); the rest is context that stays.
    ``check``: for candidates a regex cannot judge alone, the secret's span or None (no hit)."""

    category: str
    regex: re.Pattern[str]
    group: int | str = 0
    check: Callable[[re.Match[str]], tuple[int, int] | None] | None = None
    # Substrings one of which every match holds (of the lowercased text when ``fold``): a string
    # without any is skipped without running the regex, most strings of a session hold none.
    hints: tuple[str, ...] = ()
    fold: bool = False
    # ``regex.finditer`` done faster (same matches), for a regex Python cannot search quickly
    find: Callable[[str], Iterator[re.Match[str]]] | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    start: int
    end: int
    category: str
    rank: int = 0  # detector order: on overlap the more specific (earlier) detector names the hit


# Token bodies must not continue a longer identifier on the left (``(?<!…)``), so ``task-sk-…``
# style words inside prose do not start a key in the middle of another word.
_L = r"(?<![A-Za-z0-9_\-])"
_AWS_IDS = ("AKIA", "ASIA", "ABIA", "ACCA")
BUILTIN_DETECTORS: tuple[Detector, ...] = (
    Detector("private-key", re.compile(
        r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY( BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z0-9 ]{0,40} PRIVATE KEY( BLOCK)?-----|\Z)"), hints=(" PRIVATE KEY",)),
    Detector("anthropic-api-key", re.compile(_L + r"sk-ant-[A-Za-z0-9_\-]{16,}"), hints=("sk-ant-",)),
    Detector("openai-api-key", re.compile(_L + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"), hints=("sk-",)),
    Detector("google-api-key", re.compile(_L + r"AIza[0-9A-Za-z_\-]{35}"), hints=("AIza",)),
    Detector("aws-access-key-id", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![A-Z0-9])"), hints=_AWS_IDS),
    # A 40-character AWS secret is indistinguishable from other base64 on its own: only with a
    # name in front of it (env var, config key, JSON key in a text) or right after its key id
    # (``aws configure`` output, the console's CSV, STS JSON).
    Detector("aws-secret-key", re.compile(
        r"(?i)(?:aws_?)?(?:secret_?access_?key|(?<=aws)_?secret_?key|(?<=aws)_?secret)[\"']?\s*[:=]\s*[\"']?"
        r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"), "s", hints=("secret",), fold=True),
    Detector("aws-secret-key", re.compile(
        r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![A-Z0-9])"
        r"[^A-Za-z0-9/+]{1,8}(?:[A-Za-z_ ]{1,30}[^A-Za-z0-9/+]{1,8})?"
        r"(?P<s>(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[A-Z])[A-Za-z0-9/+]{40})(?![A-Za-z0-9+=])"),
        "s", hints=_AWS_IDS),
    Detector("github-token", re.compile(_L + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
             hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    Detector("gitlab-token", re.compile(_L + r"glpat-[A-Za-z0-9_\-]{20,}"), hints=("glpat-",)),
    Detector("slack-token", re.compile(_L + r"xox[abpr]-[A-Za-z0-9\-]{10,}"), hints=("xox",)),
    Detector("stripe-key", re.compile(_L + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"), hints=("_live_", "_test_")),
    Detector("huggingface-token", re.compile(_L + r"hf_[A-Za-z0-9]{30,}"), hints=("hf_",)),
    Detector("jwt", re.compile(_L + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"), hints=("eyJ",)),
    # scheme://user:password@host: only the password goes, the user and host stay readable.
    Detector("url-password", re.compile(
        # (the user may be empty, redis://:pw@host; the password runs to the last "@" of the authority;
        # ${VAR}, <password>, {password} are placeholders)
        r"\b[A-Za-z][A-Za-z0-9+.\-]{0,30}://[^\s:/?#@\"'<>\[\]]*:(?P<s>(?![$<{])[^\s/?#\"'<>]+)@"), "s",
             hints=("://",)),
    # Authorization: Bearer|Basic|Token <credential> (also as a JSON or header-dict key in text).
    Detector("authorization-header", re.compile(
        r"(?i)\b(?:proxy-)?authorization[\"'`]?\s*[:=]\s*[\"'`]?(?:(?:bearer|basic|token|digest)\s+)?"
        # not a reference ($TOKEN, ${t}, <token>), not the scheme word alone ("Bearer " + token),
        # not code (request.headers["Authorization"], self.auth_header)
        r"(?P<s>(?![$<{%])(?!(?:bearer|basic|token|digest)\b)(?![A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w.]))"
        r"[^\s\"'`,;}]{4,}+)(?![\[(])"), "s", hints=("authorization",), fold=True),
    # NAME=value where NAME says secret and the value is one (assign.py: code is not a .env file).
    Detector("env-assignment", ASSIGNMENT, check=secret_span, hints=NAME_HINTS, fold=True, find=find_assignments),
)

# Object keys whose string value is a secret as a whole (``{"apiKey": "…"}`` in tool arguments,
# headers dicts, provider options). Compared on the key lowercased without ``_``/``-``.
SECRET_KEY_WORDS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey", "privatekey",
                    "secretkey", "authorization", "credential", "credentials", "cookie", "sessionkey", "authtoken",
                    "clientsecret")
_SECRET_KEY = re.compile("(?:" + "|".join(SECRET_KEY_WORDS) + ")")
# Keys ending in one of these name a secret too (``dbPassword``, ``github_access_token``).
SECRET_KEY_ENDINGS = ("password", "secret", "apikey", "accesstoken", "refreshtoken", "authtoken", "privatekey",
                      "secretkey", "bearertoken", "sessiontoken", "idtoken")
# Keys that end like a secret word but hold counts or identifiers, never secrets.
_NOT_SECRET_KEY = frozenset({"maxtokens", "tokencount", "tokentype", "tokenizer", "secretname", "pagetoken"})


def secret_key_name(key: str) -> bool:
    """Whether a dict key names a secret value (its whole string value is redacted)."""
    k = key.lower().replace("_", "").replace("-", "")
    if k in _NOT_SECRET_KEY:
        return False
    return _SECRET_KEY.fullmatch(k) is not None or k.endswith(SECRET_KEY_ENDINGS)


def _b64_cores(data: bytes) -> list[str]:
    """The part of base64(…data…) that depends on ``data`` alone, for the three positions
    ``data`` can start at relative to a 3-byte group, in both alphabets.

    With k filler bytes in front, the first ceil(8k/6) characters mix in filler bits and the
    characters after bit 8(k+len) mix in whatever follows, so only the middle is fixed.
    """
    out: list[str] = []
    for k in range(3):
        enc = base64.b64encode(b"\0" * k + data).decode("ascii")
        lead = -(-8 * k // 6)
        core = enc[lead: (8 * (k + len(data))) // 6]
        if len(core) >= _MIN_B64_CORE:
            out.append(core)
            out.append(core.replace("+", "-").replace("/", "_"))
    return out


def encoded_forms(secret: str) -> list[str]:
    """``secret`` and the encodings it is redacted in: raw, base64 (standard and url-safe, any
    alignment) and URL-encoded (``%XX`` upper and lower case, ``+`` for spaces)."""
    forms = {secret}
    raw = secret.encode("utf-8", "surrogatepass")
    forms.update(_b64_cores(raw))
    for q in (quote(secret, safe=""), quote(secret, safe="/"), quote_plus(secret, safe="")):
        forms.add(q)
        forms.add(re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), q))
    return sorted(forms, key=lambda s: (-len(s), s))


_JSON_SHORT = {'"': '"', "\\": "\\", "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}


def _any_escape_regex(secret: str) -> str:
    """A regex for ``secret`` with each character raw, ``%XX``-encoded (either case, ``+`` for a
    space) or JSON-escaped (``\\uXXXX`` either case, ``\\/``, ``\\"`` …), in any mix: encoders
    differ in what they leave alone (``encodeURIComponent`` keeps ``!'()*``, PHP escapes ``/``)."""
    parts: list[str] = []
    for c in secret:
        alts = [re.escape(c), "(?i:" + "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass")) + ")"]
        cp = ord(c)
        units = [cp] if cp < 0x10000 else [0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)]
        alts.append("(?i:" + "".join(f"\\\\u{u:04X}" for u in units) + ")")
        if c in _JSON_SHORT:
            alts.append("\\\\" + re.escape(_JSON_SHORT[c]))
        if c == " ":
            alts.append("\\+")
        parts.append("(?:" + "|".join(alts) + ")")
    return "".join(parts)


class Matcher:
    """Everything one ``redact`` run looks for, compiled once."""

    def __init__(self, *, builtin: bool = True, secrets: Iterable[tuple[str, str]] = (),
                 patterns: Sequence[str | re.Pattern[str]] = ()) -> None:
        self.detectors: list[Detector] = list(BUILTIN_DETECTORS) if builtin else []
        by_category: dict[str, set[str]] = {}
        values: dict[str, set[str]] = {}
        for category, value in secrets:
            if len(value) >= MIN_SECRET_LEN:
                by_category.setdefault(category, set()).update(encoded_forms(value))
                values.setdefault(category, set()).add(value)
        for category, forms in by_category.items():
            alternation = "|".join([_any_escape_regex(v) for v in sorted(values[category], key=lambda s: (-len(s), s))]
                                   + [re.escape(f) for f in sorted(forms, key=lambda s: (-len(s), s))])
            self.detectors.append(Detector(category, re.compile(alternation)))
        for p in patterns:
            try:
                rx = p if isinstance(p, re.Pattern) else re.compile(p)
            except re.error as e:
                raise PatternError(f"invalid --pattern {p!r}: {e}") from None
            if rx.search("") is not None:
                raise PatternError(f"--pattern {rx.pattern!r} matches the empty string")
            self.detectors.append(Detector("pattern", rx, "secret" if "secret" in rx.groupindex else 0))
        self.literals: list[str] = []  # cwd/home prefixes, set by the caller

    def _find(self, text: str, found: list[Hit], view_span: Callable[[int, int], tuple[int, int]] | None) -> None:
        lower: str | None = None
        for rank, d in enumerate(self.detectors):
            if d.hints:
                if d.fold and lower is None:
                    lower = text.lower()
                hay = lower if d.fold and lower is not None else text
                for h in d.hints:  # (a loop, not any(): this runs for every detector of every string)
                    if h in hay:
                        break
                else:
                    continue
            for m in d.find(text) if d.find is not None else d.regex.finditer(text):
                span = d.check(m) if d.check is not None else m.span(d.group)
                if span is None or span[1] <= span[0] or MARKER.fullmatch(text, *span) is not None:
                    continue  # (a marker is what an earlier redaction left: no secret, and stays as it is)
                start, end = view_span(*span) if view_span is not None else span
                found.append(Hit(start, end, d.category, rank))

    def hits(self, text: str) -> list[Hit]:
        """Hits in ``text`` and in its decoded views (``%XX``, ``\\uXXXX``, ``+`` in a query),
        the latter as spans of ``text``; overlapping hits merged."""
        found: list[Hit] = []
        self._find(text, found, None)
        for view in decoded_views(text):
            self._find(view.text, found, view.span)
        return merge_hits(found)

    def scrub(self, text: str, extra: Sequence[Hit] = ()) -> tuple[str, list[str]]:
        """``text`` with every hit (and every ``extra`` one, e.g. the part of a secret that runs on
        into the next text block) replaced by its marker, and the categories replaced."""
        hits = merge_hits([*self.hits(text), *extra]) if extra else self.hits(text)
        if not hits:
            return text, []
        parts: list[str] = []
        pos = 0
        for h in hits:
            parts.append(text[pos:h.start])
            parts.append(marker(h.category))
            pos = h.end
        parts.append(text[pos:])
        return "".join(parts), [h.category for h in hits]


def merge_hits(found: list[Hit]) -> list[Hit]:
    """Sorted, one hit per overlapping group (named by the more specific, earlier detector)."""
    if len(found) < 2:
        return found
    found.sort(key=lambda h: (h.start, -h.end))
    merged = [found[0]]
    for h in found[1:]:
        last = merged[-1]
        if h.start < last.end:  # overlap: one marker for the union
            best = last if last.rank <= h.rank else h
            merged[-1] = Hit(last.start, max(h.end, last.end), best.category, best.rank)
        else:
            merged.append(h)
    return merged


# ----------------------------------------------------------------- .env files

_ENV_LINE = re.compile(r"\s*(?:export\s+)?(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)\s*[=:]\s*(?P<rest>.*?)\s*")
_DQ_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "$": "$"}


def _env_value(rest: str, where: str) -> str:
    if rest[:1] == '"':
        out: list[str] = []
        i = 1
        while i < len(rest):
            c = rest[i]
            if c == "\\" and i + 1 < len(rest):
                out.append(_DQ_ESCAPES.get(rest[i + 1], "\\" + rest[i + 1]))
                i += 2
                continue
            if c == '"':
                tail = rest[i + 1:].strip()
                if tail and not tail.startswith("#"):
                    raise SecretsFileError(f"{where}: text after the closing quote")
                return "".join(out)
            out.append(c)
            i += 1
        raise SecretsFileError(f"{where}: unterminated double-quoted value")
    if rest[:1] == "'":
        end = rest.find("'", 1)
        if end < 0:
            raise SecretsFileError(f"{where}: unterminated single-quoted value")
        tail = rest[end + 1:].strip()
        if tail and not tail.startswith("#"):
            raise SecretsFileError(f"{where}: text after the closing quote")
        return rest[1:end]
    # unquoted: a " #" starts a comment
    cut = re.search(r"\s#", rest)
    return (rest[:cut.start()] if cut else rest).strip()


def parse_secrets_file(path: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """``(NAME, value)`` for every assignment of a ``.env`` file.

    Accepted: blank lines, ``# comments``, ``NAME=value``, ``export NAME=value``, ``NAME: value``,
    values in single quotes (literal) or double quotes (``\\n``, ``\\"``, ``\\\\`` escapes; may not
    span lines), and unquoted values with a trailing `` # comment``. Anything else is an error
    naming the line, so a wrong file is never half-used.
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise SecretsFileError(f"{path}: cannot read secrets file: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SecretsFileError(f"{path}: secrets file is not UTF-8 text") from None
    out: list[tuple[str, str]] = []
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _ENV_LINE.fullmatch(line)
        if m is None:
            raise SecretsFileError(f"{path}:{n}: not a NAME=value line")
        out.append((m["name"], _env_value(m["rest"], f"{path}:{n}")))
    return out
