// The layout of `omp-session serve`'s pages at a desktop and a phone size (headless chromium,
// playwright-core from this folder, as check_viewer.mjs). Prints one JSON object: per page and
// size, the document's scroll width, the viewport's width and what the test asks about.
//
//   node tests/browser/check_serve_layout_qa2.mjs SPEC.json      SPEC: {url, costs}
import { readFileSync } from 'node:fs';
import { launchChromium } from './launch.mjs';


const spec = JSON.parse(readFileSync(process.argv[2], 'utf-8'));
const out = { errors: [], pages: {} };
const browser = await launchChromium();
try {
  for (const [name, viewport] of [['desktop', { width: 1280, height: 800 }], ['phone', { width: 390, height: 844 }]]) {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    page.on('pageerror', (e) => out.errors.push(String(e)));
    await page.goto(spec.url);  // the token goes into a cookie
    out.pages[`list-${name}`] = await page.evaluate(() => {
      const table = document.querySelector('#sessions');
      const cwd = document.querySelector('#sessions tbody td.cwd');
      const line = parseFloat(getComputedStyle(cwd).lineHeight);
      const pad = parseFloat(getComputedStyle(cwd).paddingTop) + parseFloat(getComputedStyle(cwd).paddingBottom);
      const cells = [...document.querySelectorAll('#sessions thead th')].map((th) => th.getBoundingClientRect());
      return {
        scrollWidth: document.documentElement.scrollWidth, viewport: window.innerWidth,
        tableWidth: table.getBoundingClientRect().width,
        projectLines: Math.round((cwd.getBoundingClientRect().height - pad) / line),
        columnsRightEdge: Math.max(...cells.map((r) => r.right)),
      };
    });
    await page.goto(new URL('/costs', spec.url).href);
    out.pages[`costs-${name}`] = await page.evaluate(() => {
      const day = document.querySelector('table tbody td');
      return {
        scrollWidth: document.documentElement.scrollWidth, viewport: window.innerWidth,
        dayLines: Math.round(day.getBoundingClientRect().height / parseFloat(getComputedStyle(day).lineHeight)),
        charts: [...document.querySelectorAll('svg')].map((s) => s.getBoundingClientRect().right),
      };
    });
    await context.close();
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out) + '\n');
