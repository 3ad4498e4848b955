"""Sessions in Redis, in the key layout omp 18.2.3's ``RedisSessionStorage`` uses (spec S12.5).

Layout under a key prefix (default ``omp:sessions:``):

* ``<prefix>file:<path>`` — a STRING holding the JSONL body, byte for byte;
* ``<prefix>meta`` — a HASH, field = path, value = the last write's mtime in decimal ms;
* ``<prefix>title`` — a HASH, field = path, value = JSON ``{title?, source?, updatedAt}``.

omp keeps the title out of band: a full write records the body's title slot in ``<prefix>title``,
a title change updates only that hash (the stored body keeps its old slot), and every read lays a
freshly serialized slot over the first 256 bytes of the body (S12.3). We do the same, so omp and
we read the same bytes from the same keys.

Every mutation is one Lua script, and Redis runs a script whole or not at all: a size-checked full
write, an append that also completes a last line lacking its LF, sync's append that checks the
body's length first, a title change that checks the slot is still there, a rename that moves the body and both hash fields together. A writer killed
mid-append therefore leaves either its whole line or nothing. redis-py's automatic retries are
off: a retried append whose first attempt did land would duplicate the line.

Where omp would damage data we do not follow it (docs/stores-redis.md): the title slot is laid
over a body only when the body starts with a real 256-byte slot, title metadata is recorded only
for such a body, and a rename never leaves the destination with a stale title.
"""

from __future__ import annotations

import builtins
import fnmatch
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from omp_session.errors import StoreError, WriteConflictError
from omp_session.js import codec

from .base import StoredFile, conflict_message
from .url import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from .base import SessionStorage
from omp_session.format.title import TITLE_SLOT_BYTES, TitleSlot, build_title_slot, parse_title_slot

__all__ = ["DEFAULT_PREFIX", "RedisStorage"]

DEFAULT_PREFIX = "omp:sessions:"
_SCAN_COUNT = 500  # omp's batch size for SCAN
_SCHEMES = ("redis", "rediss", "unix")

# Redis does not undo the writes a script made before it failed, so every script first checks
# the type of each key it will write (the first ``strings`` keys hold bodies, the rest are the
# hashes): a key of another layout fails it before anything changed.
def _checked(strings: int, script: str) -> str:
    return f"""
for i = 1, #KEYS do
  local want = "hash"
  if i <= {strings} then want = "string" end
  local t = redis.call("TYPE", KEYS[i])["ok"]
  if t ~= "none" and t ~= want then
    return redis.error_reply("WRONGTYPE " .. KEYS[i] .. " is a " .. t .. ", not a " .. want)
  end
end
{script}"""


# KEYS: file, meta, title. ARGV: body, path, mtime, has-title "1"/"0", title JSON, expected size
# (-1: the key must not exist). Returns {1, new size} or {0, size found (-1: missing)}.
_WRITE_FULL = _checked(1, """
local actual = -1
if redis.call("EXISTS", KEYS[1]) == 1 then actual = redis.call("STRLEN", KEYS[1]) end
if actual ~= tonumber(ARGV[6]) then return {0, actual} end
redis.call("SET", KEYS[1], ARGV[1])
redis.call("HSET", KEYS[2], ARGV[2], ARGV[3])
if ARGV[4] == "1" then
  redis.call("HSET", KEYS[3], ARGV[2], ARGV[5])
else
  redis.call("HDEL", KEYS[3], ARGV[2])
end
return {1, string.len(ARGV[1])}
""")

# KEYS: file, meta. ARGV: line, path, mtime. Returns the bytes added, or -1 when there is no body.
_APPEND = _checked(1, """
if redis.call("EXISTS", KEYS[1]) == 0 then return -1 end
local line = ARGV[1]
local n = redis.call("STRLEN", KEYS[1])
if n > 0 and redis.call("GETRANGE", KEYS[1], n - 1, n - 1) ~= "\\n" then line = "\\n" .. line end
redis.call("APPEND", KEYS[1], line)
redis.call("HSET", KEYS[2], ARGV[2], ARGV[3])
return string.len(line)
""")

