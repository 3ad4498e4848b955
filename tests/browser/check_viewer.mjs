// Drive an exported omp-session HTML viewer in a real headless chromium and print what it shows.
//
//   node tests/browser/check_viewer.mjs EXPORT.html SCREENSHOT.png [--query TEXT]
//
// Prints one JSON object: the tree rows, the entries shown for every branch (filter "all"),
// the entries shown by each filter on the first branch, the search hits and the counter after
// stepping to the next hit, the tool output expanded, page errors and any network request the
// page tried (there must be none). tests/test_export_html.py compares it with the session.
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
  await page.goto(pathToFileURL(htmlPath).href);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30000 });

  const shown = () => page.$$eval('#main .entry', (es) => es.map((e) => e.dataset.id));
  const info = () => page.$eval('#branch-info', (e) => e.textContent);
  summary.title = await page.title();
  summary.tree = await page.$$eval('#tree .node', (rs) => rs.map((r) => ({
    k: Number(r.dataset.k), id: r.dataset.id, onPath: r.classList.contains('on-path'),
    selected: r.classList.contains('selected'), tip: r.classList.contains('tip'),
    label: r.querySelector('.label') ? r.querySelector('.label').textContent : null,
  })));
  summary.initial = { selected: summary.tree.filter((r) => r.selected).map((r) => r.id), shown: await shown() };

  // every branch, reached by clicking its tip in the tree, with every entry shown
  await page.selectOption('#filter', 'all');
  summary.branches = {};
  for (const tip of summary.tree.filter((r) => r.tip)) {
    await page.click(`#tree .node[data-k="${tip.k}"]`);
    summary.branches[tip.id] = {
      shown: await shown(), info: await info(),
      onPath: await page.$$eval('#tree .node.on-path', (rs) => rs.map((r) => r.dataset.id)),
    };
  }
  // back to the first branch, then each filter
  const first = summary.tree.find((r) => r.tip);
  if (first) await page.click(`#tree .node[data-k="${first.k}"]`);
  summary.filters = {};
  for (const f of ['default', 'no-tools', 'user', 'labeled', 'all']) {
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

  summary.images = await page.$$eval('#main img.inline', (is) => is.map((i) => ({ w: i.naturalWidth, src: i.src.slice(0, 30) })));
  summary.placeholders = await page.$$eval('#main .placeholder', (ps) => ps.map((p) => p.textContent));
  await page.screenshot({ path: shotPath, fullPage: false });
  summary.screenshot = shotPath;
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(summary) + '\n');
