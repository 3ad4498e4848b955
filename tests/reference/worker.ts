// A worker process: takes inputs from the supervisor over IPC, one at a time,
// and answers with their records. It installs the reproducible clock and ids
// before it imports omp, so that no omp module captures the real ones.

import nodeCrypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import {
	CLOCK_START,
	emptyRecord,
	errorText,
	FORMAT,
	INITIAL_CWD,
	installDir,
	jsonText,
	LOAD_KEYS,
	objectText,
	ompModule,
	type Task,
	UUID_SEED,
	type WorkerMessage,
} from "./common.ts";
import { ScriptRun } from "./script.ts";
import { errorsText, fileState, listDir, type Omp, Paths, type SessionManagerLike, sha256, treeText, views } from "./views.ts";

const determinism = {
	clock: CLOCK_START,
	rng: UUID_SEED,
	reset() {
		this.clock = CLOCK_START;
		this.rng = UUID_SEED;
	},
};

function installDeterminism(): void {
	const RealDate = Date;
	const tick = () => determinism.clock++;
	class ReferenceDate extends RealDate {
		constructor(...args: unknown[]) {
			if (args.length === 0) super(tick());
			else super(...(args as [string]));
		}
		static now(): number {
			return tick();
		}
	}
	globalThis.Date = ReferenceDate as DateConstructor;

	// mulberry32: small, seedable, and good enough for ids.
	const next32 = (): number => {
		determinism.rng = (determinism.rng + 0x6d2b79f5) >>> 0;
		let t = determinism.rng;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return (t ^ (t >>> 14)) >>> 0;
	};
	const uuid = (version: number): string => {
		const bytes = Buffer.alloc(16);
		for (let i = 0; i < 4; i++) bytes.writeUInt32BE(next32(), i * 4);
		bytes[6] = (bytes[6] & 0x0f) | (version << 4);
		bytes[8] = (bytes[8] & 0x3f) | 0x80;
		const h = bytes.toString("hex");
		return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
	};
	nodeCrypto.randomUUID = (() => uuid(4)) as typeof nodeCrypto.randomUUID;
	globalThis.crypto.randomUUID = (() => uuid(4)) as typeof globalThis.crypto.randomUUID;
	(Bun as unknown as { randomUUIDv7: () => string }).randomUUIDv7 = () => uuid(7);
}

class Worker {
	private root = process.env.OMP_REFERENCE_ROOT ?? os.tmpdir();

	constructor(
		private readonly omp: Omp,
		private readonly deterministic: boolean,
		private readonly keepTmp: boolean,
	) {}

	private paths(tmp: string, file: string | null, sessions: string): Paths {
		const pairs: [string, string][] = [];
		if (file) pairs.push([file, "<FILE>"]);
		pairs.push([sessions, "<SESSIONS>"], [tmp, "<TMP>"], [this.root, "<ORACLE_TMP>"]);
		return new Paths(pairs);
	}

	async handle(task: Task, send: (m: WorkerMessage) => void): Promise<void> {
		const tmp = fs.mkdtempSync(path.join(this.root, `${task.kind}-`));
		if (this.deterministic) determinism.reset();
		try {
			const record =
				task.kind === "load" ? await this.load(task, tmp, send) : await this.run(task, tmp, send);
			send({ type: "done", index: task.index, record });
		} finally {
			if (!this.keepTmp) fs.rmSync(tmp, { recursive: true, force: true });
		}
	}

