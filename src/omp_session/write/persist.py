"""The transform omp applies to every record it writes (spec S8.7).

omp never writes an entry as it holds it in memory: each line (header and
entries) first goes through a pass that drops duplicated OpenAI reasoning
signatures, moves large images into the blob store, truncates huge strings and
strips ``jsonlEvents``. A byte-identical writer has to run the same pass.

The pass is copy-on-write: the input is never mutated, unchanged subtrees are
returned as the very same objects, and a value with nothing to change comes
back as itself (callers may test ``result is value``).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from omp_session.format.blobs import (
    BLOB_PREFIX,
    BlobSink,
    b64decode_lenient,
    is_externalizable_image_position,
)
from omp_session.js.codec import utf16_len

__all__ = [
    "BLOB_EXTERNALIZE_MIN",
    "MAX_PERSIST_CHARS",
    "TRUNCATION_NOTICE",
    "drop_spilled_mcp_content",
    "persist_transform",
    "strip_replayed_reasoning_signatures",
    "truncate_for_persistence",
]

MAX_PERSIST_CHARS = 500_000
TRUNCATION_NOTICE = "\n\n[Session persistence truncated large content]"
BLOB_EXTERNALIZE_MIN = 1024

# UTF-16 units of the original kept in front of the notice.
_KEEP_UNITS = MAX_PERSIST_CHARS - len(TRUNCATION_NOTICE)
_SIGNATURE_KEYS = frozenset({"thinkingSignature", "thoughtSignature", "textSignature"})
_IMAGE_KEYS = frozenset({"content", "images", "frames"})
# A string above this many code points may exceed MAX_PERSIST_CHARS UTF-16 units.
_HALF_MAX = MAX_PERSIST_CHARS // 2
_SERVER_TOOL_NAMES = frozenset({"web_search", "tool_search_tool_regex", "tool_search_tool_bm25"})
_SERVER_TOOL_RESULT_TYPES = frozenset({"web_search_tool_result", "tool_search_tool_result"})


class _HashOnly:
    """Sink for dry runs: the ref omp would write, without storing anything."""

    def put(self, data: bytes, mime_type: str | None = None) -> str:
        return hashlib.sha256(data).hexdigest()


_HASH_ONLY = _HashOnly()


def _at_least_units(s: str, n: int) -> bool:
    # len() counts code points, each worth one or two UTF-16 units, so the
    # exact count is needed only inside [n/2, n).
    k = len(s)
    if k >= n:
        return True
    if 2 * k < n:
        return False
    return utf16_len(s) >= n


def _truncate(s: str) -> str:
    """First _KEEP_UNITS UTF-16 units, minus a dangling high surrogate, plus the notice."""
    if s.isascii():
        return s[:_KEEP_UNITS] + TRUNCATION_NOTICE
    units = s.encode("utf-16-le", "surrogatepass")[: 2 * _KEEP_UNITS]
    last = int.from_bytes(units[-2:], "little")
    if 0xD800 <= last <= 0xDBFF:
        units = units[:-2]
    # surrogatepass keeps lone surrogates as they were; a pair split by the cut
    # cannot occur (its high half would have been dropped above).
    return units.decode("utf-16-le", "surrogatepass") + TRUNCATION_NOTICE


def _data_url_bytes(s: str) -> bytes:
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:
        # Buffer.from(s, "utf8") pairs surrogates and turns lone ones into U+FFFD.
        return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")


def _ref(sink: BlobSink, data: bytes, mime_type: object = None) -> str:
    # omp throws on a truthy non-string mimeType (its write then fails and is
    # latched); there is no omp output to match, so we store without a sidecar.
    mime = mime_type if isinstance(mime_type, str) else None
    return BLOB_PREFIX + sink.put(data, mime)


# ----------------------------------------------------------------- verbatim blocks


def _is_nonempty_str(v: object) -> bool:
    return isinstance(v, str) and len(v) > 0


def _is_server_tool_history(block: dict[str, Any]) -> bool:
    t = block["type"]
    if t == "server_tool_use":
        name = block.get("name")
        return isinstance(name, str) and name in _SERVER_TOOL_NAMES and _is_nonempty_str(block.get("id"))
    if t in _SERVER_TOOL_RESULT_TYPES:
        return _is_nonempty_str(block.get("tool_use_id")) and "content" in block
    return False


def _is_verbatim(obj: dict[str, Any], key: str | None) -> bool:
    """Blocks omp persists byte-for-byte because a provider validates them on replay."""
    t = obj.get("type")
    if t == "anthropicServerTool" and "block" in obj:
        block = obj["block"]
        if isinstance(block, dict) and isinstance(block.get("type"), str) and _is_server_tool_history(block):
            return True
    if t == "anthropicCompaction":
        return True
    if key == "anthropicCompaction" and isinstance(obj.get("content"), str):
        return True
    if t == "thinking":
        return _is_nonempty_str(obj.get("thinkingSignature"))
    if t == "text":
        return _is_nonempty_str(obj.get("textSignature"))
    if t == "toolCall":
        return _is_nonempty_str(obj.get("thoughtSignature"))
    if t == "redactedThinking":
        return _is_nonempty_str(obj.get("data"))
    if t == "reasoning":
        return _is_nonempty_str(obj.get("encrypted_content"))
    return False


# ----------------------------------------------------------------- the walk


def _walk_str(s: str, key: str | None, sink: BlobSink) -> str:
    if key == "image_url" and s.startswith("data:image/") and ";base64," in s:
        return _ref(sink, _data_url_bytes(s))
    if len(s) > _HALF_MAX and utf16_len(s) > MAX_PERSIST_CHARS:
        if key in _SIGNATURE_KEYS:
            return s
        return _truncate(s)
    return s


def _settled(obj: dict[str, Any], key: str | None, sink: BlobSink) -> dict[str, Any] | None:
    """What an object becomes without descending into it, or None when its members are walked.

    Externalization returns a shallow copy without descending any further: the rest of such an
    object is written as it is (no truncation, and even jsonlEvents stays).
    """
    t = obj.get("type")
    if t == "image_generation_call":
        result = obj.get("result")
        if (isinstance(result, str) and not result.startswith(BLOB_PREFIX)
                and _at_least_units(result, BLOB_EXTERNALIZE_MIN)):
            out = dict(obj)
            out["result"] = _ref(sink, b64decode_lenient(result))
            return out
    if key in _IMAGE_KEYS and is_externalizable_image_position(obj, key):
        data = obj["data"]
        if not data.startswith(BLOB_PREFIX) and _at_least_units(data, BLOB_EXTERNALIZE_MIN):
            out = dict(obj)
            out["data"] = _ref(sink, b64decode_lenient(data), obj.get("mimeType"))
            return out
    if (t is not None or key == "anthropicCompaction") and _is_verbatim(obj, key):
        return obj
    return None


def _finish_dict(new_obj: dict[str, Any]) -> dict[str, Any]:
    content = new_obj.get("content")
    line_count = new_obj.get("lineCount")
    if (isinstance(content, str) and isinstance(line_count, (int, float))
            and not isinstance(line_count, bool)):
        new_obj["lineCount"] = content.count("\n") + 1
    return new_obj


# A frame of the walk: [the original container, its key (array items inherit their array's key),
# an iterator over its members, the copy made at the first change (None until then), its slot in
# the container above (a key or an index), whether it is an object]. An explicit stack, so that
# any nesting depth is walked: JSON.stringify writes what the reader took at any depth, and so
# must the transform before it.
_Frame = list[Any]
# Only objects with a "type" member or under one of these keys can be settled without a look inside.
_SETTLE_KEYS = _IMAGE_KEYS | {"anthropicCompaction"}


def _walk(value: Any, key: str | None, sink: BlobSink) -> Any:
    """Step 2 of S8.7 over ``value``: copy-on-write, members in order, depth first.

    The member loops dispatch on exact types inline (on real sessions the walk is bound by
    per-node overhead, not by bytes: a big string costs O(1) to check); subclasses and exotic
    objects take the ``isinstance`` checks after them.
    """
    if isinstance(value, str):
        return _walk_str(value, key, sink)
    if isinstance(value, dict):
        done = _settled(value, key, sink)
        if done is not None:
            return done
        stack: list[_Frame] = [[value, key, iter(value.items()), None, None, True]]
    elif isinstance(value, list):
        stack = [[value, key, enumerate(value), None, None, False]]
    else:
        return value
    while True:
        frame = stack[-1]
        obj, fkey, members, new, slot, is_dict = frame
        child: Any = None
        if is_dict:
            for k, v in members:
                if k == "jsonlEvents":
                    if new is None:
                        new = frame[3] = _prefix_copy(obj, k)
                    continue
                c = v.__class__
                nv: Any
                if c is str:
                    nv = v if k != "image_url" and len(v) <= _HALF_MAX else _walk_str(v, k, sink)
                elif v is None or c is int or c is float or c is bool:
                    nv = v
                elif isinstance(v, str):
                    nv = _walk_str(v, k, sink)
                elif isinstance(v, dict):
                    nv = _settled(v, k, sink) if "type" in v or k in _SETTLE_KEYS else None
                    if nv is None:
                        child = [v, k, iter(v.items()), None, k, True]
                        break
                elif isinstance(v, list):
                    child = [v, k, enumerate(v), None, k, False]
                    break
                else:
                    nv = v
                if new is None:
                    if nv is v:
                        continue
                    new = frame[3] = _prefix_copy(obj, k)
                new[k] = nv
        else:
            for i, item in members:
                c = item.__class__
                new_item: Any
                if c is str:
                    if fkey != "image_url" and len(item) <= _HALF_MAX:
                        continue
                    new_item = _walk_str(item, fkey, sink)
                elif item is None or c is int or c is float or c is bool:
                    continue
                elif isinstance(item, str):
                    new_item = _walk_str(item, fkey, sink)
                elif isinstance(item, dict):
                    new_item = _settled(item, fkey, sink) if "type" in item or fkey in _SETTLE_KEYS else None
                    if new_item is None:
                        child = [item, fkey, iter(item.items()), None, i, True]
                        break
                elif isinstance(item, list):
                    child = [item, fkey, enumerate(item), None, i, False]
                    break
                else:
                    continue
                if new_item is not item:
                    if new is None:
                        new = frame[3] = list(obj)
                    new[i] = new_item
        if child is not None:
            stack.append(child)
            continue
        # the frame's members are done: its result goes to the member slot of the frame above
        stack.pop()
        if new is None:
            result = obj
        elif is_dict:
            result = _finish_dict(new)
        else:
            result = new
        if not stack:
            return result
        parent = stack[-1]
        pobj, pnew = parent[0], parent[3]
        if parent[5]:
            if pnew is None:
                if result is obj:
                    continue
                pnew = parent[3] = _prefix_copy(pobj, slot)
            pnew[slot] = result
        elif result is not obj:
            if pnew is None:
                pnew = parent[3] = list(pobj)
            pnew[slot] = result


def _prefix_copy(obj: dict[str, Any], stop: str) -> dict[str, Any]:
    """The items of ``obj`` before key ``stop``, in order."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        if k == stop:
            break
        out[k] = v
    return out


