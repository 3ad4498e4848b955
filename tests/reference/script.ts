// `run`: one script of SessionManager calls against omp (docs/reference.md).

import * as fs from "node:fs";
import * as path from "node:path";

import {
	DEFAULT_RUN_CWD,
	emptyRecord,
	errorText,
	FORMAT,
	jsonText,
	objectText,
	type Task,
	VIEW_KEYS,
	type WorkerMessage,
} from "./common.ts";
import {
	errorsText,
	flattenTree,
	listDir,
	type Omp,
	type Paths,
	readMaybe,
	type SessionManagerLike,
	type TreeNode,
	treeText,
	views,
} from "./views.ts";

// The positional arguments of each op, in omp's parameter order.
export const OP_ARGS: Record<string, string[]> = {
	appendMessage: ["message"],
	appendMessageToBranch: ["message", "parentId"],
	appendModelChange: ["model", "role", "resolvedModelIsFallback"],
	appendThinkingLevelChange: ["thinkingLevel", "configured"],
	appendServiceTierChange: ["serviceTier"],
	appendModeChange: ["mode", "data"],
	appendSessionInit: ["init"],
	appendCompaction: ["summary", "shortSummary", "firstKeptEntryId", "tokensBefore", "options"],
	appendResetBoundary: [],
	appendCustomEntry: ["customType", "data"],
	appendCustomMessageEntry: ["customType", "content", "display", "details", "attribution", "timestamp"],
	appendLabelChange: ["targetId", "label"],
	appendTtsrInjection: ["ruleNames"],
	appendCredentialPin: ["provider", "hash"],
	branch: ["entryId"],
	branchWithSummary: ["entryId", "summary", "details", "fromExtension"],
	resetLeaf: [],
	setSessionName: ["name", "source", "trigger"],
	createBranchedSession: ["leafId"],
	fork: [],
	newSession: ["options"],
	flush: [],
	flushSync: [],
	close: [],
	ensureOnDisk: [],
	rewriteEntries: [],
	getLeafId: [],
	getEntry: ["id"],
	getChildren: ["parentId"],
	getLabel: ["id"],
	getBranch: ["fromId"],
	getHeader: [],
	getEntries: [],
	getSessionName: [],
	getSessionFile: [],
	buildSessionContext: ["options"],
};

// Values under these keys are data for omp, never references.
const PAYLOAD_KEYS = new Set(["message", "content", "data", "details", "init", "serviceTier"]);

export class ScriptRun {
	private sm: SessionManagerLike | null = null;
	private readonly refs = new Map<string, unknown>();
	private readonly files: string[] = [];
	private readonly cwd: string;

	constructor(
		private readonly omp: Omp,
		private readonly script: Record<string, unknown>,
		private readonly scriptDir: string,
		tmp: string,
		private readonly sessions: string,
	) {
		const cwd = typeof script.cwd === "string" ? script.cwd : DEFAULT_RUN_CWD;
		this.cwd = cwd.split("{TMP}").join(tmp);
	}

	private noteFile(file: unknown): void {
		if (typeof file === "string" && !this.files.includes(file)) this.files.push(file);
	}

	private resolve(value: unknown): unknown {
		if (typeof value === "string") {
			if (value.startsWith("$$")) return value.slice(1);
			if (value.startsWith("$")) {
				const name = value.slice(1);
				if (!this.refs.has(name)) throw new Error(`unknown reference ${value}`);
				return this.refs.get(name);
			}
			return value;
		}
		if (Array.isArray(value)) return value.map(v => this.resolve(v));
		if (value !== null && typeof value === "object") {
			const out: Record<string, unknown> = {};
			for (const [k, v] of Object.entries(value)) out[k] = PAYLOAD_KEYS.has(k) ? v : this.resolve(v);
			return out;
		}
		return value;
	}

	private arg(op: Record<string, unknown>, key: string): unknown {
		if (!(key in op)) return undefined;
		return PAYLOAD_KEYS.has(key) ? op[key] : this.resolve(op[key]);
	}

	private positional(op: Record<string, unknown>, keys: string[]): unknown[] {
		const args = keys.map(k => this.arg(op, k));
		while (args.length > 0 && args[args.length - 1] === undefined) args.pop();
		return args;
	}

	private openOptions(): Record<string, unknown> {
		return { suppressBreadcrumb: true, initialCwd: this.cwd };
	}

	private async start(): Promise<void> {
		const SM = this.omp.SessionManager;
		if (this.script.create_cwd === true) fs.mkdirSync(this.cwd, { recursive: true });
		if (typeof this.script.from_file === "string") {
			const source = path.resolve(this.scriptDir, this.script.from_file);
			const copy = path.join(this.sessions, path.basename(source));
			fs.copyFileSync(source, copy);
			this.sm = await SM.open(copy, this.sessions, undefined, this.openOptions());
		} else if (this.script.in_memory === true) {
			this.sm = SM.inMemory(this.cwd);
		} else {
			this.sm = SM.create(this.cwd, this.sessions);
		}
		this.noteFile(this.sm.getSessionFile());
	}

