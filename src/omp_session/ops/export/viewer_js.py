"""The HTML viewer's script, inlined into every export (export_html.py).

Kept as a Python constant rather than a .js package-data file because the package data in
pyproject.toml lists only py.typed and the samples: a module always ships with the wheel. The
script reads the JSON data block (and a subagent's block only when it is opened), keeps the tree
panel virtual (only the rows in view exist) and renders the selected branch as chunks that are
built when they come into view; search counts its hits in the data and renders only the chunk
of the current hit; long outputs and thinking are built only when opened. It must never contain
a closing script tag (tests/test_export_html.py checks).
"""

from __future__ import annotations

from typing import Final

__all__ = ["VIEWER_JS"]

VIEWER_JS: Final = r"""(function () {
  'use strict';
  // load timings (ms since navigation start) for tests/browser/check_viewer.mjs and bench/
  var T = window.ompViewerTimes = { scriptStart: performance.now() };
  // Everything is built with DOM calls and textContent, never innerHTML from session content,
  // so a session cannot inject markup into its own viewer.
  var LONG_CHARS = 2000, LONG_LINES = 30, CHUNK = 100, ROW_H = 18, OVERSCAN = 40, SEP = '\u0001';
  var CONVERSATION = { message: 1, custom_message: 1, compaction: 1, branch_summary: 1 };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function isObj(v) { return v !== null && typeof v === 'object' && !Array.isArray(v); }
  function num(v) { return typeof v === 'number' && isFinite(v) ? v : null; }
  function fmtInt(v) { return num(v) === null ? '?' : Math.round(v).toLocaleString('en-US'); }
  function json(v) { try { return JSON.stringify(v, null, 2); } catch (e) { return String(v); } }

  // ----- documents: the session (block omp-session-data) and each subagent (omp-subagent-<n>) -----
  // A subagent's block is parsed only when it is first opened.
  var DOCS = {};
  function loadDoc(n, name) {
    if (DOCS[n]) return DOCS[n];
    var node = document.getElementById(n === 0 ? 'omp-session-data' : 'omp-subagent-' + n);
    var D = JSON.parse(node.textContent), E = D.entries, P = D.parents, N = E.length;
    if (n === 0) T.dataParsed = performance.now();
    var children = new Array(N), roots = [], tipSet = {};
    for (var k = 0; k < N; k++) {
      var p = P[k];
      if (typeof p === 'number' && p >= 0 && p < N && p !== k) (children[p] || (children[p] = [])).push(k);
      else roots.push(k);
    }
    (D.tips || []).forEach(function (t) { tipSet[t] = true; });
    var subs = D.subagents || [], byEntry = {}, byCall = {};
    subs.forEach(function (s, i) {
      (s.refs || []).forEach(function (r) {
        (byEntry[r] || (byEntry[r] = [])).push(i);
        var e = E[r], m = isObj(e) && isObj(e.message) ? e.message : null;
        if (m && typeof m.toolCallId === 'string') (byCall[m.toolCallId] || (byCall[m.toolCallId] = [])).push(i);
      });
    });
    DOCS[n] = { n: n, D: D, E: E, P: P, IDS: D.ids, LABELS: D.labels || {}, N: N, children: children,
                roots: roots, tipSet: tipSet, subs: subs, byEntry: byEntry, byCall: byCall, flat: null,
                texts: {}, title: D.title || (n === 0 ? 'omp session' : 'Subagent ' + name) };
    return DOCS[n];
  }
  // the current document's arrays, as plain variables: the renderers below read them directly
  var doc, E, P, IDS, LABELS, N, children;
  function useDoc(d) { doc = d; E = d.E; P = d.P; IDS = d.IDS; LABELS = d.LABELS; N = d.N; children = d.children; }

  var state = { leaf: -1, filter: 'default', query: '', path: [], onPath: {}, shown: [], chunks: [],
                hitPos: [], hitCum: [], hitTotal: 0, hit: -1, back: [], gen: 0 };

  function idOf(k) { var i = IDS[k]; return i === null || i === undefined ? '(no id)' : String(i); }
  function msgOf(k) { var e = E[k]; return isObj(e) && e.type === 'message' && isObj(e.message) ? e.message : null; }
  function roleOf(k) { var m = msgOf(k); return m ? String(m.role) : null; }
  function kindOf(k) {
    var e = E[k];
    if (!isObj(e)) return 'record';
    if (e.type === 'message') return roleOf(k) || 'message';
    return String(e.type);
  }
  function textOf(content) {
    if (typeof content === 'string') return content;
    if (!Array.isArray(content)) return '';
    var out = [];
    content.forEach(function (b) {
      if (!isObj(b)) return;
      if (b.type === 'text' && typeof b.text === 'string') out.push(b.text);
      else if (b.type === 'toolCall') out.push(String(b.name) + '(' + json(b.arguments) + ')');
    });
    return out.join('\n');
  }
  // terminal colour and cursor codes (ANSI escape sequences: CSI, OSC and the like, the grammar
  // search snippets drop, ops/search/snippet.py; not the 8-bit forms, which in decoded text are
  // mis-decoded characters far more often) are not shown: an output reads as the terminal showed
  // it, not as "ESC[32m" around a mark. Search finds what is shown.
  var ANSI = /\x1b\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]|\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)|\x1b[\x21-\x2f]?[\x30-\x7e]/g;
  function withoutAnsi(s) { return s.replace(ANSI, ''); }
  function preview(k) { return withoutAnsi(previewText(k)); }
  function previewText(k) {
    var e = E[k], m = msgOf(k);
    if (m) {
      if (m.role === 'toolResult') return String(m.toolName || '') + ': ' + textOf(m.content);
      if (m.role === 'bashExecution') return '$ ' + String(m.command || '');
      return textOf(m.content);
    }
    if (!isObj(e)) return json(e);
    if (e.type === 'compaction' || e.type === 'branch_summary') return String(e.summary || '');
    if (e.type === 'custom_message') return textOf(e.content);
    if (e.type === 'model_change') return String(e.model || '');
    if (e.type === 'label') return String(e.targetId) + ' = ' + String(e.label === undefined ? '' : e.label);
    if (e.type === 'title_change') return String(e.title || '');
    if (e.type === 'thinking_level_change') return String(e.thinkingLevel || '');
    return '';
  }
  function pathTo(leaf) {
    var out = [], seen = {};
    for (var k = leaf; typeof k === 'number' && k >= 0 && k < N && !seen[k]; k = P[k]) { seen[k] = true; out.push(k); }
    return out.reverse();
  }
  // the branch a clicked node stands for: follow the latest child down to a tip
  function tipUnder(k) {
    var seen = {};
    while (children[k] && !seen[k]) { seen[k] = true; k = children[k][children[k].length - 1]; }
    return k;
  }

  // ----- layout -----------------------------------------------------------------------------
  var app = document.getElementById('app');
  app.textContent = '';
  var side = el('nav'); side.id = 'side';
  var heading = el('h1');
  var meta = el('div', 'meta');
  var crumbs = el('div'); crumbs.id = 'crumbs';
  var backBtn = el('button', null, '\u2190 Back'); backBtn.id = 'back';
  var subBox = el('details'); subBox.id = 'subagents'; subBox.open = true;
  var tree = el('div'); tree.id = 'tree';
  var treeSpace = el('div', 'space'), treeWin = el('div', 'win');
  treeSpace.appendChild(treeWin); tree.appendChild(treeSpace);
  [heading, meta, crumbs, subBox, tree].forEach(function (x) { side.appendChild(x); });
  var wrap = el('div'); wrap.id = 'mainwrap';
  var bar = el('div'); bar.id = 'bar';
  var filter = el('select'); filter.id = 'filter';
  [['default', 'Default'], ['no-tools', 'No tools'], ['user', 'User only'], ['labeled', 'Labeled only'],
   ['all', 'All']].forEach(function (o) { var op = el('option', null, o[1]); op.value = o[0]; filter.appendChild(op); });
  var search = el('input'); search.type = 'search'; search.id = 'search'; search.placeholder = 'Search this branch';
  var prev = el('button', null, '\u2191 Prev'); prev.id = 'search-prev';
  var next = el('button', null, '\u2193 Next'); next.id = 'search-next';
  var count = el('span', 'status'); count.id = 'search-count';
  var info = el('span', 'status'); info.id = 'branch-info';
  [backBtn, filter, search, prev, next, count, info].forEach(function (x) { bar.appendChild(x); });
  var main = el('main'); main.id = 'main';
  wrap.appendChild(bar); wrap.appendChild(main);
  app.appendChild(side); app.appendChild(wrap);

  // ----- tree: one flat depth-first list, of which only the rows in view exist -------------------
  function flatten() {
    // iterative DFS (a deep session would overflow a recursive one); depth grows only for side
    // branches, as `tree` draws them: at a fork the last branch (the newest in the file) continues
    // at the fork's indent, after the others, which hang one level deeper. A long conversation
    // forked many times stays flush left. Entries on a parent cycle reach no root: they are
    // listed after the rest so that none is lost.
    var order = new Int32Array(N), depth = new Int32Array(N), pos = new Int32Array(N).fill(-1), n = 0;
    function walk(start) {
      var stack = [start, 0];
      while (stack.length) {
        var d = stack.pop(), k = stack.pop();
        if (pos[k] >= 0) continue;
        pos[k] = n; order[n] = k; depth[n] = d; n++;
        var kids = children[k] || [], last = kids.length - 1;
        for (var c = last; c >= 0; c--) stack.push(kids[c], c === last ? d : d + 1);
      }
    }
    doc.roots.forEach(walk);
    for (var k = 0; k < N; k++) if (pos[k] < 0) walk(k);
    return { order: order, depth: depth, pos: pos };
  }
  var win = { first: -1, last: -1 };
  function treeRow(k, d) {
    var kids = children[k] || [];
    var row = el('div', 'node' + (kids.length > 1 ? ' fork' : '') + (doc.tipSet[k] ? ' tip' : '') +
                 (state.onPath[k] ? ' on-path' : '') + (k === state.leaf ? ' selected' : ''));
    row.dataset.k = k; row.dataset.id = idOf(k);
    row.style.paddingLeft = (6 + Math.min(d, 40) * 12) + 'px';
    row.appendChild(el('span', 'kind', kindOf(k) + ' '));
    // the label goes before the preview so a long preview cannot push it out of sight
    if (LABELS[k] !== undefined) row.appendChild(el('span', 'label', LABELS[k]));
    row.appendChild(document.createTextNode(' ' + preview(k).slice(0, 300).replace(/\s+/g, ' ').slice(0, 100)));
    row.title = idOf(k);
    return row;
  }
  function drawTree(force) {
    var f = doc.flat, total = f.order.length, h = tree.clientHeight || 800;
    var first = Math.max(0, Math.floor(tree.scrollTop / ROW_H) - OVERSCAN);
    var last = Math.min(total, Math.ceil((tree.scrollTop + h) / ROW_H) + OVERSCAN);
    if (!force && first === win.first && last === win.last) return;
    win.first = first; win.last = last;
    var frag = document.createDocumentFragment();
    for (var i = first; i < last; i++) frag.appendChild(treeRow(f.order[i], f.depth[i]));
    treeWin.textContent = '';
    treeWin.appendChild(frag);
    treeWin.style.top = (first * ROW_H) + 'px';
  }
  function setupTree() {
    if (!doc.flat) doc.flat = flatten();
    treeSpace.style.height = (doc.flat.order.length * ROW_H) + 'px';
    tree.scrollTop = 0;
    win.first = -1;
  }
  function revealInTree(k) {
    var i = doc.flat.pos[k];
    if (i < 0) return;
    var top = i * ROW_H, h = tree.clientHeight || 800;
    if (top < tree.scrollTop || top + ROW_H > tree.scrollTop + h) tree.scrollTop = Math.max(0, top - h / 2);
    drawTree(true);
  }
  var treeTick = false;
  tree.addEventListener('scroll', function () {
    if (treeTick) return;
    treeTick = true;
    requestAnimationFrame(function () { treeTick = false; drawTree(false); });
  });
  tree.addEventListener('click', function (ev) {
    var row = ev.target.closest('.node');
    if (!row) return;
    var k = Number(row.dataset.k);
    if (!state.onPath[k]) selectBranch(tipUnder(k));
    scrollToEntry(k);
  });

  // ----- subagents ----------------------------------------------------------------------------
  function subLink(i) {
    var s = doc.subs[i];
    if (s.doc === null || s.doc === undefined) {
      return el('span', 'placeholder subagent-missing', 'Subagent ' + s.id + ': ' + (s.note || 'not embedded'));
    }
    var b = el('button', 'subagent-link', 'Subagent ' + s.id + ' \u2192 open transcript' +
               (typeof s.entries === 'number' ? ' (' + s.entries + (s.entries === 1 ? ' entry)' : ' entries)') : ''));
    b.dataset.sub = i;
    return b;
  }
  function subLinks(list) {
    var d = el('div', 'sublinks');
    list.forEach(function (i) { d.appendChild(subLink(i)); });
    return d;
  }
  function drawSide() {
    heading.textContent = doc.title;
    meta.textContent = [doc.n === 0 ? doc.D.cwd : null, doc.D.session_id, N + ' entries',
                        (doc.D.tips || []).length + ' branches']
      .filter(function (x) { return x; }).join(' \u00b7 ');
    crumbs.textContent = '';
    backBtn.style.display = state.back.length ? '' : 'none';
    if (state.back.length) {
      var names = state.back.map(function (b) { return DOCS[b.doc].title; }).concat([doc.title]);
      var up = el('button', null, '\u2190 Back to ' + DOCS[state.back[state.back.length - 1].doc].title);
      up.className = 'back-link';
      crumbs.appendChild(up);
      crumbs.appendChild(el('div', 'meta', names.join(' \u203a ')));
    }
    subBox.textContent = '';
    subBox.style.display = doc.subs.length ? '' : 'none';
    subBox.appendChild(el('summary', null, 'Subagents (' + doc.subs.length + ')'));
    doc.subs.forEach(function (s, i) {
      var item = el('div', 'subagent');
      item.appendChild(subLink(i));
      if (s.refs && s.refs.length === 0) {
        item.appendChild(el('span', 'meta', String(s.id).indexOf('__advisor') === 0 ? ' advisor transcript'
          : ' found next to the session, named by no task result'));
      }
      subBox.appendChild(item);
    });
  }
  function openDoc(n, leaf, name) {
    useDoc(loadDoc(n, name));
    setupTree();
    drawSide();
    selectBranch(leaf >= 0 ? leaf : (doc.D.leaf >= 0 ? doc.D.leaf : (doc.D.tips && doc.D.tips.length ? doc.D.tips[doc.D.tips.length - 1] : -1)));
    if (state.leaf >= 0) revealInTree(state.leaf); else drawTree(true);
  }
  function openSubagent(i, from) {
    var s = doc.subs[i];
    if (!s || s.doc === null || s.doc === undefined) return;
    state.back.push({ doc: doc.n, leaf: state.leaf, at: from });
    openDoc(s.doc, -1, s.id);
    main.scrollTop = 0;
  }
  function goBack() {
    var b = state.back.pop();
    if (!b) return;
    openDoc(b.doc, b.leaf);
    if (typeof b.at === 'number') scrollToEntry(b.at);
  }
  app.addEventListener('click', function (ev) {
    var t = ev.target.closest('.subagent-link, #back, .back-link');
    if (!t) return;
    if (t.classList.contains('subagent-link')) {
      var box = t.closest('.entry');
      openSubagent(Number(t.dataset.sub), box ? Number(box.dataset.k) : null);
    } else goBack();
  });

  // ----- entries: parts ---------------------------------------------------------------------------
  // An entry is first turned into parts (plain data), then into DOM. Search reads the same
  // parts' text, so what it counts in the data is exactly what it highlights on screen.
  function blockParts(content, out, opts) {
    if (typeof content === 'string') { if (content) out.push({ t: 'text', s: withoutAnsi(content) }); return; }
    if (!Array.isArray(content)) { if (content !== undefined && content !== null) out.push({ t: 'long', s: json(content), what: 'Value' }); return; }
    content.forEach(function (b) {
      if (!isObj(b)) { out.push({ t: 'long', s: json(b), what: 'Value' }); return; }
      if (b.type === 'text') { if (typeof b.text === 'string' && b.text) out.push({ t: 'text', s: withoutAnsi(b.text) }); }
      else if (b.type === 'thinking') {
        var th = typeof b.thinking === 'string' ? b.thinking : '';
        if (th.trim()) out.push({ t: 'thinking', s: withoutAnsi(th) });
      } else if (b.type === 'redactedThinking') {
        out.push({ t: 'note', s: '[redacted thinking: ' + (typeof b.data === 'string' ? b.data.length : 0) + ' characters of encrypted data]' });
      } else if (b.type === 'toolCall') {
        if (opts && opts.noTools) return;
        out.push({ t: 'call', line: 'Tool call ' + String(b.name) + (b.intent ? ' \u2014 ' + String(b.intent) : '') + ' \u00b7 ' + String(b.id),
                   s: json(b.arguments === undefined ? {} : b.arguments), callId: b.id });
      } else if (b.type === 'image') out.push({ t: 'image', b: b });
      else out.push({ t: 'long', s: json(b), what: 'Block ' + String(b.type) });
    });
  }
  function partsOf(k, mode) {
    var e = E[k], m = msgOf(k), out = [];
    if (m) {
      var role = String(m.role);
      if (role === 'assistant') blockParts(m.content, out, { noTools: mode === 'no-tools' });
      else if (role === 'toolResult') {
        var content = m.content, text = withoutAnsi(textOf(content));
        if (text) out.push({ t: 'long', s: text, what: 'Output' });
        if (Array.isArray(content)) content.forEach(function (b) { if (isObj(b) && b.type === 'image') out.push({ t: 'image', b: b }); });
      } else if (role === 'bashExecution') {
        out.push({ t: 'pre', s: '$ ' + String(m.command || '') });
        if (typeof m.output === 'string' && m.output) out.push({ t: 'long', s: withoutAnsi(m.output), what: 'Output' });
      } else if (m.content !== undefined) blockParts(m.content, out);
      else out.push({ t: 'long', s: json(m), what: 'Message' });
    } else if (isObj(e) && (e.type === 'compaction' || e.type === 'branch_summary')) {
      out.push({ t: 'text', s: withoutAnsi(String(e.summary || '')) });
    } else if (isObj(e) && e.type === 'custom_message') {
      blockParts(e.content, out);
    } else {
      out.push({ t: 'preview', s: preview(k).slice(0, 200) });
      if (mode === 'all') out.push({ t: 'record', s: json(e) });
    }
    return out;
  }
  function partTexts(parts) {
    var out = [];
    parts.forEach(function (p) { if (p.line !== undefined) out.push(p.line); if (typeof p.s === 'string' && p.t !== 'note') out.push(p.s); });
    return out;
  }
  function modeOf() { return state.filter === 'all' ? 'all' : state.filter === 'no-tools' ? 'no-tools' : 'std'; }

  // ----- entries: DOM ----------------------------------------------------------------------------
  function isLong(text) {
    if (text.length > LONG_CHARS) return true;
    var lines = 0;
    for (var i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) if (++lines > LONG_LINES) return true;
    return false;
  }
  // a <details> whose body is only built when opened: long outputs cost nothing until read
  function lazy(summary, text, build) {
    var d = el('details', 'lazy');
    d.appendChild(el('summary', null, summary));
    d._text = text; d._build = build; d._built = false;
    d.addEventListener('toggle', function () { if (d.open) buildLazy(d); });
    return d;
  }
  function buildLazy(d) {
    if (d._built) return;
    d._built = true;
    d.appendChild(d._build());
  }
  // searchable text sits alone in an element of class "s": one part, one text node
  function pre(text) { return el('pre', 's', text); }
  function longText(text, what) {
    if (!isLong(text)) return pre(text);
    var lines = text.split('\n').length;
    return lazy(what + ' (' + lines.toLocaleString('en-US') + ' lines, ' + text.length.toLocaleString('en-US') +
                ' characters)', text, function () { return pre(text); });
  }
  function textBlock(text) {
    if (text.length <= 20000) return el('div', 'text s', text);
    return lazy('Long text (' + text.length.toLocaleString('en-US') + ' characters)', text,
                function () { return el('div', 'text s', text); });
  }
  function image(b) {
    var data = b.data, mime = typeof b.mimeType === 'string' ? b.mimeType : 'image/png';
    if (typeof data === 'string' && data.indexOf('blob:') !== 0 && /^image\/[a-z0-9.+-]+$/i.test(mime) &&
        /^[A-Za-z0-9+\/=\s]*$/.test(data.slice(0, 200))) {
      var img = el('img', 'inline'); img.alt = 'image (' + mime + ')';
      img.src = 'data:' + mime + ';base64,' + data.replace(/\s+/g, '');
      return img;
    }
    var ref = typeof data === 'string' ? data.slice(0, 80) : 'no data';
    return el('span', 'placeholder', '[image ' + mime + ' not available: ' + ref + ']');
  }
  function partDom(p, box, head) {
    if (p.t === 'text') box.appendChild(textBlock(p.s));
    else if (p.t === 'thinking') box.appendChild(lazy('Thinking', p.s, function () { return el('div', 'text s', p.s); }));
    else if (p.t === 'note') box.appendChild(el('div', 'placeholder', p.s));
    else if (p.t === 'long') box.appendChild(longText(p.s, p.what));
    else if (p.t === 'pre') box.appendChild(pre(p.s));
    else if (p.t === 'image') box.appendChild(image(p.b));
    else if (p.t === 'preview') head.appendChild(el('span', 's', p.s));
    else if (p.t === 'record') box.appendChild(lazy('Record', p.s, function () { return pre(p.s); }));
    else if (p.t === 'call') {
      var tc = el('div', 'toolcall');
      tc.appendChild(el('div', 's', p.line));
      tc.appendChild(longText(p.s, 'Arguments'));
      if (doc.byCall[p.callId]) tc.appendChild(subLinks(doc.byCall[p.callId]));
      box.appendChild(tc);
    }
  }
  function usageLine(m) {
    var u = m.usage;
    if (!isObj(u)) return '';
    var parts = ['in ' + fmtInt(u.input), 'out ' + fmtInt(u.output)];
    if (num(u.cacheRead)) parts.push('cache read ' + fmtInt(u.cacheRead));
    if (num(u.cacheWrite)) parts.push('cache write ' + fmtInt(u.cacheWrite));
    var cost = isObj(u.cost) ? num(u.cost.total) : null;
    if (cost !== null) parts.push('$' + cost.toFixed(4));
    return parts.join(' \u00b7 ');
  }
  function head(k, title, extra) {
    var h = el('div', 'head');
    h.appendChild(el('b', null, title));
    h.appendChild(el('span', null, idOf(k)));
    var e = E[k];
    if (isObj(e) && typeof e.timestamp === 'string') h.appendChild(el('span', null, e.timestamp));
    (extra || []).forEach(function (x) { if (x) h.appendChild(x); });
    if (LABELS[k] !== undefined) h.appendChild(el('span', 'label', LABELS[k]));
    return h;
  }
  function renderEntry(k) {
    var e = E[k], m = msgOf(k), box = el('div', 'entry'), h;
    box.dataset.k = k; box.dataset.id = idOf(k);
    if (m) {
      var role = String(m.role);
      box.classList.add('role-' + role.replace(/[^A-Za-z0-9_-]/g, ''));
      if (role === 'assistant') {
        var model = [m.provider, m.model].filter(function (x) { return typeof x === 'string' && x; }).join('/');
        h = head(k, 'Assistant', [model ? el('span', 'model', model) : null,
          usageLine(m) ? el('span', 'usage', usageLine(m)) : null,
          m.stopReason === 'error' ? el('span', null, 'error: ' + String(m.errorMessage || '')) : null]);
        if (m.stopReason === 'error') box.classList.add('error');
      } else if (role === 'toolResult') {
        if (m.isError) box.classList.add('error');
        h = head(k, 'Tool result ' + String(m.toolName || ''), [el('span', null, String(m.toolCallId || ''))]);
      } else if (role === 'bashExecution') {
        h = head(k, 'Shell', [el('span', null, 'exit ' + String(m.exitCode))]);
      } else {
        h = head(k, role === 'user' ? 'User' : role.charAt(0).toUpperCase() + role.slice(1));
      }
    } else if (isObj(e) && (e.type === 'compaction' || e.type === 'branch_summary')) {
      h = head(k, e.type === 'compaction' ? 'Compaction' : 'Branch summary',
        [e.type === 'compaction' ? el('span', null, fmtInt(e.tokensBefore) + ' tokens before') : null]);
    } else if (isObj(e) && e.type === 'custom_message') {
      h = head(k, 'Extension message ' + String(e.customType || ''));
    } else {
      box.classList.add('note');
      h = head(k, kindOf(k));
    }
    box.appendChild(h);
    if (doc.byEntry[k]) box.appendChild(subLinks(doc.byEntry[k]));
    partsOf(k, modeOf()).forEach(function (p) { partDom(p, box, h); });
    return box;
  }

  // ----- branch view: chunks of entries, each rendered when it comes into view ------------------
  // A chunk not yet rendered is a placeholder of about its height, so the scrollbar spans the
  // whole branch and a jump (search, tree click) renders only the chunk it lands in.
  function keep(k) {
    var f = state.filter, e = E[k];
    if (f === 'all') return true;
    if (f === 'labeled') return LABELS[k] !== undefined;
    if (f === 'user') return roleOf(k) === 'user';
    if (!isObj(e) || !CONVERSATION[e.type]) return false;
    if (f === 'no-tools') return roleOf(k) !== 'toolResult';
    return true;
  }
  var avgH = 90;
  var observer = typeof IntersectionObserver === 'function'
    ? new IntersectionObserver(function (es) {
      es.forEach(function (x) { if (x.isIntersecting) renderChunk(Number(x.target.dataset.c)); });
    }, { root: main, rootMargin: '800px 0px' })
    : null;
  function renderChunk(c) {
    var div = state.chunks[c];
    if (!div || div._done) return div;
    div._done = true;
    if (observer) observer.unobserve(div);
    var frag = document.createDocumentFragment(), stop = Math.min(state.shown.length, (c + 1) * CHUNK);
    for (var i = c * CHUNK; i < stop; i++) frag.appendChild(renderEntry(state.shown[i]));
    div.className = 'chunk';
    div.style.height = '';
    div.textContent = '';
    div.appendChild(frag);
    if (c === 0 && stop > 0) avgH = Math.max(30, div.offsetHeight / stop);
    if (state.query) for (var j = c * CHUNK; j < stop; j++) highlightEntry(j);
    return div;
  }
  function renderMain() {
    if (observer) observer.disconnect();
    main.textContent = '';
    state.shown = state.path.filter(keep);
    state.chunks = [];
    for (var c = 0; c * CHUNK < state.shown.length; c++) {
      var n = Math.min(CHUNK, state.shown.length - c * CHUNK);
      var div = el('div', 'chunk pending', 'entries ' + (c * CHUNK + 1) + '\u2013' + (c * CHUNK + n) + '\u2026');
      div.dataset.c = c;
      div.style.height = Math.round(n * avgH) + 'px';
      state.chunks.push(div);
      main.appendChild(div);
    }
    renderChunk(0);
    if (observer) state.chunks.forEach(function (d) { if (!d._done) observer.observe(d); });
    info.textContent = 'branch to ' + idOf(state.leaf) + ': ' + state.path.length + ' entries, ' + state.shown.length + ' shown';
    if (state.query) applySearch(false);
    else { clearHits(); count.textContent = ''; }
  }
  function selectBranch(leaf) {
    state.leaf = leaf;
    state.path = leaf >= 0 ? pathTo(leaf) : [];
    state.onPath = {};
    state.path.forEach(function (k) { state.onPath[k] = true; });
    drawTree(true);
    renderMain();
  }
  function entryBox(i) {
    var div = renderChunk(Math.floor(i / CHUNK));
    return div ? div.querySelector('.entry[data-k="' + state.shown[i] + '"]') : null;
  }
  function scrollToEntry(k) {
    var i = state.shown.indexOf(k);
    if (i < 0) return;
    var box = entryBox(i);
    if (box) {
      box.scrollIntoView({ block: 'start' });
      box.classList.add('flash');
      setTimeout(function () { box.classList.remove('flash'); }, 1200);
    }
  }
  filter.addEventListener('change', function () { state.filter = filter.value; renderMain(); });

  // ----- search: hits are found in the data, only the chunk of the current hit is rendered -------
  function lowText(k) {
    var mode = modeOf(), cache = doc.texts[mode] || (doc.texts[mode] = new Array(N)), t = cache[k];
    if (t === undefined) { t = partTexts(partsOf(k, mode)).join(SEP).toLowerCase(); cache[k] = t; }
    return t;
  }
  function countIn(s, q) {
    var c = 0;
    for (var i = s.indexOf(q); i >= 0; i = s.indexOf(q, i + q.length)) c++;
    return c;
  }
  function clearHits() { state.hitPos = []; state.hitCum = []; state.hitTotal = 0; state.hit = -1; }
  function applySearch(jump) {
    var q = state.query.toLowerCase();
    var marks = main.querySelectorAll('mark.hit');
    for (var i = 0; i < marks.length; i++) {
      var mk = marks[i], parent = mk.parentNode;
      parent.replaceChild(document.createTextNode(mk.textContent), mk);
      parent.normalize();
    }
    clearHits();
    state.gen++;  // every rendered entry is unhighlighted now
    if (!q) { count.textContent = ''; return; }
    for (var j = 0; j < state.shown.length; j++) {
      var c = countIn(lowText(state.shown[j]), q);
      if (c) { state.hitPos.push(j); state.hitCum.push(state.hitTotal); state.hitTotal += c; }
    }
    for (var ch = 0; ch < state.chunks.length; ch++) {
      if (!state.chunks[ch]._done) continue;
      var stop = Math.min(state.shown.length, (ch + 1) * CHUNK);
      for (var x = ch * CHUNK; x < stop; x++) highlightEntry(x);
    }
    if (state.hitTotal) step(0, jump); else count.textContent = 'no hits';
  }
  // wrap the hits of one rendered entry in <mark>, opening the collapsed bodies that hold one
  function highlightEntry(i) {
    var q = state.query.toLowerCase();
    if (!q || lowText(state.shown[i]).indexOf(q) < 0) return;
    var box = state.chunks[Math.floor(i / CHUNK)].querySelector('.entry[data-k="' + state.shown[i] + '"]');
    if (!box || box._hl === state.gen) return;
    box._hl = state.gen;
    var lazies = box.querySelectorAll('details.lazy');
    for (var l = 0; l < lazies.length; l++) {
      var d = lazies[l];
      if (typeof d._text === 'string' && d._text.toLowerCase().indexOf(q) >= 0) { d.open = true; buildLazy(d); }
    }
    var segs = box.querySelectorAll('.s');
    for (var s = 0; s < segs.length; s++) {
      var node = segs[s].firstChild;
      if (!node || node.nodeType !== 3) continue;
      var text = node.nodeValue, low = text.toLowerCase(), at = 0, f, frag = null;
      while ((f = low.indexOf(q, at)) >= 0) {
        frag = frag || document.createDocumentFragment();
        if (f > at) frag.appendChild(document.createTextNode(text.slice(at, f)));
        frag.appendChild(el('mark', 'hit', text.slice(f, f + q.length)));
        at = f + q.length;
      }
      if (!frag) continue;
      if (at < text.length) frag.appendChild(document.createTextNode(text.slice(at)));
      segs[s].replaceChild(frag, node);
    }
  }
  function step(to, scroll) {
    if (!state.hitTotal) return;
    var n = ((to % state.hitTotal) + state.hitTotal) % state.hitTotal;
    var old = main.querySelector('mark.hit.current');
    if (old) old.classList.remove('current');
    state.hit = n;
    // binary search: the entry holding hit n
    var lo = 0, hi = state.hitCum.length - 1;
    while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (state.hitCum[mid] <= n) lo = mid; else hi = mid - 1; }
    var box = entryBox(state.hitPos[lo]);
    highlightEntry(state.hitPos[lo]);
    var marks = box ? box.querySelectorAll('mark.hit') : [];
    var cur = marks[n - state.hitCum[lo]] || marks[marks.length - 1] || box;
    if (cur && cur.classList) {
      if (cur.tagName === 'MARK') cur.classList.add('current');
      if (scroll !== false) cur.scrollIntoView({ block: 'center' });
    }
    count.textContent = (n + 1) + '/' + state.hitTotal;
  }
  var timer = null;
  search.addEventListener('input', function () {
    clearTimeout(timer);
    timer = setTimeout(function () { state.query = search.value; applySearch(true); }, 250);
  });
  search.addEventListener('keydown', function (ev) {
    if (ev.key !== 'Enter') return;
    clearTimeout(timer);
    if (search.value !== state.query) { state.query = search.value; applySearch(true); return; }
    step(state.hit + (ev.shiftKey ? -1 : 1));
  });
  next.addEventListener('click', function () { step(state.hit + 1); });
  prev.addEventListener('click', function () { step(state.hit - 1); });

  // a small read-only handle for tests and for scripts driving the page
  window.ompViewer = {
    treeRows: function () {
      var f = doc.flat, out = [];
      for (var i = 0; i < f.order.length; i++) {
        var k = f.order[i];
        out.push({ k: k, id: idOf(k), depth: f.depth[i], tip: !!doc.tipSet[k], label: LABELS[k] === undefined ? null : LABELS[k] });
      }
      return out;
    },
    revealInTree: revealInTree,
    shownIds: function () { return state.shown.map(idOf); },
    doc: function () { return doc.n; }
  };
  openDoc(0, -1);
  requestAnimationFrame(function () { window.ompViewerPainted = T.painted = performance.now(); });
  window.ompViewerReady = T.ready = performance.now();
  document.body.dataset.ready = 'true';
})();
"""
