// omp-session serve, a session's page (the export's viewer, served as it is): a toolbar (back to
// the list, copy the resume command, live status), #<entryId> permalinks, and live updates from
// /events/<id>. On a change the page fetches itself again and runs the viewer on the new data:
// no reload, and the reader stays where they were (or at the end, if they were at the end).
(function () {
  'use strict';
  var info = JSON.parse(document.getElementById('omp-serve-session').textContent);
  // the viewer's own inline script (the CSP allows it by its hash, so it may run again)
  var inline = document.querySelectorAll('script:not([src]):not([type])');
  var viewerSource = inline.length ? inline[inline.length - 1].textContent : null;
  window.ompServe = { updates: 0, events: [], status: '' };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text) e.textContent = text;
    return e;
  }

  // ----- toolbar -------------------------------------------------------------------------------
  var bar = el('div'); bar.id = 'serve-bar';
  var back = el('a', null, '\u2190 sessions'); back.href = '/';
  var search = el('a', null, 'search'); search.href = '/search';
  bar.appendChild(back); bar.appendChild(search);
  if (info.resume) {
    var copy = el('button', null, 'copy resume command'); copy.id = 'copy-resume'; copy.title = info.resume;
    copy.addEventListener('click', function () {
      function done(ok) { copy.textContent = ok ? 'copied' : info.resume; setTimeout(function () { copy.textContent = 'copy resume command'; }, 2500); }
      if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(info.resume).then(function () { done(true); }, function () { done(false); });
      else done(false);
    });
    bar.appendChild(copy);
  }
  var live = el('span', 'live', info.archived ? 'archived' : ''); live.id = 'serve-live';
  bar.appendChild(live);
  document.body.appendChild(bar);
  function status(text, cls) { live.textContent = text; live.className = 'live ' + (cls || ''); window.ompServe.status = text; }

  // ----- permalinks: /s/<id>#<entryId> -------------------------------------------------------------
  function goToEntry(id) {
    var V = window.ompViewer;
    if (!V || !id) return false;
    var rows = V.treeRows(), k = -1;
    for (var i = 0; i < rows.length; i++) if (rows[i].id === id) { k = rows[i].k; break; }
    if (k < 0) return false;
    V.revealInTree(k);
    var node = document.querySelector('#tree .node[data-k="' + k + '"]');
    if (node) node.click();  // the viewer's own click: selects the entry's branch and scrolls to it
    return !!node;
  }
  function fromHash() {
    if (location.hash.length < 2) return;
    var id;
    try { id = decodeURIComponent(location.hash.slice(1)); } catch (err) { return; }  // a hand-made "#%"
    goToEntry(id);
  }
  fromHash();
  window.addEventListener('hashchange', fromHash);
  // the address bar follows the entry picked in the tree, so it can be copied as a link
  document.addEventListener('click', function (ev) {
    var node = ev.target && ev.target.closest ? ev.target.closest('#tree .node') : null;
    if (node && node.dataset.id) history.replaceState(null, '', '#' + encodeURIComponent(node.dataset.id));
  }, true);

  // ----- live updates ------------------------------------------------------------------------------
  if (!info.events || !viewerSource || !window.EventSource) return;
  var busy = false, again = false;

  function apply(text) {
    var fresh = new DOMParser().parseFromString(text, 'text/html');
    var data = fresh.getElementById('omp-session-data'), meta = fresh.getElementById('omp-serve-session');
    if (!data || !meta) throw new Error('not a session page');
    document.getElementById('omp-session-data').textContent = data.textContent;
    var old = document.querySelectorAll('script[id^="omp-subagent-"]');
    for (var i = 0; i < old.length; i++) old[i].remove();
    var subs = fresh.querySelectorAll('script[id^="omp-subagent-"]');
    for (var j = 0; j < subs.length; j++) {
      var block = document.createElement('script');
      block.type = 'application/json'; block.id = subs[j].id; block.textContent = subs[j].textContent;
      document.body.appendChild(block);
    }
    var next = JSON.parse(meta.textContent);
    info.entries = next.entries; info.leaf = next.leaf;
    var main = document.getElementById('main');
    var atEnd = !main || main.scrollTop + main.clientHeight >= main.scrollHeight - 40;
    var top = main ? main.scrollTop : 0;
    // a new #app: the old viewer's listeners go with the old one
    var app = document.createElement('div'); app.id = 'app';
    document.getElementById('app').replaceWith(app);
    var run = document.createElement('script');
    run.textContent = viewerSource;
    document.body.appendChild(run);
    run.remove();
    document.title = fresh.title;
    main = document.getElementById('main');
    if (main) main.scrollTop = atEnd ? main.scrollHeight : top;
    window.ompServe.updates++;
  }

  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.pathname, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); return r.text(); })
      .then(function (text) { apply(text); status('live \u00b7 updated ' + new Date().toLocaleTimeString(), 'on'); })
      .catch(function (e) { status('update failed: ' + e.message, 'gone'); })
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }

  var changes = ['appended', 'branch_switch', 'title_changed', 'created', 'truncated', 'replaced'];
  var source = new EventSource(info.events);
  source.addEventListener('open', function () { status('live', 'on'); });
  source.addEventListener('error', function () {
    status(source.readyState === EventSource.CLOSED ? 'disconnected' : 'reconnecting\u2026', 'gone');
  });
  source.addEventListener('ready', function (ev) {
    var d = JSON.parse(ev.data);
    status('live', 'on');
    if (d.entries !== info.entries || d.leaf !== info.leaf) refresh();  // changed while the page loaded
  });
  changes.forEach(function (kind) {
    source.addEventListener(kind, function (ev) { window.ompServe.events.push(kind); refresh(); });
  });
  source.addEventListener('deleted', function () { window.ompServe.events.push('deleted'); status('the file was deleted (waiting for it)', 'gone'); });
  source.addEventListener('unreadable', function (ev) { status('unreadable: ' + JSON.parse(ev.data).reason, 'gone'); });
})();