# KEYS: file, meta. ARGV: data, path, mtime, expected size. Writes what _APPEND writes (the body
# and its meta field; the title stays), without the LF. Returns 1, or 0 when the body is missing
# or of another size (nothing written).
_APPEND_IF_SIZE = _checked(1, """
if redis.call("EXISTS", KEYS[1]) == 0 then return 0 end
if redis.call("STRLEN", KEYS[1]) ~= tonumber(ARGV[4]) then return 0 end
redis.call("APPEND", KEYS[1], ARGV[1])
redis.call("HSET", KEYS[2], ARGV[2], ARGV[3])
return 1
""")

# KEYS: file, meta, title. ARGV: the body's head as last read, path, mtime, title JSON.
# Returns 1, or 0 when the head changed since it was read (nothing written).
_SET_TITLE = _checked(1, """
local head = ARGV[1]
if redis.call("GETRANGE", KEYS[1], 0, string.len(head) - 1) ~= head then return 0 end
redis.call("HSET", KEYS[2], ARGV[2], ARGV[3])
redis.call("HSET", KEYS[3], ARGV[2], ARGV[4])
return 1
""")

# KEYS: source file, destination file, meta, title. ARGV: source path, destination path.
# Returns 0 when the source is missing. The destination's mtime and title become the source's.
_RENAME = _checked(2, """
if redis.call("EXISTS", KEYS[1]) == 0 then return 0 end
if KEYS[1] == KEYS[2] then return 1 end
redis.call("RENAME", KEYS[1], KEYS[2])
for _, key in ipairs({KEYS[3], KEYS[4]}) do
  local value = redis.call("HGET", key, ARGV[1])
  redis.call("HDEL", key, ARGV[1])
  if value then redis.call("HSET", key, ARGV[2], value) else redis.call("HDEL", key, ARGV[2]) end
end
return 1
""")

# KEYS: file, meta. ARGV: path, mtime, expected size. Returns 1, or 0 when the body is missing or
# of another size (nothing written).
_SET_MTIME = _checked(1, """
if redis.call("EXISTS", KEYS[1]) == 0 then return 0 end
if redis.call("STRLEN", KEYS[1]) ~= tonumber(ARGV[3]) then return 0 end
redis.call("HSET", KEYS[2], ARGV[1], ARGV[2])
return 1
""")

# KEYS: meta, then file keys. ARGV: the paths (meta fields). Returns {size or -1, mtime or false}
# per key.
_STAT = """
local out = {}
for i = 2, #KEYS do
  local size = -1
  if redis.call("EXISTS", KEYS[i]) == 1 then size = redis.call("STRLEN", KEYS[i]) end
  out[i - 1] = {size, redis.call("HGET", KEYS[1], ARGV[i - 1])}
end
return out
"""


def redact_url(url: str) -> str:
    """The URL with its password hidden, for messages."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        user = parts.username or ""
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
    except ValueError:
        return url


def _split_prefix(url: str, prefix: str) -> tuple[str, str]:
    """``?prefix=`` in the URL names the key prefix (it wins over the argument); redis-py would
    refuse the unknown query parameter, so it is taken out."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    rest = [(k, v) for k, v in query if k != "prefix"]
    given = [v for k, v in query if k == "prefix"]
    if given:
        prefix = given[-1]
    return urlunsplit(parts._replace(query=urlencode(rest))), prefix


