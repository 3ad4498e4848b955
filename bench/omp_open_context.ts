// One timed run of the real omp: SessionManager.open + buildSessionContext() + getTree().
//
//   bun --no-install bench/omp_open_context.ts SESSION.jsonl
//
// Prints one JSON line: {"seconds", "peak_rss", "entries", "messages", "roots"}.
// `seconds` is measured inside the process after omp is imported, so Bun's
// startup and the transpilation of omp are not counted (our Python side
// likewise excludes interpreter start and imports). `peak_rss` is VmHWM, which
// includes the import. Run it through bench/open_context.py, which sets up an
// isolated HOME / PI_CODING_AGENT_DIR and OMP_ORACLE_HOME.

import * as fs from "node:fs";
import * as path from "node:path";

const file = process.argv[2];
const home = process.env.OMP_ORACLE_HOME;
if (!file || !home) {
	process.stderr.write("usage: OMP_ORACLE_HOME=... bun omp_open_context.ts SESSION.jsonl\n");
	process.exit(2);
}
const src = path.join(home, "node_modules", "@oh-my-pi", "pi-coding-agent", "src", "session", "session-manager.ts");
const { SessionManager } = await import(src);

function peakRss(): number {
	const m = /^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync("/proc/self/status", "utf8"));
	return m ? Number(m[1]) * 1024 : process.resourceUsage().maxRSS * 1024;
}

const t0 = performance.now();
const sm = await SessionManager.open(path.resolve(file), undefined, undefined, {
	suppressBreadcrumb: true,
	initialCwd: process.cwd(),
});
const context = sm.buildSessionContext();
const tree = sm.getTree();
const seconds = (performance.now() - t0) / 1000;

process.stdout.write(
	`${JSON.stringify({
		seconds,
		peak_rss: peakRss(),
		entries: sm.getEntries().length,
		messages: context.messages.length,
		roots: tree.length,
	})}\n`,
);
// omp may leave timers or watchers behind; the measurement is done.
process.exit(0);
