"""The HTML viewer's script, inlined into every export (export_html.py).

Kept as a Python constant rather than a .js package-data file because the package data in
pyproject.toml lists only py.typed and the samples: a module always ships with the wheel. The
script reads the JSON data block, builds the tree panel once and renders only the selected
branch, in chunks, with long outputs and thinking built only when opened. It must never contain
a closing script tag (tests/test_export_html.py checks).
"""

from __future__ import annotations

from typing import Final

__all__ = ["VIEWER_JS"]

VIEWER_JS: Final = r"""(function () {
  'use strict';
  // Everything is built with DOM calls and textContent, never innerHTML from session content,
  // so a session cannot inject markup into its own viewer.
  var D = JSON.parse(document.getElementById('omp-session-data').textContent);
  var E = D.entries, P = D.parents, IDS = D.ids, LABELS = D.labels || {}, N = E.length;
  var LONG_CHARS = 2000, LONG_LINES = 30, CHUNK = 200;
  var children = new Array(N), roots = [], tipSet = {};
  for (var k = 0; k < N; k++) {
    var p = P[k];
    if (typeof p === 'number' && p >= 0 && p < N && p !== k) {
      (children[p] || (children[p] = [])).push(k);
    } else {
      roots.push(k);
    }
  }
  (D.tips || []).forEach(function (t) { tipSet[t] = true; });
  var state = { leaf: D.leaf, filter: 'default', query: '', hits: [], hitPos: -1, path: [], onPath: {},
                shown: [], rendered: 0 };

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
  function preview(k) {
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
  side.appendChild(el('h1', null, D.title || 'omp session'));
  var meta = el('div', 'meta');
  meta.textContent = [D.cwd, D.session_id, N + ' entries', (D.tips || []).length + ' branches']
    .filter(function (x) { return x; }).join(' \u00b7 ');
  side.appendChild(meta);
  var tree = el('div'); tree.id = 'tree';
  side.appendChild(tree);
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
  [filter, search, prev, next, count, info].forEach(function (x) { bar.appendChild(x); });
  var main = el('main'); main.id = 'main';
  wrap.appendChild(bar); wrap.appendChild(main);
  app.appendChild(side); app.appendChild(wrap);

  // ----- tree -----------------------------------------------------------------------------------
  var rows = new Array(N);
  function buildTree() {
    // iterative DFS (a deep session would overflow a recursive one); depth grows only at forks,
    // so a long linear conversation stays flush left
    var frag = document.createDocumentFragment(), stack = [], seen = {};
    for (var r = roots.length - 1; r >= 0; r--) stack.push([roots[r], 0]);
    while (stack.length) {
      var top = stack.pop(), k = top[0], depth = top[1];
      if (seen[k]) continue;
      seen[k] = true;
      var kids = children[k] || [];
      var row = el('div', 'node' + (kids.length > 1 ? ' fork' : '') + (tipSet[k] ? ' tip' : ''));
      row.dataset.k = k; row.dataset.id = idOf(k);
      row.style.paddingLeft = (6 + Math.min(depth, 40) * 12) + 'px';
      row.appendChild(el('span', 'kind', kindOf(k) + ' '));
      // the label goes before the preview so a long preview cannot push it out of sight
      if (LABELS[k] !== undefined) row.appendChild(el('span', 'label', LABELS[k]));
      row.appendChild(document.createTextNode(' ' + preview(k).replace(/\s+/g, ' ').slice(0, 100)));
      row.title = idOf(k);
      rows[k] = row;
      frag.appendChild(row);
      var d = kids.length > 1 ? depth + 1 : depth;
      for (var c = kids.length - 1; c >= 0; c--) stack.push([kids[c], d]);
    }
    tree.appendChild(frag);
  }
  function markPath() {
    var old = tree.querySelectorAll('.on-path, .selected');
    for (var i = 0; i < old.length; i++) old[i].classList.remove('on-path', 'selected');
    state.path.forEach(function (k) { if (rows[k]) rows[k].classList.add('on-path'); });
    if (rows[state.leaf]) rows[state.leaf].classList.add('selected');
  }
  tree.addEventListener('click', function (ev) {
    var row = ev.target.closest('.node');
    if (!row) return;
    var k = Number(row.dataset.k);
    if (!state.onPath[k]) selectBranch(tipUnder(k));
    scrollToEntry(k);
  });

  // ----- entries ------------------------------------------------------------------------------
  function isLong(text) {
    if (text.length > LONG_CHARS) return true;
    var lines = 0;
    for (var i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) if (++lines > LONG_LINES) return true;
    return false;
  }
  // a <details> whose body is only built when opened: long outputs cost nothing until read
  function lazy(summary, text, build, open) {
    var d = el('details', 'lazy');
    d.appendChild(el('summary', null, summary));
    d._text = text; d._build = build; d._built = false;
    d.addEventListener('toggle', function () { if (d.open) buildLazy(d); });
    if (open) { d.open = true; buildLazy(d); }
    return d;
  }
  function buildLazy(d) {
    if (d._built) return;
    d._built = true;
    d.appendChild(d._build());
  }
  function pre(text) { return el('pre', null, text); }
  function longText(text, what) {
    if (!isLong(text)) return pre(text);
    var lines = text.split('\n').length;
    return lazy(what + ' (' + lines.toLocaleString('en-US') + ' lines, ' + text.length.toLocaleString('en-US') +
                ' characters)', text, function () { return pre(text); }, false);
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
  function blocks(content, box, opts) {
    if (typeof content === 'string') { if (content) box.appendChild(textBlock(content)); return; }
    if (!Array.isArray(content)) { if (content !== undefined && content !== null) box.appendChild(longText(json(content), 'Value')); return; }
    content.forEach(function (b) {
      if (!isObj(b)) { box.appendChild(longText(json(b), 'Value')); return; }
      if (b.type === 'text') { if (typeof b.text === 'string' && b.text) box.appendChild(textBlock(b.text)); }
      else if (b.type === 'thinking') {
        var t = typeof b.thinking === 'string' ? b.thinking : '';
        if (t.trim()) box.appendChild(lazy('Thinking', t, function () { return el('div', 'text', t); }, false));
      } else if (b.type === 'redactedThinking') {
        box.appendChild(el('div', 'placeholder', '[redacted thinking: ' + (typeof b.data === 'string' ? b.data.length : 0) + ' characters of encrypted data]'));
      } else if (b.type === 'toolCall') {
        if (opts && opts.noTools) return;
        var tc = el('div', 'toolcall');
        tc.appendChild(el('div', null, 'Tool call ' + String(b.name) + (b.intent ? ' \u2014 ' + String(b.intent) : '') + ' \u00b7 ' + String(b.id)));
        tc.appendChild(longText(json(b.arguments === undefined ? {} : b.arguments), 'Arguments'));
        box.appendChild(tc);
      } else if (b.type === 'image') box.appendChild(image(b));
      else box.appendChild(longText(json(b), 'Block ' + String(b.type)));
    });
  }
  function textBlock(text) {
    if (text.length <= 20000) return el('div', 'text', text);
    return lazy('Long text (' + text.length.toLocaleString('en-US') + ' characters)', text,
                function () { return el('div', 'text', text); }, false);
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
    var e = E[k], m = msgOf(k), box = el('div', 'entry');
    box.dataset.k = k; box.dataset.id = idOf(k);
    var noTools = state.filter === 'no-tools';
    if (m) {
      var role = String(m.role);
      box.classList.add('role-' + role.replace(/[^A-Za-z0-9_-]/g, ''));
      if (role === 'assistant') {
        var model = [m.provider, m.model].filter(function (x) { return typeof x === 'string' && x; }).join('/');
        box.appendChild(head(k, 'Assistant', [model ? el('span', 'model', model) : null,
          usageLine(m) ? el('span', 'usage', usageLine(m)) : null,
          m.stopReason === 'error' ? el('span', null, 'error: ' + String(m.errorMessage || '')) : null]));
        if (m.stopReason === 'error') box.classList.add('error');
        blocks(m.content, box, { noTools: noTools });
      } else if (role === 'toolResult') {
        if (m.isError) box.classList.add('error');
        box.appendChild(head(k, 'Tool result ' + String(m.toolName || ''), [el('span', null, String(m.toolCallId || ''))]));
        var content = m.content, text = textOf(content);
        if (text) box.appendChild(longText(text, 'Output'));
        if (Array.isArray(content)) content.forEach(function (b) { if (isObj(b) && b.type === 'image') box.appendChild(image(b)); });
      } else if (role === 'bashExecution') {
        box.appendChild(head(k, 'Shell', [el('span', null, 'exit ' + String(m.exitCode))]));
        box.appendChild(pre('$ ' + String(m.command || '')));
        if (typeof m.output === 'string' && m.output) box.appendChild(longText(m.output, 'Output'));
      } else {
        box.appendChild(head(k, role === 'user' ? 'User' : role.charAt(0).toUpperCase() + role.slice(1)));
        if (m.content !== undefined) blocks(m.content, box);
        else box.appendChild(longText(json(m), 'Message'));
      }
    } else if (isObj(e) && (e.type === 'compaction' || e.type === 'branch_summary')) {
      box.appendChild(head(k, e.type === 'compaction' ? 'Compaction' : 'Branch summary',
        [e.type === 'compaction' ? el('span', null, fmtInt(e.tokensBefore) + ' tokens before') : null]));
      box.appendChild(textBlock(String(e.summary || '')));
    } else if (isObj(e) && e.type === 'custom_message') {
      box.appendChild(head(k, 'Extension message ' + String(e.customType || '')));
      blocks(e.content, box);
    } else {
      box.classList.add('note');
      box.appendChild(head(k, kindOf(k), [el('span', null, preview(k).slice(0, 200))]));
      if (state.filter === 'all') box.appendChild(lazy('Record', json(e), function () { return pre(json(e)); }, false));
    }
    return box;
  }

  // ----- filters, branch view -------------------------------------------------------------------
  var CONVERSATION = { message: 1, custom_message: 1, compaction: 1, branch_summary: 1 };
  function keep(k) {
    var f = state.filter, e = E[k];
    if (f === 'all') return true;
    if (f === 'labeled') return LABELS[k] !== undefined;
    if (f === 'user') return roleOf(k) === 'user';
    if (!isObj(e) || !CONVERSATION[e.type]) return false;
    if (f === 'no-tools') return roleOf(k) !== 'toolResult';
    return true;
  }
  function renderMore(upTo) {
    // entries are added in chunks as the reader scrolls: a branch of 100k entries opens at once
    var stop = Math.min(state.shown.length, Math.max(upTo, state.rendered + CHUNK));
    var frag = document.createDocumentFragment();
    for (var i = state.rendered; i < stop; i++) frag.appendChild(renderEntry(state.shown[i]));
    state.rendered = stop;
    main.insertBefore(frag, sentinel);
    sentinel.textContent = stop < state.shown.length ? (state.shown.length - stop) + ' more entries\u2026' : '';
  }
  var sentinel = el('div', 'more');
  var observer = typeof IntersectionObserver === 'function'
    ? new IntersectionObserver(function (es) { if (es[0].isIntersecting && state.rendered < state.shown.length) renderMore(0); })
    : null;
  function renderMain() {
    main.textContent = '';
    main.appendChild(sentinel);
    state.shown = state.path.filter(keep);
    state.rendered = 0;
    renderMore(0);
    if (observer) { observer.disconnect(); observer.observe(sentinel); }
    info.textContent = 'branch to ' + idOf(state.leaf) + ': ' + state.path.length + ' entries, ' + state.shown.length + ' shown';
    state.hits = []; state.hitPos = -1;
    if (state.query) applySearch(false);
    else count.textContent = '';
  }
  function selectBranch(leaf) {
    state.leaf = leaf;
    state.path = leaf >= 0 ? pathTo(leaf) : [];
    state.onPath = {};
    state.path.forEach(function (k) { state.onPath[k] = true; });
    markPath();
    renderMain();
  }
  function scrollToEntry(k) {
    var i = state.shown.indexOf(k);
    if (i < 0) return;
    if (i >= state.rendered) renderMore(i + 1);
    var box = main.querySelector('.entry[data-k="' + k + '"]');
    if (box) {
      box.scrollIntoView({ block: 'start' });
      box.classList.add('flash');
      setTimeout(function () { box.classList.remove('flash'); }, 1200);
    }
  }
  filter.addEventListener('change', function () { state.filter = filter.value; renderMain(); });

  // ----- search -------------------------------------------------------------------------------
  function entryText(k) {
    var e = E[k];
    return json(e);
  }
  function applySearch(jump) {
    var q = state.query.toLowerCase();
    var marks = main.querySelectorAll('mark.hit');
    for (var i = 0; i < marks.length; i++) {
      var mk = marks[i], parent = mk.parentNode;
      parent.replaceChild(document.createTextNode(mk.textContent), mk);
      parent.normalize();
    }
    state.hits = []; state.hitPos = -1;
    if (!q) { count.textContent = ''; return; }
    // render up to the last entry that can hold a hit, open lazy bodies that do
    var last = -1;
    for (var j = 0; j < state.shown.length; j++) if (entryText(state.shown[j]).toLowerCase().indexOf(q) >= 0) last = j;
    if (last >= state.rendered) renderMore(last + 1);
    var lazies = main.querySelectorAll('details.lazy');
    for (var l = 0; l < lazies.length; l++) {
      var d = lazies[l];
      if (typeof d._text === 'string' && d._text.toLowerCase().indexOf(q) >= 0) { d.open = true; buildLazy(d); }
    }
    var walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT, null), nodes = [], n;
    while ((n = walker.nextNode())) {
      if (n.parentNode.closest('summary')) continue;
      if (n.nodeValue.toLowerCase().indexOf(q) >= 0) nodes.push(n);
    }
    nodes.forEach(function (node) {
      var text = node.nodeValue, low = text.toLowerCase(), frag = document.createDocumentFragment(), at = 0, f;
      while ((f = low.indexOf(q, at)) >= 0) {
        if (f > at) frag.appendChild(document.createTextNode(text.slice(at, f)));
        var mark = el('mark', 'hit', text.slice(f, f + q.length));
        frag.appendChild(mark); state.hits.push(mark);
        at = f + q.length;
      }
      if (at < text.length) frag.appendChild(document.createTextNode(text.slice(at)));
      node.parentNode.replaceChild(frag, node);
    });
    if (state.hits.length) step(0, jump); else count.textContent = 'no hits';
  }
  function step(to, scroll) {
    if (!state.hits.length) return;
    if (state.hitPos >= 0) state.hits[state.hitPos].classList.remove('current');
    state.hitPos = (to + state.hits.length) % state.hits.length;
    var cur = state.hits[state.hitPos];
    cur.classList.add('current');
    if (scroll !== false) cur.scrollIntoView({ block: 'center' });
    count.textContent = (state.hitPos + 1) + '/' + state.hits.length;
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
    step(state.hitPos + (ev.shiftKey ? -1 : 1));
  });
  next.addEventListener('click', function () { step(state.hitPos + 1); });
  prev.addEventListener('click', function () { step(state.hitPos - 1); });

  buildTree();
  selectBranch(state.leaf >= 0 ? state.leaf : (D.tips && D.tips.length ? D.tips[D.tips.length - 1] : -1));
  if (rows[state.leaf]) rows[state.leaf].scrollIntoView({ block: 'nearest' });
  document.body.dataset.ready = 'true';
})();
"""