# ----------------------------------------------------------------- signature dedupe


def _parse_json(text: str) -> Any:
    def reject(name: str) -> Any:
        # JSON.parse has no NaN/Infinity literals.
        raise ValueError(name)

    return json.loads(text, parse_constant=reject)


def _reasoning_keys(item: object) -> tuple[str | None, str | None] | None:
    """(encrypted_content, id) of an OpenAI reasoning item, each None when empty/absent."""
    if not isinstance(item, dict) or item.get("type") != "reasoning":
        return None
    enc = item.get("encrypted_content")
    rid = item.get("id")
    return (enc if _is_nonempty_str(enc) else None, rid if _is_nonempty_str(rid) else None)


def _signature_covered(signature: str, encrypted: set[str], ids: set[str]) -> bool:
    try:
        parsed = _parse_json(signature)
    except (ValueError, RecursionError):
        return False
    keys = _reasoning_keys(parsed)
    if keys is None:
        return False
    enc, rid = keys
    # An item that carries encrypted content is matched on that alone, never by id.
    if enc is not None:
        return enc in encrypted
    if rid is not None:
        return rid in ids
    return False


def _has_signature(block: object) -> bool:
    return (isinstance(block, dict) and block.get("type") == "thinking"
            and _is_nonempty_str(block.get("thinkingSignature")))


