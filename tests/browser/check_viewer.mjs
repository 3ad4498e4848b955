// Drive an exported omp-session HTML viewer in a real headless chromium and print what it shows.
//
//   node tests/browser/check_viewer.mjs EXPORT.html SCREENSHOT.png [--query TEXT] [--subagent]
//        [--end-query TEXT] [--step-query TEXT] [--steps N] [--no-branches] [--no-filters]
//
// Prints one JSON object: the tree rows (all of them, from the viewer's window.ompViewer, and
// how many exist in the DOM at load), the entries shown for every branch (filter "all"; each
// tip is scrolled into view in the virtual tree and clicked), the entries shown by each filter
// on the first branch, the search hits and the counter after stepping to the next hit, the tool
// output expanded, page errors and any network request the page tried (there must be none).
// --subagent opens the first subagent link of the branch (screenshot SCREENSHOT-inside.png) and
// goes back; --end-query times a search (meant to have its only hit at the end of the branch)
// and --step-query times stepping
// through hits (--steps N, default 5: from the first hit to the last and back, then forward);
// timings are milliseconds measured inside the page, from the action to the next frame.
// tests/test_export_html.py compares the output with the session; bench/export_html.py times it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const argv = process.argv.slice(2);
const positional = argv.filter((a, i) => !a.startsWith('--') && !(i > 0 && argv[i - 1].startsWith('--')));
const opt = (name, dflt) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : dflt; };
if (positional.length < 2) {
  console.error('usage: check_viewer.mjs EXPORT.html SCREENSHOT.png [--query TEXT]');
  process.exit(2);
}
const [htmlPath, shotPath] = positional.map((p) => resolve(p));
const query = opt('--query', '');
const flag = (name) => argv.includes(name);
const endQuery = opt('--end-query', '');
const stepQuery = opt('--step-query', '');
const steps = Number(opt('--steps', '5'));
const executablePath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

