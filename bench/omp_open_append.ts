// One timed run of the real omp: SessionManager.open + appendMessage + close.
//
//   bun --no-install bench/omp_open_append.ts SESSION.jsonl
//
// Prints one JSON line: {"seconds", "append_ms", "peak_rss", "entries"}. `seconds` covers open,
// one appendMessage and close, measured inside the process after omp is imported; `append_ms`
// is the appendMessage call alone. Run it through bench/append.py, which isolates HOME and
// restores the file afterwards.

import * as fs from "node:fs";
import * as path from "node:path";

const file = process.argv[2];
const home = process.env.OMP_ORACLE_HOME;
if (!file || !home) {
	process.stderr.write("usage: OMP_ORACLE_HOME=... bun omp_open_append.ts SESSION.jsonl\n");
	process.exit(2);
}
const src = path.join(home, "node_modules", "@oh-my-pi", "pi-coding-agent", "src", "session", "session-manager.ts");
const { SessionManager } = await import(src);

function peakRss(): number {
	const m = /^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync("/proc/self/status", "utf8"));
	return m ? Number(m[1]) * 1024 : process.resourceUsage().maxRSS * 1024;
}

const message = { role: "user", content: "one more question", timestamp: Date.now() };
const t0 = performance.now();
const sm = await SessionManager.open(path.resolve(file), undefined, undefined, {
	suppressBreadcrumb: true,
	initialCwd: process.cwd(),
});
const a0 = performance.now();
sm.appendMessage(message);
const appendMs = performance.now() - a0;
await sm.close();
const seconds = (performance.now() - t0) / 1000;

process.stdout.write(
	`${JSON.stringify({ seconds, append_ms: appendMs, peak_rss: peakRss(), entries: sm.getEntries().length })}\n`,
);
process.exit(0);