	private async step(op: Record<string, unknown>): Promise<unknown> {
		const name = op.op;
		const sm = this.sm!;
		switch (name) {
			case "snapshot": {
				const errors = new Map<string, string>();
				const v = views(sm, errors);
				const tree = treeText(sm, errors);
				const pairs: [string, string][] = [["view_errors", errorsText(errors)]];
				for (const k of VIEW_KEYS) pairs.push([k, v.get(k) ?? "null"]);
				pairs.push(["tree", tree]);
				return JSON.parse(objectText(pairs));
			}
			case "getTree":
				return flattenTree(sm.getTree() as TreeNode[], sm.getEntries() as unknown[]);
			case "reopen": {
				await sm.close();
				const file = sm.getSessionFile();
				if (typeof file !== "string") throw new Error("reopen: session has no file");
				this.sm = await this.omp.SessionManager.open(file, this.sessions, undefined, this.openOptions());
				const reopened = this.sm.getSessionFile();
				this.noteFile(reopened);
				return reopened;
			}
			case "fork": {
				const result = (await sm.fork()) as { oldSessionFile?: string; newSessionFile?: string } | undefined;
				this.noteFile(result?.oldSessionFile);
				this.noteFile(result?.newSessionFile);
				return result;
			}
			case "call": {
				const method = String(op.method);
				const args = (this.resolve(op.args ?? []) as unknown[]) ?? [];
				const f = sm[method];
				if (typeof f !== "function") throw new Error(`call: no SessionManager method ${method}`);
				return await f.apply(sm, args);
			}
			case "static": {
				const method = String(op.method);
				const args = (this.resolve(op.args ?? []) as unknown[]) ?? [];
				const SM = this.omp.SessionManager as Record<string, unknown>;
				const f = SM[method];
				if (typeof f !== "function") throw new Error(`static: no SessionManager static ${method}`);
				const result = await (f as (...a: unknown[]) => unknown).apply(SM, args);
				if (result instanceof (SM as unknown as new () => object)) {
					this.sm = result as SessionManagerLike;
					const file = this.sm.getSessionFile();
					this.noteFile(file);
					return file;
				}
				return result;
			}
		}
		const keys = OP_ARGS[String(name)];
		if (keys === undefined) throw new Error(`unknown op ${String(name)}`);
		const result = await (sm[String(name)] as (...a: unknown[]) => unknown).apply(sm, this.positional(op, keys));
		if (name === "createBranchedSession" || name === "newSession") this.noteFile(result);
		return result;
	}

	async execute(task: Task, send: (m: WorkerMessage) => void, paths: Paths): Promise<string> {
		const head: [string, string][] = [
			["oracle", jsonText(FORMAT)],
			["kind", jsonText("run")],
			["file", jsonText(task.file)],
		];
		try {
			await this.start();
		} catch (err) {
			const rec = JSON.parse(emptyRecord("run", task.file, errorText(err), "create"));
			rec.session_dir_files = listDir(this.sessions);
			return JSON.stringify(rec);
		}
		const steps: string[] = [];
		const ops = this.script.ops as unknown[];
		for (let index = 0; index < ops.length; index++) {
			const raw = ops[index];
			const isObject = raw !== null && typeof raw === "object";
			const op = (isObject ? raw : {}) as Record<string, unknown>;
			let result: unknown;
			let error: string | null = null;
			try {
				if (typeof op.op !== "string") throw new Error("op must be an object with a string `op`");
				result = await this.step(op);
			} catch (err) {
				error = errorText(err);
			}
			// a ref holds what the step recorded: an undefined result is null, as in `result`
			if (error === null && typeof op.as === "string") this.refs.set(op.as, result === undefined ? null : result);
			this.noteFile(this.sm?.getSessionFile());
			// An object without `op` gets no "op" key; anything else gets null.
			const step: [string, string][] = [["index", jsonText(index)]];
			if (!isObject) step.push(["op", "null"]);
			else if (op.op !== undefined) step.push(["op", jsonText(op.op)]);
			step.push(["result", jsonText(result)], ["error", jsonText(error)]);
			steps.push(objectText(step));
			if (error !== null && this.script.stop_on_error === true) break;
		}
		const sm = this.sm!;
		const errors = new Map<string, string>();
		const v = views(sm, errors);
		if (this.script.close !== false) {
			try {
				await sm.close();
			} catch (err) {
				errors.set("close", errorText(err));
			}
		}
		let sessionFile: unknown = null;
		try {
			sessionFile = sm.getSessionFile() ?? null;
		} catch {
			sessionFile = null;
		}
		this.noteFile(sessionFile);
		const files = this.files.map(file => {
			const bytes = readMaybe(file);
			if (bytes === null) return { path: file, exists: false, size: null, text: null, b64: null };
			let valid = true;
			try {
				new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
			} catch {
				valid = false;
			}
			return {
				path: file,
				exists: true,
				size: bytes.length,
				text: bytes.toString("utf8"),
				b64: valid ? null : bytes.toString("base64"),
			};
		});
		const body = new Map<string, string>();
		body.set("steps", `[${steps.join(",")}]`);
		body.set("refs", objectText([...this.refs].map(([k, val]) => [k, jsonText(val)])));
		for (const [k, val] of v) body.set(k, val);
		body.set("session_file", jsonText(sessionFile));
		body.set("files", jsonText(files));
		body.set("session_dir_files", jsonText(listDir(this.sessions)));
		const finish = () => {
			const pairs: [string, string][] = [
				...head,
				["error", "null"],
				["error_stage", "null"],
				["view_errors", errorsText(errors)],
			];
			for (const k of ["steps", "refs", ...VIEW_KEYS, "tree", "session_file", "files", "session_dir_files"]) {
				pairs.push([k, body.get(k) ?? "null"]);
			}
			return paths.text(objectText(pairs));
		};
		send({ type: "partial", index: task.index, stage: "tree", record: finish() });
		body.set("tree", treeText(sm, errors));
		return finish();
	}
}