// a fresh profile each run: nothing cached from an earlier run can hide a missing asset
const profile = mkdtempSync(join(tmpdir(), 'omp-viewer-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  viewport: { width: 1280, height: 900 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const summary = { errors: [], network: [] };
try {
  const page = context.pages()[0] || await context.newPage();
  page.on('pageerror', (e) => summary.errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') summary.errors.push(m.text()); });
  // every request other than the file itself is recorded and refused: the export must not need any
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url === pathToFileURL(htmlPath).href) return route.continue();
    summary.network.push(url);
    return route.abort();
  });
  const t0 = Date.now();
  await page.goto(pathToFileURL(htmlPath).href, { timeout: 120000 });
  await page.waitForSelector('body[data-ready="true"]', { timeout: 120000 });
  await page.waitForFunction(() => window.ompViewerPainted !== undefined);
  summary.load = await page.evaluate(() => ({
    readyMs: window.ompViewerReady, paintMs: window.ompViewerPainted, scriptStartMs: window.ompViewerTimes.scriptStart,
    dataParsedMs: window.ompViewerTimes.dataParsed,
    jsHeapBytes: performance.memory ? performance.memory.usedJSHeapSize : null,
  }));
  summary.load.wallMs = Date.now() - t0;
  summary.treeDomRows = await page.$$eval('#tree .node', (rs) => rs.length);
  summary.initialEntriesDom = await page.$$eval('#main .entry', (es) => es.length);

  const shown = () => page.$$eval('#main .entry', (es) => es.map((e) => e.dataset.id));
  const info = () => page.$eval('#branch-info', (e) => e.textContent);
  summary.title = await page.title();
  const shownAll = () => page.evaluate(() => window.ompViewer.shownIds());
  // the tree is virtual: only the rows in view exist, the viewer lists them all
  summary.tree = await page.evaluate(() => window.ompViewer.treeRows());
  summary.initial = {
    selected: await page.$$eval('#tree .node.selected', (rs) => rs.map((r) => r.dataset.id)), shown: await shown(),
  };
  const clickRow = async (k) => {
    await page.evaluate((kk) => window.ompViewer.revealInTree(kk), k);
    await page.click(`#tree .node[data-k="${k}"]`);
  };

  // every branch, reached by clicking its tip in the tree, with every entry shown
  summary.branches = {};
  if (!flag('--no-branches')) {
    await page.selectOption('#filter', 'all');
    for (const tip of summary.tree.filter((r) => r.tip)) {
      await clickRow(tip.k);
      summary.branches[tip.id] = {
        shown: await shown(), shownAll: await shownAll(), info: await info(),
        onPath: await page.$$eval('#tree .node.on-path', (rs) => rs.map((r) => r.dataset.id)),
        selected: await page.$$eval('#tree .node.selected', (rs) => rs.map((r) => r.dataset.id)),
      };
    }
  }
  // back to the first branch, then each filter
  const first = summary.tree.find((r) => r.tip);
  if (first && !flag('--no-branches')) await clickRow(first.k);
  summary.filters = {};
  for (const f of flag('--no-filters') ? [] : ['default', 'no-tools', 'user', 'labeled', 'all']) {
    await page.selectOption('#filter', f);
    summary.filters[f] = {
      shown: await shown(),
      toolCalls: await page.$$eval('#main .toolcall', (es) => es.length),
    };
  }
  await page.selectOption('#filter', 'default');

  // a collapsed tool output (else any collapsed body): closed and unbuilt until clicked
  const lazies = await page.$$('#main details.lazy:not([open])');
  let closed = null;
  for (const d of lazies) {
    if (await d.evaluate((x) => x.querySelector('summary').textContent.startsWith('Output'))) { closed = d; break; }
  }
  closed = closed || lazies[0] || null;
  summary.expand = null;
  if (closed) {
    const before = await closed.evaluate((d) => d.querySelectorAll('pre, .text').length);
    const label = await closed.evaluate((d) => d.querySelector('summary').textContent);
    await closed.evaluate((d) => d.querySelector('summary').click());
    const after = await closed.evaluate((d) => ({ open: d.open, chars: (d.querySelector('pre, .text') || {}).textContent?.length ?? 0 }));
    summary.expand = { summary: label, bodyBefore: before, open: after.open, bodyChars: after.chars };
  }
  if (query) {
    await page.fill('#search', query);
    await page.press('#search', 'Enter');
    await page.waitForFunction(() => document.querySelector('#search-count').textContent !== '');
    summary.search = {
      hits: await page.$$eval('#main mark.hit', (ms) => ms.map((m) => m.textContent)),
      countFirst: await page.$eval('#search-count', (e) => e.textContent),
    };
    await page.click('#search-next');
    summary.search.countNext = await page.$eval('#search-count', (e) => e.textContent);
    summary.search.currentEntry = await page.$eval('#main mark.hit.current',
      (m) => m.closest('.entry').dataset.id).catch(() => null);
    await page.click('#search-prev');
    summary.search.countPrev = await page.$eval('#search-count', (e) => e.textContent);
    await page.fill('#search', '');
    await page.press('#search', 'Enter');
  }

  if (flag('--subagent')) {
    summary.subagent = null;
    const link = await page.$('#main .subagent-link');
    if (link) {
      const before = await shownAll();
      const from = await link.evaluate((b) => ({ text: b.textContent, entry: b.closest('.entry').dataset.id }));
      await link.click();
      summary.subagent = {
        from, before, side: await page.$$eval('#subagents .subagent', (ss) => ss.map((s) => s.textContent)),
        title: await page.$eval('#side h1', (h) => h.textContent), shown: await shownAll(),
        crumbs: await page.$eval('#crumbs', (c) => c.textContent),
        backVisible: await page.$eval('#back', (b) => b.offsetParent !== null),
        tree: await page.evaluate(() => window.ompViewer.treeRows().map((r) => r.id)),
        screenshot: shotPath.replace(/(\.png)?$/, '-inside.png'),
      };
      await page.screenshot({ path: summary.subagent.screenshot, fullPage: false });
      await page.click('#back');
      summary.subagent.after = await shownAll();
      summary.subagent.afterTitle = await page.$eval('#side h1', (h) => h.textContent);
      summary.subagent.afterBackVisible = await page.$eval('#back', (b) => b.offsetParent !== null);
    }
    summary.sideSubagents = await page.$$eval('#subagents .subagent', (ss) => ss.map((s) => s.textContent));
  }
  // timed actions: run inside the page, measured from the action to the next frame
  const timed = (action, q) => page.evaluate(async ([a, qq]) => {
    const s = document.getElementById('search');
    const t0 = performance.now();
    if (a === 'search') { s.value = qq; s.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' })); }
    else document.getElementById(a === 'next' ? 'search-next' : 'search-prev').click();
    const script = performance.now() - t0;
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    const cur = document.querySelector('#main mark.hit.current');
    return {
      scriptMs: script, frameMs: performance.now() - t0, count: document.getElementById('search-count').textContent,
      entry: cur ? cur.closest('.entry').dataset.id : null, mark: cur ? cur.textContent : null,
      entriesDom: document.querySelectorAll('#main .entry').length,
    };
  }, [action, q]);
  if (endQuery) {
    await page.selectOption('#filter', 'default');
    summary.endSearch = { first: await timed('search', endQuery) };
    await timed('search', '');
    summary.endSearch.again = await timed('search', endQuery);
    summary.endSearch.branchEnd = await page.evaluate(() => window.ompViewer.shownIds().slice(-1)[0]);
  }
  if (stepQuery) {
    // from the first hit, Prev wraps to the last hit (the far end of the branch) and Next back
    summary.steps = { search: await timed('search', stepQuery), toEnd: [], toStart: [], next: [] };
    for (let i = 0; i < steps; i++) {
      summary.steps.toEnd.push(await timed('prev'));
      summary.steps.toStart.push(await timed('next'));
    }
    for (let i = 0; i < steps; i++) summary.steps.next.push(await timed('next'));
  }
  if (endQuery || stepQuery) await timed('search', '');

  summary.images = await page.$$eval('#main img.inline', (is) => is.map((i) => ({ w: i.naturalWidth, src: i.src.slice(0, 30) })));
  summary.placeholders = await page.$$eval('#main .placeholder', (ps) => ps.map((p) => p.textContent));
  await page.screenshot({ path: shotPath, fullPage: false });
  summary.screenshot = shotPath;
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(summary) + '\n');
