// How the browser checks start chromium (headless, CHROMIUM_PATH or Debian's /usr/bin/chromium),
// with playwright-core from this folder.
import { createRequire } from 'node:module';

const require = createRequire(new URL('./package.json', import.meta.url));
export const { chromium } = require('playwright-core');
export const executablePath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export function launchChromium() {
  return chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS });
}