def strip_replayed_reasoning_signatures(entry: Any) -> Any:
    """Step 1 of S8.7: drop ``thinkingSignature``s already carried by ``providerPayload.items``.

    Shapes on which omp itself throws (a ``message`` entry without a message,
    non-array content) are passed through unchanged.
    """
    if not isinstance(entry, dict) or entry.get("type") != "message":
        return entry
    message = entry.get("message")
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return entry
    payload = message.get("providerPayload")
    if not isinstance(payload, dict) or payload.get("type") != "openaiResponsesHistory":
        return entry
    items = payload.get("items")
    content = message.get("content")
    if not isinstance(items, list) or not isinstance(content, list):
        return entry
    if not any(_has_signature(b) for b in content):
        return entry
    encrypted: set[str] = set()
    ids: set[str] = set()
    for item in items:
        keys = _reasoning_keys(item)
        if keys is None:
            continue
        if keys[0] is not None:
            encrypted.add(keys[0])
        if keys[1] is not None:
            ids.add(keys[1])
    if not encrypted and not ids:
        return entry
    new_content: list[Any] | None = None
    for i, block in enumerate(content):
        if _has_signature(block) and _signature_covered(block["thinkingSignature"], encrypted, ids):
            if new_content is None:
                new_content = list(content)
            # omp sets the key to undefined, which the serializer drops: same bytes.
            new_content[i] = {k: v for k, v in block.items() if k != "thinkingSignature"}
    if new_content is None:
        return entry
    new_message = dict(message)
    new_message["content"] = new_content
    new_entry = dict(entry)
    new_entry["message"] = new_message
    return new_entry


