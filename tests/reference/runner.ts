// The omp-session reference runner: drives one installed omp (under its own
// bun) and prints, as JSON lines, what omp derives from session files (`load`)
// or from scripted SessionManager calls (`run`). Every value comes from omp;
// this file only isolates the environment, makes clock and ids reproducible,
// and serialises the results. The record format is documented in
// docs/reference.md.
//
// Started by tests/reference/omp-reference, which sets OMP_REFERENCE_DIR (the
// install) and OMP_REFERENCE_VERSION. One supervisor process hands inputs to
// worker processes (`runner.ts --worker`, see worker.ts) over IPC, so that a
// worker stuck inside omp (getTree() on some files never returns) can be
// killed. common.ts holds what both share, views.ts the record fields,
// script.ts the `run` ops.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import {
	emptyRecord,
	errorText,
	FORMAT,
	installDir,
	type Kind,
	ompModule,
	PROG,
	type Task,
	type WorkerMessage,
} from "./common.ts";

// stdout, in order and to the last byte: Bun.write resolves once everything is written
let output: Promise<unknown> = Promise.resolve();
function emit(text: string): void {
	output = output.then(() => Bun.write(Bun.stdout, text));
}

interface Options {
	kind: Kind;
	inputs: string[];
	blobs: string | null;
	jobs: number;
	timeout: number;
	realClock: boolean;
	keepTmp: boolean;
	timing: boolean;
	verbose: boolean;
}

class UsageError extends Error {}

// ---------------------------------------------------------------- supervisor

function parseArgs(argv: string[]): Options {
	const sub = argv[0];
	if (sub !== "load" && sub !== "run") throw new UsageError(`unknown command ${JSON.stringify(sub ?? "")}`);
	const opts: Options = {
		kind: sub,
		inputs: [],
		blobs: null,
		jobs: 1,
		timeout: 20,
		realClock: false,
		keepTmp: false,
		timing: false,
		verbose: false,
	};
	const value = (i: number, name: string): string => {
		const v = argv[i + 1];
		if (v === undefined) throw new UsageError(`${name} needs a value`);
		return v;
	};
	for (let i = 1; i < argv.length; i++) {
		const arg = argv[i];
		switch (arg) {
			case "--list":
				// Its paths take the place of the option among the inputs.
				opts.inputs.push(...readList(value(i, arg)));
				i++;
				break;
			case "--blobs":
				opts.blobs = path.resolve(value(i, arg));
				i++;
				break;
			case "--jobs": {
				const n = Number(value(i, arg));
				if (!Number.isInteger(n) || n < 1) throw new UsageError("--jobs takes a whole number >= 1");
				opts.jobs = n;
				i++;
				break;
			}
			case "--timeout": {
				const s = Number(value(i, arg));
				if (!Number.isFinite(s) || s <= 0) throw new UsageError("--timeout takes a number of seconds > 0");
				opts.timeout = s;
				i++;
				break;
			}
			case "--real-clock":
				opts.realClock = true;
				break;
			case "--keep-tmp":
				opts.keepTmp = true;
				break;
			case "--timing":
				opts.timing = true;
				break;
			case "--verbose":
				opts.verbose = true;
				break;
			default:
				if (arg.startsWith("--")) throw new UsageError(`unknown option ${arg}`);
				opts.inputs.push(arg);
		}
	}
	if (opts.blobs !== null && !fs.statSync(opts.blobs, { throwIfNoEntry: false })?.isDirectory()) {
		throw new UsageError(`--blobs ${opts.blobs} is not a directory`);
	}
	opts.inputs = opts.inputs.map(p => path.resolve(p));
	return opts;
}

function readList(list: string): string[] {
	let text: string;
	try {
		text = fs.readFileSync(list, "utf8");
	} catch (err) {
		throw new UsageError(`cannot read --list ${list}: ${errorText(err)}`);
	}
	return text
		.split("\n")
		.map(line => line.trim())
		.filter(line => line !== "");
}

