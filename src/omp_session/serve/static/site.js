// omp-session export --site: the index pages' filters and the search page, from file:// with no
// server (so no fetch: the search index is search-index.js, a script assigning window.ompSiteIndex).
(function () {
  'use strict';

  // ----- index and project pages: filter the rows as you type ---------------------------------
  var table = document.getElementById('sessions');
  var text = document.getElementById('f-text');
  var project = document.getElementById('f-project');
  var count = document.getElementById('count');
  function filter() {
    var want = text ? text.value.trim().toLowerCase() : '';
    var cwd = project ? project.value : '';
    var rows = table.tBodies[0].rows, shown = 0, parentShown = false;
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i], sub = r.classList.contains('sub');
      var ok;
      if (sub) ok = parentShown;  // a subagent goes with its parent
      else {
        ok = (!cwd || r.getAttribute('data-project') === cwd) &&
             (!want || r.textContent.toLowerCase().indexOf(want) >= 0 ||
              (r.getAttribute('data-id') || '').toLowerCase().indexOf(want) >= 0);
        parentShown = ok;
        if (ok) shown++;
      }
      r.hidden = !ok;
    }
    if (count) count.textContent = shown + ' session(s)';
  }
  if (table && (text || project)) {
    if (text) text.addEventListener('input', filter);
    if (project) project.addEventListener('change', filter);
    var form = document.getElementById('site-filters');
    if (form) form.addEventListener('submit', function (ev) { ev.preventDefault(); filter(); });
  }

  // ----- search.html ---------------------------------------------------------------------------
  var searchForm = document.getElementById('site-search');
  var index = window.ompSiteIndex;
  if (!searchForm || !index) return;
  var q = document.getElementById('q');
  var results = document.getElementById('results');
  var LIMIT = 500;
  var lowered = null;  // each entry's text in lower case, made on the first search

  function el(tag, cls, content) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (content) e.textContent = content;
    return e;
  }
  function snippet(textValue, low, word) {
    var at = low.indexOf(word), start = Math.max(0, at - 80), end = Math.min(textValue.length, at + word.length + 120);
    var div = el('div', 'snippet');
    div.appendChild(document.createTextNode((start > 0 ? '\u2026' : '') + textValue.slice(start, at)));
    div.appendChild(el('mark', null, textValue.slice(at, at + word.length)));
    div.appendChild(document.createTextNode(textValue.slice(at + word.length, end) + (end < textValue.length ? '\u2026' : '')));
    return div;
  }
  // an id is the file's own text: encodeURIComponent throws on a lone surrogate in it (that hit
  // then links to the session's page, and the search goes on)
  function permalink(id) {
    try { return '#' + encodeURIComponent(id); } catch (err) { return ''; }
  }
  function run(query) {
    while (results.firstChild) results.removeChild(results.firstChild);
    var words = query.toLowerCase().split(/\s+/).filter(function (w) { return w; });
    if (!words.length) { count.textContent = ''; return; }
    if (!lowered) lowered = index.map(function (s) { return s.entries.map(function (e) { return e[3].toLowerCase(); }); });
    var hits = 0, groups = 0;
    for (var i = 0; i < index.length && hits < LIMIT; i++) {
      var s = index[i], list = null;
      for (var j = 0; j < s.entries.length && hits < LIMIT; j++) {
        var low = lowered[i][j], all = true;
        for (var w = 0; w < words.length; w++) if (low.indexOf(words[w]) < 0) { all = false; break; }
        if (!all) continue;
        if (!list) {
          var section = el('section', 'hit-group'), h2 = el('h2'), a = el('a', null, s.title || '(untitled)');
          a.href = s.page;
          h2.appendChild(a); section.appendChild(h2); section.appendChild(el('div', 'cwd', s.cwd));
          list = el('ol'); section.appendChild(list); results.appendChild(section); groups++;
        }
        var e = s.entries[j], li = el('li', 'hit'), link = el('a', 'hit-link');
        link.href = s.page + permalink(e[0]);
        link.appendChild(el('span', 'what', e[1]));
        if (e[2]) link.appendChild(el('span', 'when', ' ' + new Date(e[2]).toISOString().slice(0, 19).replace('T', ' ')));
        link.appendChild(snippet(e[3], low, words[0]));
        li.appendChild(link); list.appendChild(li); hits++;
      }
    }
    count.textContent = hits + (hits >= LIMIT ? '+' : '') + ' match(es) in ' + groups + ' session(s)';
  }
  searchForm.addEventListener('submit', function (ev) {
    ev.preventDefault();
    try { history.replaceState(null, '', '#q=' + encodeURIComponent(q.value)); } catch (e) { /* some file:// pages may not */ }
    run(q.value);
  });
  var m = /^#q=(.*)$/.exec(location.hash);
  if (m) {
    try { q.value = decodeURIComponent(m[1]); } catch (err) { q.value = m[1]; }  // a hand-made "#q=%"
    run(q.value);
  }
})();