# ----------------------------------------------------------------- entry point


def truncate_for_persistence(value: Any, store: BlobSink | None) -> Any:
    """Step 2 of S8.7 alone (the walk, at any nesting depth)."""
    return _walk(value, None, _HASH_ONLY if store is None else store)


def drop_spilled_mcp_content(value: Any) -> Any:
    """omp 18.3 (S20.2.3): a ``toolResult`` whose MCP output spilled to an artifact (``details``
    with ``serverName``, ``mcpToolName`` and ``meta.truncation.artifactId``) is written without
    ``details.structuredContent``; the artifact holds it. A copy: the entry in memory keeps it."""
    if value.__class__ is not dict or value.get("type") != "message":
        return value
    message = value.get("message")
    if message.__class__ is not dict or message.get("role") != "toolResult":
        return value
    details = message.get("details")
    if details.__class__ is not dict or "structuredContent" not in details:
        return value
    meta = details.get("meta")
    truncation = meta.get("truncation") if meta.__class__ is dict else None
    if not (details.get("serverName") and details.get("mcpToolName")
            and truncation.__class__ is dict and truncation.get("artifactId")):
        return value
    slim = {k: v for k, v in details.items() if k != "structuredContent"}
    return {**value, "message": {**message, "details": slim}}


def persist_transform(value: Any, store: BlobSink | None, *, s20: bool = False) -> Any:
    """The S8.7 transform of one record (header or entry) as omp writes it.

    ``store`` receives the blobs of externalized images (``put(data, mime_type)``
    returning the sha256 hex); with ``store=None`` the refs are computed but
    nothing is stored (dry runs). Returns ``value`` itself when nothing changes.

    Values on which omp's own transform throws (a ``message`` entry without a
    message, an ``openaiResponsesHistory`` assistant whose content is not an
    array, an image with a non-string ``mimeType``) pass through instead.

    There is no serialize-and-search pre-check: on realistic sessions the walk
    costs per node and big strings cost O(1), and measured, orjson.dumps plus
    the substring searches a safe pre-check needs took twice as long as the
    walk itself.
    """
    sink: BlobSink = _HASH_ONLY if store is None else store
    if s20:
        value = drop_spilled_mcp_content(value)
    return _walk(strip_replayed_reasoning_signatures(value), None, sink)
