// omp's own RedisSessionStorage, driven from the tests (tests/test_store_redis.py).
//
//   OMP_ORACLE_HOME=... bun --no-install omp_redis_store.ts COMMAND URL PREFIX ARGS...
//
// Commands (each prints one JSON line; nothing here re-implements omp, every value comes from
// omp's storage or SessionManager):
//
//   text PATH            storage.readText(PATH) alone
//   read PATH            storage.readText + statSync + listFilesSync of PATH's directory, then
//                        SessionManager.open(PATH) on that storage: its entries, name and leaf
//   write CWD DIR TITLE  a new session made by omp's SessionManager in DIR (user, assistant,
//                        setSessionName(TITLE, "user"), user, close): its path, text and entries
//   title PATH TITLE AT  storage.updateSessionTitle(PATH, {title: TITLE, source: "user", updatedAt: AT})
//   rename SRC DST       storage.rename(SRC, DST)
//   put PATH EXPECTED    storage.writeTextAtomic(PATH, <stdin>, {expectedSize}) ("none": must not
//                        exist); prints {ok} or {conflict: message}

import * as path from "node:path";
import { RedisClient } from "bun";

const home = process.env.OMP_ORACLE_HOME;
const [command, url, prefix, ...args] = process.argv.slice(2);
if (!home || !command || !url || prefix === undefined) {
	process.stderr.write("usage: OMP_ORACLE_HOME=... bun omp_redis_store.ts COMMAND URL PREFIX ARGS...\n");
	process.exit(2);
}
const sessionSrc = path.join(home, "node_modules", "@oh-my-pi", "pi-coding-agent", "src", "session");
const { RedisSessionStorage } = await import(path.join(sessionSrc, "redis-session-storage.ts"));
const { SessionManager } = await import(path.join(sessionSrc, "session-manager.ts"));

const client = new RedisClient(url);
await client.connect();
const storage = await RedisSessionStorage.create({ client, prefix });

function out(value: unknown): void {
	process.stdout.write(`${JSON.stringify(value)}\n`);
}

async function managerView(file: string): Promise<Record<string, unknown>> {
	const sm = await SessionManager.open(file, undefined, storage, {
		suppressBreadcrumb: true,
		initialCwd: process.cwd(),
		throwIfMissing: true,
	});
	const view = {
		entries: sm.getEntries(),
		header: sm.getHeader(),
		name: sm.getSessionName() ?? null,
		leaf: sm.getLeafId() ?? null,
	};
	await sm.close();
	return view;
}

// omp confirms a Redis publish asynchronously; an entry appended before that confirmation lands
// makes its SessionManager throw a write conflict from appendMessage (seen with 18.2.3), so the
// script lets every publish settle between steps, as an interactive session does.
async function settle(): Promise<void> {
	await storage.drain();
	await new Promise(resolve => setTimeout(resolve, 0));
}

const usage = {
	input: 10,
	output: 5,
	cacheRead: 0,
	cacheWrite: 0,
	totalTokens: 15,
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

switch (command) {
	case "text": {
		out({ text: await storage.readText(args[0]) });
		break;
	}
	case "read": {
		const file = args[0];
		const text = await storage.readText(file);
		const size = storage.statSync(file).size;
		const listed = storage.listFilesSync(path.dirname(file), "*.jsonl");
		out({ text, size, listed, ...(await managerView(file)) });
		break;
	}
	case "write": {
		const [cwd, dir, title] = args;
		const sm = SessionManager.create(cwd, dir, storage);
		sm.appendMessage({ role: "user", content: "written by omp", timestamp: 1767225600000 });
		sm.appendMessage({
			role: "assistant",
			content: [{ type: "text", text: "an answer from omp ✓" }],
			api: "anthropic-messages",
			provider: "anthropic",
			model: "claude-test",
			usage,
			stopReason: "stop",
			timestamp: 1767225601000,
		});
		await settle();
		await sm.setSessionName(title, "user");
		await settle();
		sm.appendMessage({ role: "user", content: "a follow-up", timestamp: 1767225602000 });
		const file = sm.getSessionFile();
		await sm.close();
		await storage.drain();
		out({ path: file, text: await storage.readText(file), entries: sm.getEntries() });
		break;
	}
	case "title": {
		const [file, title, updatedAt] = args;
		await storage.updateSessionTitle(file, { title, source: "user", updatedAt });
		out({ ok: true });
		break;
	}
	case "rename": {
		await storage.rename(args[0], args[1]);
		out({ ok: true });
		break;
	}
	case "put": {
		const [file, expected] = args;
		const content = await Bun.stdin.text();
		try {
			await storage.writeTextAtomic(file, content, { expectedSize: expected === "none" ? null : Number(expected) });
			out({ ok: true });
		} catch (err) {
			out({ conflict: err instanceof Error ? err.message : String(err) });
		}
		break;
	}
	default:
		process.stderr.write(`unknown command ${command}\n`);
		process.exit(2);
}
await storage.drain();
client.close();
process.exit(0);