function workerEnv(root: string, dir: string): Record<string, string> {
	const env: Record<string, string> = {};
	for (const [k, v] of Object.entries(process.env)) {
		if (v !== undefined) env[k] = v;
	}
	for (const k of [
		"XDG_DATA_HOME",
		"XDG_STATE_HOME",
		"XDG_CACHE_HOME",
		"XDG_CONFIG_HOME",
		"OMP_PROFILE",
		"PI_PROFILE",
		"PI_CONFIG_DIR",
	]) {
		delete env[k];
	}
	const home = path.join(root, "home");
	env.HOME = home;
	env.PI_CODING_AGENT_DIR = path.join(home, ".omp", "agent");
	env.TZ = "UTC";
	env.BUN_RUNTIME_TRANSPILER_CACHE_PATH = path.join(dir, ".transpiler-cache");
	env.OMP_REFERENCE_ROOT = root;
	return env;
}

interface Slot {
	proc: ReturnType<typeof Bun.spawn> | null;
	ready: boolean;
	task: Task | null;
	partial: { stage: string; record: string } | null;
	timer: ReturnType<typeof setTimeout> | null;
	started: number;
}

async function supervise(opts: Options): Promise<number> {
	const dir = installDir();
	const base = process.env.OMP_REFERENCE_TMP || os.tmpdir();
	// The name's length matters: run records give the real byte size of
	// session files, and a child session holds its parent's path. 11
	// characters, like the shared oracle's "omp-oracle-", keep those sizes
	// comparable with records it printed.
	const root = fs.realpathSync(fs.mkdtempSync(path.join(base, "omp-reftmp-")));
	fs.mkdirSync(path.join(root, "home", ".omp", "agent"), { recursive: true });
	if (opts.keepTmp) process.stderr.write(`${PROG}: temporary directory ${root}\n`);
	const env = workerEnv(root, dir);
	const began = performance.now();
	const tasks: Task[] = opts.inputs.map((file, index) => ({ index, kind: opts.kind, file }));
	const results = new Map<number, string>();
	let nextTask = 0;
	let nextOut = 0;
	let fatal: string | null = null;
	let anyReady = false;
	// Workers restarted after a timeout or crash that die again before they
	// are ready; a few in a row mean omp no longer starts at all.
	let failedStarts = 0;

	const flushOut = () => {
		while (results.has(nextOut)) {
			emit(`${results.get(nextOut)}\n`);
			results.delete(nextOut);
			nextOut++;
		}
	};

	let finish: () => void = () => {};
	const finished = new Promise<void>(resolve => {
		finish = resolve;
	});

	const slots: Slot[] = [];
	// Every worker ever started: the temporary root is removed only after all
	// have exited, or a dying one could write into it again.
	const exits: Promise<unknown>[] = [];
	const complete = (slot: Slot, record: string) => {
		const task = slot.task!;
		if (slot.timer) clearTimeout(slot.timer);
		if (opts.timing) {
			const ms = performance.now() - slot.started;
			process.stderr.write(`${PROG}: timing ${String(Math.round(ms)).padStart(6)} ms ${task.file}\n`);
		}
		slot.task = null;
		slot.partial = null;
		slot.timer = null;
		results.set(task.index, record);
		flushOut();
	};

	const dispatch = (slot: Slot) => {
		if (!slot.ready || slot.task || !slot.proc) return;
		if (nextTask >= tasks.length) {
			slot.proc.kill();
			slot.proc = null;
			if (slots.every(s => s.proc === null)) finish();
			return;
		}
		const task = tasks[nextTask++];
		slot.task = task;
		slot.partial = null;
		slot.started = performance.now();
		slot.timer = setTimeout(() => onTimeout(slot), opts.timeout * 1000);
		slot.proc.send(task);
	};

	const failedRecord = (task: Task, error: string, slot: Slot): string => {
		if (slot.partial && slot.partial.stage === "tree") {
			const rec = JSON.parse(slot.partial.record);
			rec.tree = null;
			rec.view_errors.tree = `${error} (stuck in tree)`;
			return JSON.stringify(rec);
		}
		return emptyRecord(task.kind, task.file, error, "oracle");
	};

	const onTimeout = (slot: Slot) => {
		const task = slot.task;
		if (!task) return;
		const proc = slot.proc;
		slot.proc = null;
		slot.ready = false;
		complete(slot, failedRecord(task, `OracleTimeout: no result within ${opts.timeout}s`, slot));
		proc?.kill("SIGKILL");
		start(slot);
	};

	const start = (slot: Slot) => {
		if (nextTask >= tasks.length) {
			if (slots.every(s => s.proc === null && s.task === null)) finish();
			return;
		}
		const args = [process.execPath, import.meta.path, "--worker"];
		if (opts.realClock) args.push("--real-clock");
		if (opts.keepTmp) args.push("--keep-tmp");
		if (opts.blobs) args.push("--blobs", opts.blobs);
		const proc = Bun.spawn(args, {
			env,
			cwd: root,
			stdin: "ignore",
			stdout: opts.verbose ? "inherit" : "ignore",
			stderr: opts.verbose ? "inherit" : "ignore",
			serialization: "json",
			ipc(message: WorkerMessage) {
				if (slot.proc !== proc) return;
				switch (message.type) {
					case "ready":
						slot.ready = true;
						anyReady = true;
						failedStarts = 0;
						dispatch(slot);
						break;
					case "fatal":
						fatal = message.error;
						break;
					case "partial":
						slot.partial = { stage: message.stage, record: message.record };
						break;
					case "done":
						complete(slot, message.record);
						dispatch(slot);
						break;
				}
			},
			onExit(_p, code, signal) {
				if (slot.proc !== proc) return;
				slot.proc = null;
				slot.ready = false;
				const task = slot.task;
				if (task) {
					const why = signal ? `signal ${signal}` : `exit status ${code}`;
					complete(slot, failedRecord(task, `OracleCrash: worker died (${why})`, slot));
				} else if (!anyReady || ++failedStarts > 3) {
					// omp itself does not load (any more).
					fatal ??= `worker exited before it was ready (${signal ?? `exit status ${code}`})`;
					anyReady = false;
					finish();
					return;
				}
				start(slot);
			},
		});
		slot.proc = proc;
		exits.push(proc.exited);
	};

	const n = Math.max(1, Math.min(opts.jobs, tasks.length));
	if (tasks.length === 0) finish();
	for (let i = 0; i < n; i++) {
		const slot: Slot = { proc: null, ready: false, task: null, partial: null, timer: null, started: 0 };
		slots.push(slot);
	}
	for (const slot of slots) start(slot);
	await finished;
	for (const slot of slots) {
		if (slot.timer) clearTimeout(slot.timer);
		slot.proc?.kill("SIGKILL");
	}
	await Promise.all(exits);
	if (!opts.keepTmp) fs.rmSync(root, { recursive: true, force: true });
	if (opts.timing) {
		const ms = Math.round(performance.now() - began);
		process.stderr.write(`${PROG}: timing ${ms} ms for ${tasks.length} inputs (including worker start/stop)\n`);
	}
	if (fatal !== null && !anyReady) {
		process.stderr.write(`${PROG}: cannot start omp: ${fatal}\n`);
		return 3;
	}
	flushOut();
	return 0;
}

async function main(): Promise<number> {
	const argv = process.argv.slice(2);
	if (argv[0] === "--worker") {
		const { workerMain } = await import("./worker.ts");
		await workerMain(argv.slice(1));
		return -1;
	}
	if (argv[0] === "version") {
		const dir = installDir();
		const pkg = JSON.parse(fs.readFileSync(ompModule(dir, "pi-coding-agent/package.json"), "utf8"));
		emit(`${JSON.stringify({ oracle: FORMAT, omp: pkg.version, bun: Bun.version })}\n`);
		return 0;
	}
	let opts: Options;
	try {
		opts = parseArgs(argv);
	} catch (err) {
		if (err instanceof UsageError) {
			process.stderr.write(`${PROG}: ${err.message}\n`);
			process.stderr.write(`usage: ${PROG} [--omp VERSION] load|run [options] FILE... | version\n`);
			return 2;
		}
		throw err;
	}
	return supervise(opts);
}

const code = await main();
if (code >= 0) {
	// Every record written before exiting: records can be megabytes, and process.exit() with
	// stdout still buffered cut them short on a loaded machine.
	await output;
	process.exit(code);
}