	private async load(task: Task, tmp: string, send: (m: WorkerMessage) => void): Promise<string> {
		const sessions = path.join(tmp, "sessions");
		const copy = path.join(sessions, "session.jsonl");
		const probe = path.join(tmp, "probe.jsonl");
		const paths = this.paths(tmp, copy, sessions);
		const errors = new Map<string, string>();
		const head: [string, string][] = [
			["oracle", jsonText(FORMAT)],
			["kind", jsonText("load")],
			["file", jsonText(task.file)],
		];
		let input: Buffer;
		try {
			input = fs.readFileSync(task.file);
		} catch (err) {
			return paths.text(emptyRecord("load", task.file, errorText(err), "read"));
		}
		fs.mkdirSync(sessions);
		fs.writeFileSync(copy, input);
		fs.writeFileSync(probe, input);
		const body = new Map<string, string>();
		body.set("input", jsonText({ size: input.length, sha256: sha256(input) }));
		try {
			const r = await this.omp.loadSessionFile(probe);
			body.set(
				"loader",
				jsonText({
					entry_count: r.entries.length,
					malformed_records: r.malformedRecords,
					invalid_header: r.invalidHeader,
					title_slot: r.titleSlot ?? null,
					source_size: r.sourceSize ?? null,
				}),
			);
		} catch (err) {
			errors.set("loader", errorText(err));
			body.set("loader", "null");
		}
		let error: string | null = null;
		let sm: SessionManagerLike | null = null;
		try {
			sm = await this.omp.SessionManager.open(copy, undefined, undefined, {
				suppressBreadcrumb: true,
				initialCwd: INITIAL_CWD,
			});
		} catch (err) {
			error = errorText(err);
		}
		body.set("after_open", jsonText(fileState(copy, input, paths)));
		const finish = (): string => {
			const pairs: [string, string][] = [
				...head,
				["error", jsonText(error)],
				["error_stage", jsonText(error === null ? null : "open")],
				["view_errors", errorsText(errors)],
			];
			for (const k of LOAD_KEYS) pairs.push([k, body.get(k) ?? "null"]);
			return paths.text(objectText(pairs));
		};
		if (sm === null) {
			body.set("session_dir_files", jsonText(listDir(sessions)));
			return finish();
		}
		for (const [k, v] of views(sm, errors)) body.set(k, v);
		try {
			sm.flushSync();
		} catch (err) {
			errors.set("flush", errorText(err));
		}
		try {
			await sm.close();
		} catch (err) {
			errors.set("close", errorText(err));
		}
		body.set("after_flush", jsonText(fileState(copy, input, paths)));
		body.set("session_dir_files", jsonText(listDir(sessions)));
		send({ type: "partial", index: task.index, stage: "tree", record: finish() });
		body.set("tree", treeText(sm, errors));
		return finish();
	}

	private async run(task: Task, tmp: string, send: (m: WorkerMessage) => void): Promise<string> {
		const sessions = path.join(tmp, "sessions");
		fs.mkdirSync(sessions);
		const paths = this.paths(tmp, null, sessions);
		let script: Record<string, unknown>;
		try {
			script = JSON.parse(fs.readFileSync(task.file, "utf8"));
			if (script === null || typeof script !== "object" || !Array.isArray(script.ops)) {
				throw new Error("script must be an object with an `ops` array");
			}
		} catch (err) {
			return paths.text(emptyRecord("run", task.file, errorText(err), "script"));
		}
		const runner = new ScriptRun(this.omp, script, path.dirname(task.file), tmp, sessions);
		return paths.text(await runner.execute(task, send, paths));
	}
}

export async function workerMain(argv: string[]): Promise<void> {
	const realClock = argv.includes("--real-clock");
	const keepTmp = argv.includes("--keep-tmp");
	const blobsAt = argv.indexOf("--blobs");
	const send = (m: WorkerMessage) => process.send!(m);
	if (!realClock) installDeterminism();
	const dir = installDir();
	let omp: Omp;
	try {
		const sm = await import(ompModule(dir, "pi-coding-agent/src/session/session-manager.ts"));
		const loader = await import(ompModule(dir, "pi-coding-agent/src/session/session-loader.ts"));
		omp = { SessionManager: sm.SessionManager, loadSessionFile: loader.loadSessionFile };
		if (blobsAt >= 0) {
			const dirs = await import(ompModule(dir, "pi-utils/src/dirs.ts"));
			const store: string = dirs.getBlobsDir();
			fs.mkdirSync(store, { recursive: true });
			const from = argv[blobsAt + 1];
			for (const name of fs.readdirSync(from)) {
				const src = path.join(from, name);
				if (fs.statSync(src).isFile()) fs.copyFileSync(src, path.join(store, name));
			}
		}
	} catch (err) {
		send({ type: "fatal", error: errorText(err) });
		process.exit(3);
	}
	const worker = new Worker(omp, !realClock, keepTmp);
	// One input at a time: omp's module state must not interleave.
	let queue = Promise.resolve();
	process.on("message", (task: Task) => {
		queue = queue.then(() =>
			worker.handle(task, send).catch(err => {
				send({ type: "done", index: task.index, record: emptyRecord(task.kind, task.file, `OracleCrash: ${errorText(err)}`, "oracle") });
			}),
		);
	});
	process.on("disconnect", () => process.exit(0));
	send({ type: "ready" });
}
