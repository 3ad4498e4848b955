// What the session viewer shows as text (headless chromium, playwright-core from this folder, as
// check_viewer.mjs): the tree rows, the main pane with every collapsed body opened, and the search
// counter for each query. Prints one JSON object.
//
//   node tests/browser/check_viewer_text.mjs SPEC.json      SPEC: {file, queries}
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { launchChromium } from './launch.mjs';

const spec = JSON.parse(readFileSync(process.argv[2], 'utf-8'));
const out = { errors: [], tree: [], main: '', counts: {} };
const browser = await launchChromium();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('pageerror', (e) => out.errors.push(String(e)));
  await page.goto(pathToFileURL(spec.file).href);
  await page.waitForSelector('#main .entry');
  out.tree = await page.evaluate(() => [...document.querySelectorAll('#tree .node')].map((r) => r.textContent));
  await page.evaluate(() => document.querySelectorAll('#main details').forEach((d) => { d.open = true; }));
  await page.waitForTimeout(100);
  out.main = await page.evaluate(() => document.querySelector('#main').innerText);
  for (const q of spec.queries) {
    await page.fill('#search', q);
    await page.keyboard.press('Enter');
    await page.waitForTimeout(150);
    out.counts[q] = await page.evaluate(() => document.querySelector('#search-count').textContent);
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
