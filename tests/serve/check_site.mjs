// Open an `export --site` folder from file:// in headless chromium (playwright-core from
// tests/browser) and print one JSON object of what the pages showed.
//
//   node tests/serve/check_site.mjs '{"index": "file:///…/index.html", "search": "file:///…/search.html",
//                                     "session": ID, "word": WORD, "entry": ENTRY_ID}'
//
// Steps: the index -> filter by text -> open the session -> search.html finds WORD in one entry ->
// follow the hit to the entry. Every request that is not a file: or data: URL is recorded (there
// must be none), as is every page error.
import { createRequire } from 'node:module';

const require = createRequire(new URL('../browser/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const spec = JSON.parse(process.argv[2]);
const out = { errors: [], network: [] };
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium', headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on('request', (r) => { if (!/^(file|data):/.test(r.url())) out.network.push(r.url()); });
  page.on('pageerror', (e) => out.errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') out.errors.push(m.text()); });

  await page.goto(spec.index);
  const visible = () => page.$$eval('#sessions tbody tr', (rs) => rs.filter((r) => !r.hidden).length);
  out.rows = await visible();
  await page.fill('#f-text', spec.session);
  out.filtered = await visible();
  await Promise.all([page.waitForNavigation(), page.click(`a[href="s/${spec.session}.html"]`)]);
  await page.waitForSelector('body[data-ready="true"]');
  out.viewer = (await page.evaluate(() => window.ompViewer.shownIds())).length;
  out.back = await page.$eval('#site-back', (a) => a.href);

  await page.goto(spec.search);
  await page.fill('#q', spec.word);
  await page.press('#q', 'Enter');
  out.hits = await page.$$eval('.hit', (h) => h.length);
  await Promise.all([page.waitForNavigation(), page.click('.hit-link')]);
  await page.waitForSelector('body[data-ready="true"]');
  await page.waitForFunction((id) => window.ompViewer.shownIds().indexOf(id) >= 0, spec.entry, { timeout: 5000 })
    .catch(() => null);
  const shown = await page.evaluate(() => window.ompViewer.shownIds());
  out.landed = shown.indexOf(spec.entry) >= 0 ? spec.entry : null;
} catch (e) {
  out.errors.push('check_site: ' + String(e && e.stack || e));
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out) + '\n');
