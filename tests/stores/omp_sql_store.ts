// Drive omp 18.2.3's own SqlSessionStorage (and its SessionManager on it) from the installed
// package, for tests/test_store_omp.py: what omp-session writes into a table, omp reads
// identically, and the reverse. Nothing here re-implements omp; it only calls it.
//
//   bun omp_sql_store.ts read  DB_URL TABLE PATH...            one JSON line per PATH:
//        {path, exists, size, text, listed}  (omp's statSync / readText / listFilesSync)
//   bun omp_sql_store.ts load  DB_URL TABLE PATH               omp's SessionManager.open on it:
//        {title, entries, leaf, header}
//   bun omp_sql_store.ts write DB_URL TABLE CWD SESSION_DIR    omp's SessionManager writes a
//        session (messages, a title change, a branch): {path, text}
//
// DB_URL is a Bun.SQL URL: postgres://…, mysql://…, sqlite:///abs/path.db.
// Needs OMP_ORACLE_HOME (the oracle's install, where node_modules/@oh-my-pi lives).

import * as path from "node:path";

const home = process.env.OMP_ORACLE_HOME;
if (!home) {
	process.stderr.write("usage: OMP_ORACLE_HOME=... bun omp_sql_store.ts read|load|write DB_URL TABLE ...\n");
	process.exit(2);
}
const session = path.join(home, "node_modules", "@oh-my-pi", "pi-coding-agent", "src", "session");
const { SqlSessionStorage } = await import(path.join(session, "sql-session-storage.ts"));
const { SessionManager } = await import(path.join(session, "session-manager.ts"));

const [command, dbUrl, table, ...rest] = process.argv.slice(2);
const client = new Bun.SQL(dbUrl);
const storage = await SqlSessionStorage.create({ client, table });
const out = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

if (command === "read") {
	for (const p of rest) {
		const exists = storage.existsSync(p);
		const listed = storage.listFilesSync(path.dirname(p), "*.jsonl").includes(p);
		out({
			path: p,
			exists,
			listed,
			size: exists ? storage.statSync(p).size : null,
			text: exists ? await storage.readText(p) : null,
		});
	}
} else if (command === "load") {
	const sm = await SessionManager.open(rest[0], undefined, storage, { throwIfMissing: true, suppressBreadcrumb: true });
	out({
		title: sm.getSessionName() ?? null,
		entries: sm.getEntries().length,
		leaf: sm.getLeafId() ?? null,
		header: sm.getHeader() ?? null,
	});
	await sm.close();
} else if (command === "write") {
	const [cwd, sessionDir] = rest;
	const sm = SessionManager.create(cwd, sessionDir, storage);
	const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2,
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0.001 } };
	const u = sm.appendMessage({ role: "user", content: "written by omp ✓ 𝄞", timestamp: 1 });
	sm.appendMessage({ role: "assistant", content: [{ type: "text", text: "hi" }], api: "anthropic-messages",
		provider: "anthropic", model: "m", usage, stopReason: "stop", timestamp: 2 });
	await sm.setSessionName("Title from omp ✓", "user");
	// without this flush omp's next append throws SessionWriteConflictError on SQL storage
	// (its expected size misses the title_change line; docs/stores.md)
	await sm.flush();
	sm.branch(u);
	sm.appendMessage({ role: "user", content: "on a branch", timestamp: 3 });
	await sm.flush();
	const p = sm.getSessionFile();
	await sm.close();
	await storage.drain();
	out({ path: p, text: await storage.readText(p) });
} else {
	process.stderr.write(`unknown command ${command}\n`);
	process.exit(2);
}
await storage.drain();
await client.end?.();
process.exit(0);
