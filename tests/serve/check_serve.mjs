// Drive `omp-session serve` in headless chromium (playwright-core from tests/browser, as
// check_viewer.mjs does) and print one JSON object of what the pages showed.
//
//   node tests/serve/check_serve.mjs SPEC.json
//
// SPEC: {url, shots, project, text, textId, branchId, branchOther, searchWord, searchId, searchEntry,
//        costValue, live: {id, path, line, entryId}}. Every request to anything but the server is
// recorded and refused (there must be none). Steps: list -> filter by project, then text -> open
// the session -> switch a branch -> search a word found in one session and follow the hit to its
// entry -> costs page (and its 5-hour blocks) -> append to an open session from this (other) process and time its arrival.
import { appendFileSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const require = createRequire(new URL('../browser/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const spec = JSON.parse(readFileSync(process.argv[2], 'utf-8'));
const origin = new URL(spec.url).origin;
const out = { errors: [], network: [], steps: {} };
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium', headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const shot = async (page, name) => page.screenshot({ path: join(spec.shots, name + '.png'), fullPage: false });
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(origin + '/')) return route.continue();
    out.network.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('pageerror', (e) => out.errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') out.errors.push(m.text()); });
  const rows = () => page.$$eval('#sessions tbody tr', (rs) => rs.map((r) => ({
    id: r.dataset.id, cwd: r.querySelector('.cwd').textContent, sub: r.classList.contains('sub') })));

  // the list: the token leaves the address bar, the first page of the sessions shows
  await page.goto(spec.url);
  out.steps.list = { path: new URL(page.url()).pathname + new URL(page.url()).search, rows: (await rows()).length,
    count: await page.$eval('#count', (e) => e.textContent), pager: await page.$$eval('.pager', (p) => p.length) };
  await shot(page, '1-list');

  // filter: choosing a project applies at once (list.js); the text applies on Enter
  await Promise.all([page.waitForNavigation(), page.selectOption('#f-project', spec.project)]);
  out.steps.project = { cwds: [...new Set((await rows()).filter((r) => !r.sub).map((r) => r.cwd))] };
  await page.fill('#f-text', spec.text);
  await Promise.all([page.waitForNavigation(), page.press('#f-text', 'Enter')]);
  out.steps.text = { ids: (await rows()).map((r) => r.id) };
  await shot(page, '2-filtered');

  // open it
  await Promise.all([page.waitForNavigation(), page.click(`#sessions tr[data-id="${spec.textId}"] td.title a`)]);
  await page.waitForSelector('body[data-ready="true"]');
  out.steps.open = { path: new URL(page.url()).pathname, shown: await page.evaluate(() => window.ompViewer.shownIds()),
    bar: await page.$eval('#serve-bar', (b) => b.textContent) };
  await shot(page, '3-session');

  // switch a branch: the other tip, clicked in the tree
  await page.goto(origin + '/s/' + encodeURIComponent(spec.branchSession));
  await page.waitForSelector('body[data-ready="true"]');
  const before = await page.evaluate(() => window.ompViewer.shownIds());
  const k = await page.evaluate((id) => window.ompViewer.treeRows().find((r) => r.id === id).k, spec.branchId);
  await page.evaluate((kk) => window.ompViewer.revealInTree(kk), k);
  await page.click(`#tree .node[data-k="${k}"]`);
  out.steps.branch = { before, after: await page.evaluate(() => window.ompViewer.shownIds()),
    hash: await page.evaluate(() => location.hash) };
  await shot(page, '4-branch');

  // search a word seen in one session only, follow the hit: the page opens on that entry's branch
  await page.click('#serve-bar a[href="/search"]');
  await page.waitForSelector('#q');
  await page.fill('#q', spec.searchWord);
  await Promise.all([page.waitForNavigation(), page.press('#q', 'Enter')]);
  const hits = await page.$$eval('.hit-link', (as) => as.map((a) => a.getAttribute('href')));
  await shot(page, '5-search');
  await Promise.all([page.waitForNavigation(), page.click('.hit-link')]);
  await page.waitForSelector('body[data-ready="true"]');
  await page.waitForFunction((id) => document.querySelector(`#main .entry[data-id="${id}"]`) !== null, spec.searchEntry);
  out.steps.search = { hits, url: new URL(page.url()).pathname + new URL(page.url()).hash,
    shown: await page.evaluate(() => window.ompViewer.shownIds()),
    selected: await page.$$eval('#tree .node.selected', (rs) => rs.map((r) => r.dataset.id)) };
  await shot(page, '6-search-landed');

  // costs
  await page.goto(origin + '/costs');
  out.steps.costs = { value: await page.$eval('#billed-cost', (e) => e.dataset.value),
    text: await page.$eval('#billed-cost', (e) => e.textContent), charts: await page.$$eval('svg', (s) => s.length),
    blocks: await page.$$eval('#blocks-table tbody tr.block', (rs) => rs.map((r) => ({
      start: r.dataset.start, cost: r.querySelector('td.cost').dataset.value,
      tokens: r.querySelector('td.tokens').dataset.value }))),
    blocksChart: await page.$$eval('#blocks-chart', (s) => s.length) };
  await page.$eval('#blocks', (e) => e.scrollIntoView());
  await shot(page, '7b-costs-blocks');
  await page.evaluate(() => window.scrollTo(0, 0));
  await shot(page, '7-costs');

  // live: an open page shows an entry appended by another process (this one) without reload
  await page.goto(origin + '/s/' + encodeURIComponent(spec.live.id));
  await page.waitForSelector('body[data-ready="true"]');
  await page.waitForFunction(() => window.ompServe && window.ompServe.status.startsWith('live'));
  await page.evaluate(() => { window.notReloaded = true; });
  const t0 = Date.now();
  appendFileSync(spec.live.path, spec.live.line + '\n');
  let arrived = null;
  try {
    await page.waitForFunction((id) => window.ompViewer.shownIds().includes(id), spec.live.entryId, { timeout: 10000 });
    arrived = Date.now() - t0;
  } catch (e) { out.errors.push('live entry never arrived: ' + e.message); }
  out.steps.live = { ms: arrived, notReloaded: await page.evaluate(() => window.notReloaded === true),
    updates: await page.evaluate(() => window.ompServe.updates),
    text: await page.evaluate((id) => { const e = document.querySelector(`#main .entry[data-id="${id}"]`); return e ? e.textContent : null; }, spec.live.entryId) };
  await shot(page, '8-live');
} catch (e) {
  out.errors.push('driver: ' + (e && e.stack ? e.stack : String(e)));
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out) + '\n');
