// One timed run of omp's own session listing: SessionManager.listAll() (every project).
//
//   bun --no-install bench/omp_list.ts
//
// Prints one JSON line: {"seconds", "sessions"}. `seconds` is measured inside the process
// after omp is imported (Bun's startup and the transpilation of omp are not counted; the
// parent also records the wall time of the whole process). The sessions root is omp's
// default under PI_CODING_AGENT_DIR: run it through bench/list.py, which points HOME and
// PI_CODING_AGENT_DIR at the built root and sets OMP_ORACLE_HOME.

import * as path from "node:path";

const home = process.env.OMP_ORACLE_HOME;
if (!home) {
	process.stderr.write("usage: OMP_ORACLE_HOME=... PI_CODING_AGENT_DIR=... bun omp_list.ts\n");
	process.exit(2);
}
const src = path.join(home, "node_modules", "@oh-my-pi", "pi-coding-agent", "src", "session", "session-manager.ts");
const { SessionManager } = await import(src);

const t0 = performance.now();
const sessions = await SessionManager.listAll();
// what the CLI does with it: one JSON document
const text = JSON.stringify(sessions);
const seconds = (performance.now() - t0) / 1000;
process.stdout.write(`${JSON.stringify({ seconds, sessions: sessions.length, bytes: text.length })}\n`);
process.exit(0);
