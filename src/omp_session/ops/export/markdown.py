"""The Markdown export (docs/export.md): one branch in order, or every branch as sections.

Every value from the session goes through model/text.py's escaping (fences, code spans, escaped
text; its common cases through markdown_text.py, the same text faster), so content cannot break
the document's structure. The header's figures come from markdown_usage.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from omp_session.format.split import interleaved
from omp_session.js.codec import UNDEFINED
from omp_session.model.session import Session, usage_or_model_candidates
from omp_session.model.text import (
    compact_json,
    finite_number,
    image_note,
    model_of,
    nonempty_str,
    preview,
    shown,
    tokens,
)
from omp_session.model.tree import branch_tips, leaf_of, path_to

from .markdown_text import encoded_lines, fence, inline, inline_code, pretty_json, usage_inline
from .markdown_usage import all_figures

__all__ = ["markdown", "markdown_chunks"]

_BATCH = 64  # entries rendered before their text is handed on


# ----- rendering ----------------------------------------------------------------------------------


class _Renderer:
    def __init__(self, session: Session) -> None:
        self.s = session
        self.peek = session.peek_in_order()  # entries asked for in file order but at forks
        self.out: list[str] = []
        self.last_model: str | None = None

    def para(self, text: str) -> None:
        self.out.append(text)
        self.out.append("")

    def meta(self, k: int, entry: Any, extra: str = "") -> None:
        """The line under a heading: entry id, time, label in effect."""
        ident = self.s.ids[k]
        parts = [inline_code(ident if ident is not UNDEFINED else "(no id)")]
        stamp = entry.get("timestamp") if isinstance(entry, dict) else None
        if isinstance(stamp, str):
            parts.append(inline(stamp))
        label = self.s.get_label(ident)
        if label is not None:
            parts.append(f"label **{inline(label)}**")
        if extra:
            parts.append(extra)
        self.para(" · ".join(parts))

    def note(self, k: int, title: str, detail: str = "") -> None:
        """A one-paragraph note for entries that are not conversation (settings, labels...)."""
        ident = self.s.ids[k]
        label = self.s.get_label(ident)
        tail = f" · label **{inline(label)}**" if label is not None else ""
        ident = ident if ident is not UNDEFINED else "(no id)"
        self.para(f"*{title}*{': ' + detail if detail else ''} · {inline_code(ident)}{tail}")

    def take(self) -> bytes:
        """The lines rendered since the last call, each ended by a newline, as UTF-8: lines never
        split a surrogate pair, so cleaning them one batch at a time equals cleaning the whole.
        (Every piece of the document passes here: fence leaves the cleaning to it.)"""
        if not self.out:
            return b""
        out, self.out = self.out, []
        return encoded_lines(out)

    def entry(self, k: int, level: int) -> None:
        entry = self.peek(k)
        h = "#" * level
        if not isinstance(entry, dict):
            self.note(k, "Non-object record", inline_code(compact_json(entry)))
            return
        kind = entry.get("type")
        if kind == "message":
            message = entry.get("message")
            if isinstance(message, dict):
                self.message(k, entry, message, h)
            else:
                self.note(k, "Message entry without a message object")
        elif kind == "compaction":
            self.out += [f"{h} Compaction", ""]
            self.meta(k, entry)
            first = entry.get("firstKeptEntryId")
            detail = [f"{tokens(entry.get('tokensBefore'))} tokens before"]
            if finite_number(entry.get("tokensAfter")) is not None:
                detail.append(f"{tokens(entry.get('tokensAfter'))} after")
            if nonempty_str(entry.get("method")):
                detail.append(f"method {inline(entry['method'])}")
            kept = f"; first kept entry {inline_code(first)}" if nonempty_str(first) else ""
            self.para(f"**Earlier history was compacted** ({', '.join(detail)}){kept}. Summary:")
            if nonempty_str(entry.get("shortSummary")):
                self.para(f"Short summary: {inline(entry['shortSummary'])}")
            self.para(fence(shown(entry.get("summary", "")), "markdown"))
        elif kind == "branch_summary":
            self.out += [f"{h} Branch summary", ""]
            self.meta(k, entry)
            origin = entry.get("fromId")
            self.para(f"**Summary of an abandoned branch**, returning to {inline_code(origin)}:" if nonempty_str(origin)
                      else "**Summary of an abandoned branch:**")
            self.para(fence(shown(entry.get("summary", "")), "markdown"))
        elif kind == "custom_message":
            self.custom_message(k, entry, h)
        else:
            self.setting(k, entry, shown(kind))

    def setting(self, k: int, entry: dict[str, Any], kind: str) -> None:
        get = entry.get
        if kind == "model_change":
            role = f" (role {inline(get('role'))})" if nonempty_str(get("role")) else ""
            self.note(k, "Model changed", f"{inline(get('model'))}{role}")
            self.last_model = nonempty_str(get("model"))
        elif kind == "thinking_level_change":
            self.note(k, "Thinking level", inline(get("thinkingLevel")))
        elif kind == "service_tier_change":
            self.note(k, "Service tier", inline(get("serviceTier")))
        elif kind == "mode_change":
            self.note(k, "Mode", inline(get("mode")))
        elif kind == "title_change":
            self.note(k, "Title set", inline(get("title")))
        elif kind == "label":
            label = get("label")
            self.note(k, "Label", f"{inline_code(get('targetId'))} "
                      + (f"labelled **{inline(label)}**" if nonempty_str(label) else "label cleared"))
        elif kind == "reset_boundary":
            self.note(k, "Context cleared (/clear)")
        elif kind == "model_usage":
            usage = get("usage")
            self.note(k, "Side model call", f"{inline(get('purpose'))}, {inline(get('model'))}, "
                      + usage_inline(usage))
        elif kind == "custom":
            self.note(k, "Extension state", inline_code(get("customType")))
        elif kind == "ttsr_injection":
            rules = get("injectedRules")
            self.note(k, "Rules injected", inline(", ".join(map(str, rules)) if isinstance(rules, list) else rules))
        elif kind == "session_init":
            self.note(k, "Subagent start", inline(get("task")) if nonempty_str(get("task")) else "")
        elif kind == "credential_pin":
            self.note(k, "Credential pinned", inline(get("provider")))
        else:
            self.note(k, f"Entry of type {inline_code(kind)}")

    def custom_message(self, k: int, entry: dict[str, Any], h: str) -> None:
        self.out += [f"{h} Extension message: {inline(entry.get('customType') or 'custom-message')}", ""]
        hidden = "" if entry.get("display") is True else "not displayed to the user"
        self.meta(k, entry, hidden)
        self.content(entry.get("content"), "markdown")

    def content(self, content: Any, info: str) -> None:
        if isinstance(content, str):
            if content:
                self.para(fence(content, info))
            return
        if not isinstance(content, list):
            if content is not None and content is not UNDEFINED:
                self.para(fence(pretty_json(content), "json"))
            return
        for block in content:
            self.block(block, info)

    def block(self, block: Any, info: str) -> None:
        if not isinstance(block, dict):
            self.para(fence(pretty_json(block), "json"))
            return
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str) and text:
                self.para(fence(text, info))
        elif kind == "thinking":
            text = block.get("thinking")
            if isinstance(text, str) and text.strip():
                self.out += ["<details>", "<summary>Thinking</summary>", ""]
                self.para(fence(text, "markdown"))
                self.para("</details>")
        elif kind == "redactedThinking":
            data = block.get("data")
            self.para(f"*\\[redacted thinking: {len(data) if isinstance(data, str) else 0:,} characters "
                      "of encrypted data\\]*")
        elif kind == "toolCall":
            intent = f" — {inline(block['intent'])}" if nonempty_str(block.get("intent")) else ""
            self.para(f"**Tool call** {inline_code(block.get('name'))} · id {inline_code(block.get('id'))}{intent}")
            self.para(fence(pretty_json(block.get("arguments", {})), "json"))
        elif kind == "image":
            self.para(image_note(block))
        elif kind == "fallback":
            self.para(f"*Server fallback from {inline(pretty_json(block.get('from')))} "
                      f"to {inline(pretty_json(block.get('to')))}*")
        else:
            self.para(f"*Block of type {inline_code(kind)}:*")
            self.para(fence(pretty_json(block), "json"))

    def message(self, k: int, entry: dict[str, Any], message: dict[str, Any], h: str) -> None:
        role = message.get("role")
        if role == "user" or role == "developer":
            self.out += [f"{h} {'User' if role == 'user' else 'Developer'}", ""]
            self.meta(k, entry)
            self.content(message.get("content"), "markdown")
        elif role == "assistant":
            model = model_of(message)
            changed = model is not None and self.last_model is not None and model != self.last_model
            self.out += [f"{h} Assistant", ""]
            parts = [inline(model)] if model else []
            if changed:
                parts[-1] += f" (model changed from {inline(self.last_model)})"
            if isinstance(message.get("usage"), dict):
                parts.append(usage_inline(message["usage"]))
            stop = message.get("stopReason")
            if nonempty_str(stop) and stop != "stop" and stop != "toolUse":
                parts.append(f"stopped: {inline(stop)}")
            self.meta(k, entry, " · ".join(parts))
            if model:
                self.last_model = model
            if nonempty_str(message.get("errorMessage")):
                self.para(f"**Error:** {inline(message['errorMessage'])}")
            self.content(message.get("content"), "markdown")
        elif role == "toolResult":
            error = " (error)" if message.get("isError") is True else ""
            self.out += [f"{h} Tool result: {inline(message.get('toolName'))}{error}", ""]
            self.meta(k, entry, f"call {inline_code(message.get('toolCallId'))}")
            if finite_number(message.get("prunedAt")) is not None:
                self.para("*Output pruned by omp to save context.*")
            self.content(message.get("content"), "text")
        elif role in ("bashExecution", "pythonExecution"):
            bash = role == "bashExecution"
            self.out += [f"{h} {'Bash' if bash else 'Python'} execution", ""]
            code = message.get("exitCode")
            self.meta(k, entry, f"exit code {inline(code)}" if finite_number(code) is not None else "")
            self.para(fence(shown(message.get("command" if bash else "code", "")), "sh" if bash else "python"))
            output = message.get("output")
            if isinstance(output, str) and output:
                self.para(fence(output, "text"))
        elif role in ("custom", "hookMessage"):
            self.custom_message(k, {**message, "timestamp": entry.get("timestamp")}, h)
        elif role in ("branchSummary", "compactionSummary"):
            self.out += [f"{h} {'Branch' if role == 'branchSummary' else 'Compaction'} summary", ""]
            self.meta(k, entry)
            self.para(fence(shown(message.get("summary", "")), "markdown"))
        elif role == "fileMention":
            self.out += [f"{h} File mention", ""]
            self.meta(k, entry)
            files = message.get("files")
            for f in files if isinstance(files, list) else []:
                self.para(f"- {inline_code(f.get('path') if isinstance(f, dict) else f)}")
        else:
            self.out += [f"{h} Message with role {inline_code(role)}", ""]
            self.meta(k, entry)
            self.para(fence(pretty_json(message), "json"))


def _header(s: Session, r: _Renderer, branch: Sequence[int], leaf: Any, tips: list[int], counted: Sequence[int]) -> None:
    header = s.header or {}
    title = s.get_session_name()
    r.para(f"# {inline(title)}" if title else f"# Session {inline(header.get('id') or s.path or '')}".rstrip())
    rows: list[tuple[str, str]] = []
    if header.get("id") is not None:
        rows.append(("Session", inline_code(header["id"])))
    if s.header is None:
        rows.append(("Header", "missing or invalid: omp cannot resume this file"))
    for key, name in (("cwd", "Working directory"), ("parentSession", "Parent session")):
        if nonempty_str(header.get(key)):
            rows.append((name, inline_code(header[key])))
    if nonempty_str(header.get("timestamp")):
        rows.append(("Created", inline(header["timestamp"])))
    models, branch_usage, all_usage = all_figures(s, branch, counted)
    if models:
        rows.append(("Models", ", ".join(inline(m) for m in models)))
    rows.append(("Entries", f"{len(s):,} in the file, {len(branch):,} on this branch, {len(tips):,} "
                 f"branch{'es' if len(tips) != 1 else ''}"))
    rows.append(("Leaf", inline_code(leaf) if leaf is not None else "none"))
    rows.append(("Tokens and cost (this branch)", inline(branch_usage)))
    rows.append(("Tokens and cost (all branches)", inline(all_usage)))
    labels = s.labels()
    if labels:
        rows.append(("Labels", ", ".join(f"{inline_code(t)} **{inline(v)}**" for t, v in labels.items())))
    if s.diagnostics:
        counts: dict[str, int] = {}
        for d in s.diagnostics:
            counts[d.severity.value] = counts.get(d.severity.value, 0) + 1
        rows.append(("Problems found while reading", ", ".join(f"{n:,} {sev}" + ("s" if n != 1 and sev != "info" else "")
                                                               for sev, n in counts.items())
                     + " (run omp-session validate)"))
    r.para("\n".join(f"- **{name}:** {value}" for name, value in rows))


class _Unset:
    pass


_UNSET: Any = _Unset()


def _model_set_by(entry: Any) -> Any:
    """What rendering ``entry`` sets the renderer's ``last_model`` to (:data:`_UNSET`: nothing):
    an assistant message naming a model, that model; a model change, its model or None."""
    if not isinstance(entry, dict):
        return _UNSET
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "assistant":
            return model_of(message) or _UNSET
    elif kind == "model_change":
        return nonempty_str(entry.get("model"))
    return _UNSET


def _models_at(s: Session, branch: Sequence[int], starts: list[int], counted: Sequence[int]) -> Callable[[int], str | None]:
    """For each start of a piece of ``branch``, the ``last_model`` rendering ``branch`` from its
    first entry up to there leaves: found walking back from the start to the entry that set it,
    each piece walked at most once (only entries that may name a model are decoded)."""
    number = {lo: n for n, lo in enumerate(starts)}
    known: dict[int, str | None] = {0: None}

    def at(lo: int) -> str | None:
        n = number[lo]
        waiting: list[int] = []
        while n not in known:
            found = _last_set(s, branch[starts[n - 1]:starts[n]], counted)
            if found is not _UNSET:
                known[n] = found
                break
            waiting.append(n)
            n -= 1
        for m in waiting:
            known[m] = known[n]
        return known[number[lo]]

    return at


def _last_set(s: Session, entries: Sequence[int], counted: Sequence[int]) -> Any:
    """The ``last_model`` the last of ``entries`` that sets one sets (:data:`_UNSET`: none does),
    found walking back from the end, so few entries are decoded."""
    for k in reversed(entries):
        if counted[k]:
            model = _model_set_by(s.peek_entry(k))
            if model is not _UNSET:
                return model
    return _UNSET


def _last_model(s: Session, path: Sequence[int], counted: Sequence[int]) -> str | None:
    """The ``last_model`` rendering ``path`` from its first entry leaves (for the "model changed"
    notes of a branch forking at its end)."""
    model = _last_set(s, path, counted)
    return None if model is _UNSET else model


def markdown(session: Session, *, leaf: str | None = None, all_branches: bool = False) -> str:
    """The Markdown export; ``leaf`` picks the branch, ``all_branches`` adds every other one."""
    return b"".join(markdown_chunks(session, leaf=leaf, all_branches=all_branches)).decode()


def markdown_chunks(session: Session, *, leaf: str | None = None, all_branches: bool = False) -> Iterator[bytes]:
    """:func:`markdown` as UTF-8 pieces, rendered one entry at a time (no entry is kept)."""
    return _one_final_newline(_rendered(session, leaf, all_branches))


def _rendered(s: Session, leaf: str | None, all_branches: bool) -> Iterator[bytes]:
    leaf_id = leaf_of(s, leaf)
    branch = s.branch_indices(leaf if leaf is not None else UNDEFINED)
    tips = branch_tips(s)
    r = _Renderer(s)
    counted = usage_or_model_candidates(s)
    _header(s, r, branch, leaf_id, tips, counted)
    which = "Current branch" if leaf is None else "Branch"
    r.para(f"## {which}: {len(branch):,} entries up to {inline_code(leaf_id) if leaf_id is not None else 'none'}")
    yield r.take()
    j = s.journal
    pieces = j.entry_pieces(branch, 1 << 18)  # 256 KiB: a piece's Markdown is held as lines, then as UTF-8
    model_at = _models_at(s, branch, [lo for lo, _ in pieces], counted)

    def piece(lo: int, hi: int) -> bytes:
        # the model the entries before this piece left in use: its first "model changed" note
        r.last_model = model_at(lo)
        for k in branch[lo:hi]:
            r.entry(k, 3)
        return r.take()

    # a big file's branch in two processes, a piece each in turn (split.interleaved)
    yield from interleaved(pieces, piece, j.size)
    if all_branches:
        yield from _other_branches(s, r, branch, tips)
    yield r.take()


def _one_final_newline(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """The pieces with the newlines at the very end replaced by one (as ``rstrip("\\n") + "\\n"``)."""
    pending = b""
    for piece in pieces:
        body = piece.rstrip(b"\n")
        if body:
            yield pending + body
            pending = piece[len(body):]
        else:
            pending += piece
    yield b"\n"


def _other_branches(s: Session, r: _Renderer, branch: Sequence[int], tips: list[int]) -> Iterator[bytes]:
    """Every tip not on the exported branch, each with only the entries not shown before it, so
    every entry of the tree appears once; the section says which branch and entry it forks from."""
    shown: dict[int, int] = dict.fromkeys(branch, 1)  # entry -> number of the branch it was shown in
    others = [t for t in tips if t not in shown]
    if not others:
        r.para("## Other branches\n\nNone: this is the only branch.")
        return
    r.para(f"## Other branches ({len(others):,})")
    parent = s.parent_index
    counted = usage_or_model_candidates(s)
    for n, tip in enumerate(others, start=2):
        # walk up from the tip until an entry already shown: that is where this branch forks
        new: list[int] = []
        seen: set[int] = set()
        k = tip
        while k >= 0 and k not in shown and k not in seen:
            new.append(k)
            seen.add(k)
            k = parent[k]
        new.reverse()
        fork = k if k >= 0 and k in shown else None
        r.para(f"### Branch {n}: ends at {inline_code(s.ids[tip])}, {len(new):,} entries of its own")
        if fork is None:
            r.para("*Starts a new root: it shares no entry with the branches above.*")
        else:
            origin = "the exported branch" if shown[fork] == 1 else f"branch {shown[fork]}"
            r.para(f"*Forks from {origin} after entry {inline_code(s.ids[fork])}* "
                   f"({inline(preview(s.entry_at(fork)))})")
        r.last_model = _last_model(s, path_to(fork, parent), counted) if fork is not None else None
        for done, k in enumerate(new, start=1):
            r.entry(k, 4)
            shown.setdefault(k, n)
            if done % _BATCH == 0:  # a side branch can be nearly the whole session
                yield r.take()
        yield r.take()
