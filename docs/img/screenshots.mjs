// Screenshots of the four pages of `omp-session serve` for the README (make_screenshots.py runs
// this with a running server; playwright-core and chromium as tests/browser/setup.sh installs them).
//
//   node docs/img/screenshots.mjs SPEC.json
//
// SPEC: {url, out, width, height, session, entry, search}. Any request to anything but the server
// is refused and fails the run: a README picture must not hide a page that reaches out.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const require = createRequire(new URL('../../tests/browser/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const spec = JSON.parse(readFileSync(process.argv[2], 'utf-8'));
const origin = new URL(spec.url).origin;
const problems = [];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium', headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--hide-scrollbars'],
});
try {
  const context = await browser.newContext({ viewport: { width: spec.width, height: spec.height }, deviceScaleFactor: 1 });
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(origin + '/')) return route.continue();
    problems.push('request outside the server: ' + url);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('pageerror', (e) => problems.push(String(e)));
  const shot = (name) => page.screenshot({ path: join(spec.out, name), fullPage: false });

  await page.goto(spec.url);  // the token becomes a cookie
  await page.waitForSelector('#sessions tbody tr');
  await shot('serve-list.png');

  await page.goto(origin + '/s/' + encodeURIComponent(spec.session) + '#' + spec.entry);
  await page.waitForSelector('body[data-ready="true"]');
  await shot('serve-session.png');

  await page.goto(origin + '/search?q=' + encodeURIComponent(spec.search));
  await page.waitForSelector('.hit-link');
  await shot('serve-search.png');

  await page.goto(origin + '/costs');
  await page.waitForSelector('#billed-cost');
  await shot('serve-costs.png');
} catch (e) {
  problems.push('driver: ' + (e && e.stack ? e.stack : String(e)));
} finally {
  await browser.close();
}
if (problems.length) {
  process.stderr.write(problems.join('\n') + '\n');
  process.exit(1);
}
