// The session viewer's layout at a phone's 390x844 and a desktop's 1280x800 (headless chromium,
// playwright-core from this folder, as check_viewer.mjs): the exported file and the same viewer
// served at /s/<id> under serve's toolbar. Prints one JSON object: per page and size, the
// document's scroll width, the panes' rectangles and, scrolled to the end of the branch, the
// rectangles of the toolbar, the last entry and the last tool result.
//
//   node tests/browser/check_viewer_phone.mjs SPEC.json      SPEC: {file, url, shots}
import { readFileSync } from 'node:fs';
import { launchChromium } from './launch.mjs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';


const spec = JSON.parse(readFileSync(process.argv[2], 'utf-8'));
const out = { errors: [], pages: {} };
const browser = await launchChromium();

// scrolled to the end of the shown branch (the message column scrolls, and the page, if it does)
async function measure(page) {
  for (let i = 0; i < 5; i++) {
    await page.evaluate(() => {
      const main = document.querySelector('#main');
      main.scrollTop = main.scrollHeight;
      window.scrollTo(0, document.documentElement.scrollHeight);
    });
    await page.waitForTimeout(100);  // the chunk the scroll lands on is built on the next frames
  }
  return page.evaluate(() => {
    const rect = (e) => {
      if (!e) return null;
      const r = e.getBoundingClientRect();
      return { left: r.left, top: r.top, right: r.right, bottom: r.bottom, width: r.width, height: r.height };
    };
    const entries = document.querySelectorAll('#main .entry');
    const results = document.querySelectorAll('#main .entry.role-toolResult');
    const main = document.querySelector('#main');
    return {
      viewport: window.innerWidth, viewportHeight: window.innerHeight,
      scrollWidth: document.documentElement.scrollWidth,
      widest: Math.max(...[...document.querySelectorAll('body *')].map((e) => e.getBoundingClientRect().right)),
      main: rect(main), side: rect(document.querySelector('#side')), tree: rect(document.querySelector('#tree')),
      search: rect(document.querySelector('#search')),
      // what of the message column is on screen: its box cut to the viewport
      mainVisible: rect(main) && { ...rect(main), bottom: Math.min(rect(main).bottom, window.innerHeight) },
      atEnd: main.scrollTop + main.clientHeight >= main.scrollHeight - 1,
      entries: entries.length, lastEntry: rect(entries[entries.length - 1]),
      lastResult: rect(results[results.length - 1]),
      toolbar: rect(document.querySelector('#serve-bar')),
      treeRows: document.querySelectorAll('#tree .node').length,
    };
  });
}

try {
  for (const [name, viewport] of [['desktop', { width: 1280, height: 800 }], ['phone', { width: 390, height: 844 }]]) {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    page.on('pageerror', (e) => out.errors.push(String(e)));
    await page.goto(pathToFileURL(spec.file).href);
    await page.waitForSelector('#main .entry');
    out.pages[`file-${name}`] = await measure(page);
    await page.screenshot({ path: join(spec.shots, `file-${name}.png`) });
    await page.goto(spec.url);  // the token goes into a cookie
    await page.goto(new URL(spec.session, spec.url).href);
    await page.waitForSelector('#main .entry');
    await page.waitForSelector('#serve-bar');
    out.pages[`served-${name}`] = await measure(page);
    await page.screenshot({ path: join(spec.shots, `served-${name}.png`) });
    await context.close();
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out) + '\n');