class RedisStorage:
    """A :class:`~omp_session.storage.SessionStorage` on a Redis server (``redis://``,
    ``rediss://`` or ``unix://`` URL). Paths are the keys, as omp uses them."""

    persistent = True

    def __init__(self, url: str, *, prefix: str = DEFAULT_PREFIX, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.url = redact_url(url)
        scheme = url.split("://", 1)[0].lower() if "://" in url else ""
        if scheme not in _SCHEMES:
            self._fail("opening", "not a Redis URL (expected redis://HOST[:PORT][/DB], rediss://... or unix://...)")
        try:
            plain, self.prefix = _split_prefix(url, prefix)
            db = urlsplit(plain).path.strip("/")
            if scheme != "unix" and db and not db.isdigit():
                raise ValueError(f"the database must be a number, not {db!r}")
            # the socket timeout bounds the TLS handshake and each reply too: a server that is not
            # Redis (or not TLS) answers nothing, and waiting would hang the command
            self._client: redis.Redis = redis.Redis.from_url(
                plain, socket_connect_timeout=timeout, socket_timeout=timeout, retry=Retry(NoBackoff(), 0),
                retry_on_error=[], health_check_interval=30)
        except (ValueError, TypeError) as e:  # TypeError: a query option redis-py does not know
            self._fail("opening", f"not a valid Redis URL: {e}")
        if not self.prefix:
            self._fail("opening", "the key prefix is empty")
        p = self.prefix.encode("utf-8")
        self._file_prefix = p + b"file:"
        self._meta = p + b"meta"
        self._title = p + b"title"
        self._last_mtime = 0
        self._write_full = self._client.register_script(_WRITE_FULL)
        self._append = self._client.register_script(_APPEND)
        self._append_if_size = self._client.register_script(_APPEND_IF_SIZE)
        self._set_title = self._client.register_script(_SET_TITLE)
        self._rename = self._client.register_script(_RENAME)
        self._stat_script = self._client.register_script(_STAT)
        self._set_mtime = self._client.register_script(_SET_MTIME)
        with self._guard("connecting"):
            pipe = self._client.pipeline(transaction=False)
            pipe.ping()
            pipe.type(self._meta)
            pipe.type(self._title)
            try:
                _, meta_type, title_type = pipe.execute()
            except redis.exceptions.TimeoutError as e:
                self._fail("connecting", f"no answer within {timeout:g} s ({_first_line(e)}; is it a Redis "
                           "server, and TLS only with rediss://?)")
        for key, found in ((self._meta, meta_type), (self._title, title_type)):
            if found not in (b"none", b"hash"):
                self._fail("opening", f"key {key.decode()} is a {found.decode()}, not the hash omp 18.2.3 keeps "
                           "there: another omp version or another application uses this prefix")

    # ----- errors -----------------------------------------------------------------------------

    def _fail(self, action: str, reason: str) -> NoReturn:
        raise StoreError(f"redis store {self.url}: {action} failed: {reason}")

    @contextmanager
    def _guard(self, action: str, path: str | None = None) -> Iterator[None]:
        """Redis client errors become one line naming the store (and the session)."""
        try:
            yield
        except redis.exceptions.AuthenticationError as e:
            self._fail(action, f"authentication refused ({_first_line(e)})")
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as e:
            self._fail(action, f"cannot reach the server ({_first_line(e)})")
        except redis.exceptions.NoPermissionError as e:
            self._fail(action, f"permission denied ({_first_line(e)})")
        except redis.exceptions.ResponseError as e:
            text = _first_line(e)  # inside a pipeline the server's code is not at the start
            if "WRONGPASS" in text or "NOAUTH" in text:
                self._fail(action, f"authentication refused ({text})")
            if "NOPERM" in text:
                self._fail(action, f"permission denied ({text})")
            if "WRONGTYPE" in text:
                where = f" for {path}" if path is not None else ""
                self._fail(action, f"a key{where} is not of the type omp 18.2.3 uses: another omp version "
                           "or another application uses this prefix")
            self._fail(action, text)
        except redis.exceptions.RedisError as e:
            self._fail(action, _first_line(e))

    # ----- keys -------------------------------------------------------------------------------

    def _key(self, path: str) -> bytes:
        return self._file_prefix + _enc(path)

    def _mtime(self) -> int:
        """Strictly increasing milliseconds, as omp allocates them."""
        now = int(time.time() * 1000)
        self._last_mtime = now if now > self._last_mtime else self._last_mtime + 1
        return self._last_mtime

    # ----- the SessionStorage protocol -------------------------------------------------------

    def size(self, path: str) -> int | None:
        with self._guard("reading the size of " + path, path):
            pipe = self._client.pipeline(transaction=True)
            pipe.exists(self._key(path))
            pipe.strlen(self._key(path))
            exists, length = pipe.execute()
        return int(length) if exists else None

    def stat(self, path: str) -> StoredFile | None:
        """Size and the mtime omp recorded in ``<prefix>meta`` (now, as omp reads it, when that
        field is missing or not a number)."""
        with self._guard("reading " + path, path):
            found = self._stat([self._key(path)], [_enc(path)])
        return found[0]

    def read(self, path: str) -> bytes:
        with self._guard("reading " + path, path):
            pipe = self._client.pipeline(transaction=True)
            pipe.get(self._key(path))
            pipe.hget(self._title, _enc(path))
            body, meta = pipe.execute()
        if body is None:
            raise FileNotFoundError(path)
        return overlay_title(bytes(body), meta)

    def append(self, path: str, line: bytes) -> int:
        with self._guard("appending an entry to " + path, path):
            added = int(self._append(keys=[self._key(path), self._meta], args=[line, _enc(path), self._mtime()]))
        if added < 0:
            raise FileNotFoundError(path)
        return added

    def append_if_size(self, path: str, expected_size: int, data: bytes) -> bool:
        with self._guard("appending entries to " + path, path):
            done = self._append_if_size(keys=[self._key(path), self._meta],
                                        args=[data, _enc(path), self._mtime(), expected_size])
        return bool(int(done))

    def replace(self, path: str, body: bytes, expected_size: int | None) -> None:
        slot = leading_slot(body)
        title = _title_json(slot) if slot is not None else b""
        expected = -1 if expected_size is None else expected_size
        with self._guard("rewriting " + path, path):
            done, found = self._write_full(
                keys=[self._key(path), self._meta, self._title],
                args=[body, _enc(path), self._mtime(), b"1" if slot is not None else b"0", title, expected])
        if not int(done):
            found_size = None if int(found) < 0 else int(found)
            raise WriteConflictError(conflict_message(path, expected_size, found_size))

    def write_title_slot(self, path: str, slot: bytes) -> bool:
        """Record a title change the way omp does: only ``<prefix>title`` changes, the stored body
        keeps its slot and reads show the new one. False when the body has no 256-byte slot."""
        assert len(slot) == TITLE_SLOT_BYTES
        parsed = parse_title_slot(slot[:-1])
        if parsed is None:
            return False
        with self._guard("writing the title of " + path, path):
            head: Any = self._client.getrange(self._key(path), 0, TITLE_SLOT_BYTES + 2)
            if leading_slot(bytes(head)) is None:
                return False
            done = self._set_title(keys=[self._key(path), self._meta, self._title],
                                   args=[head, _enc(path), self._mtime(), _title_json(parsed)])
        return bool(int(done))

    def list(self, directory: str, pattern: str) -> list[str]:
        base = directory if directory.endswith("/") else directory + "/"
        out = []
        for path in self._scan(base):
            name = path[len(base):]
            if "/" not in name and "\\" not in name and fnmatch.fnmatchcase(name, pattern):
                out.append(path)
        return sorted(out)

    def scan(self, prefix: str) -> builtins.list[StoredFile]:
        """Every session (``.jsonl`` key) under ``prefix``, at any depth, sorted by key: omp's index
        warm-up (SCAN over ``<prefix>file:*``, then each key's length and mtime)."""
        paths = sorted(p for p in self._scan(prefix) if p.endswith(".jsonl"))
        out: builtins.list[StoredFile] = []
        with self._guard("listing " + (prefix or "the store")):
            for i in range(0, len(paths), _SCAN_COUNT):
                batch = paths[i:i + _SCAN_COUNT]
                found = self._stat([self._key(p) for p in batch], [_enc(p) for p in batch])
                out.extend(f for f in found if f is not None)
        return out

    def delete(self, path: str) -> None:
        """Remove the body, its metadata, and everything under its artifacts directory."""
        paths = [path]
        if path.endswith(".jsonl"):
            paths += self._scan(path[: -len(".jsonl")] + "/")
        fields = [_enc(p) for p in paths]
        with self._guard("deleting " + path, path):
            pipe = self._client.pipeline(transaction=True)
            pipe.delete(*[self._key(p) for p in paths])
            pipe.hdel(self._meta, *fields)
            pipe.hdel(self._title, *fields)
            pipe.execute()

    def set_mtime(self, path: str, mtime_ms: float, expected_size: int) -> bool:
        """Set the mtime omp keeps in ``<prefix>meta`` if the body still holds ``expected_size``
        bytes; False otherwise."""
        with self._guard("setting the modification time of " + path, path):
            done = self._set_mtime(keys=[self._key(path), self._meta],
                                   args=[_enc(path), int(mtime_ms), expected_size])
        return bool(int(done))

    def rename(self, src: str, dst: str) -> None:
        """Move a session, its mtime and its title to ``dst`` in one step (a destination is
        replaced). FileNotFoundError when ``src`` is missing."""
        with self._guard(f"renaming {src} to {dst}", src):
            moved = self._rename(keys=[self._key(src), self._key(dst), self._meta, self._title],
                                 args=[_enc(src), _enc(dst)])
        if not int(moved):
            raise FileNotFoundError(src)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> RedisStorage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- helpers ----------------------------------------------------------------------------

    def _stat(self, keys: builtins.list[bytes], fields: builtins.list[bytes]) -> builtins.list[StoredFile | None]:
        """One script for a batch: a key deleted after SCAN saw it reads as missing, never as 0 bytes."""
        rows: Any = self._stat_script(keys=[self._meta, *keys], args=fields)
        now = float(int(time.time() * 1000))
        out: builtins.list[StoredFile | None] = []
        for field, (size, raw) in zip(fields, rows, strict=True):
            if int(size) < 0:
                out.append(None)
                continue
            try:
                mtime = float(raw)
            except (TypeError, ValueError):
                mtime = now
            if mtime != mtime or mtime in (float("inf"), float("-inf")):
                mtime = now
            out.append(StoredFile(field.decode("utf-8", "surrogateescape"), int(size), mtime))
        return out

    def _scan(self, under: str) -> builtins.list[str]:
        """Paths starting with ``under`` (SCAN MATCH, as omp warms its index)."""
        match = _glob_escape(self._file_prefix + _enc(under)) + b"*"
        cut = len(self._file_prefix)
        with self._guard("listing " + (under or "the store")):
            keys = {bytes(k) for k in self._client.scan_iter(match=match, count=_SCAN_COUNT)}
        return [k[cut:].decode("utf-8", "surrogateescape") for k in keys]


def leading_slot(body: bytes) -> TitleSlot | None:
    """The title slot ``body`` starts with when it is exactly 256 bytes wide (LF included)."""
    if len(body) < TITLE_SLOT_BYTES or body[TITLE_SLOT_BYTES - 1] != 0x0A:
        return None
    first = body[: TITLE_SLOT_BYTES - 1]
    if b"\n" in first:
        return None
    return parse_title_slot(first)


def overlay_title(body: bytes, meta: bytes | None) -> bytes:
    """The body as omp's storage returns it: the slot rebuilt from the title metadata laid over
    the first 256 bytes. Only over a real slot: omp would also overwrite a body without one."""
    title = _decode_title_meta(meta)
    if title is None or leading_slot(body) is None:
        return body
    try:
        slot = build_title_slot(title.title, title.source, title.updated_at)
    except ValueError:  # metadata too long for a slot: omp throws; the stored slot stays
        return body
    return slot + body[TITLE_SLOT_BYTES:]


def _decode_title_meta(raw: bytes | None) -> TitleSlot | None:
    """omp's reading of a title HASH value: needs a string ``updatedAt``; a bad source is
    dropped, a missing or non-string title reads as empty."""
    if not raw:
        return None
    try:
        value: Any = codec.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("updatedAt"), str):
        return None
    source = value.get("source")
    title = value.get("title")
    return TitleSlot(title if isinstance(title, str) else "", source if source in ("auto", "user") else None,
                     value["updatedAt"])


def _title_json(slot: TitleSlot) -> bytes:
    text = codec.stringify(slot.to_json())
    assert text is not None
    return text.encode("utf-8", "surrogatepass")


def _enc(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def _glob_escape(raw: bytes) -> bytes:
    out = bytearray()
    for b in raw:
        if b in b"*?[]\\":
            out += b"\\"
        out.append(b)
    return bytes(out)


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]


if TYPE_CHECKING:  # mypy checks that the class keeps up with the protocol
    def _conforms(s: RedisStorage) -> SessionStorage:
        return s
