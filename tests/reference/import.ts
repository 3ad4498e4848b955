// `omp-reference import`: what omp's own foreign-session importer makes of
// Claude Code and Codex sessions (docs/reference.md, "import").
//
//   import claude|codex --home DIR --agent-dir DIR [--cwd DIR] [--claude-config-dir DIR]
//       omp's createForeignSessionStore(source).list(), then persistForeignSession()
//       of every listed session with fallbackCwd = the cwd (as `omp --from-claude`
//       does). Prints one `import-list` line, then one `import` line per session:
//       its info, omp's error or the file omp wrote (path under the sessions root,
//       bytes as base64) and that file's views as omp loads it.
//       --no-views: neither bytes nor views (for timing omp's importer alone).
//   import views --home DIR --agent-dir DIR FILE...
//       the views (header, entries, context, ...) omp loads from each FILE.
//
// Foreign folders are found as omp finds them: HOME/.claude (or
// --claude-config-dir as CLAUDE_CONFIG_DIR) and HOME/.codex. Bun reads HOME
// once at start-up, so the work runs in a child bun started with HOME, the
// agent dir (PI_CODING_AGENT_DIR), TZ=UTC and the cwd set, and without the
// variables that would point omp elsewhere. Clock and ids are the real ones:
// omp draws the session id, its time and the ids of the title and import
// entries at random.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import { errorText, FORMAT, installDir, jsonText, objectText, ompModule } from "./common.ts";
import { errorsText, type SessionManagerLike, views } from "./views.ts";

const USAGE =
	"usage: omp-reference import claude|codex|views --home DIR --agent-dir DIR [--cwd DIR] [--claude-config-dir DIR] [--no-views] [FILE...]";

interface Options {
	mode: "claude" | "codex" | "views";
	home: string;
	agentDir: string;
	cwd: string;
	claudeConfigDir: string | null;
	files: string[];
	child: boolean;
	noViews: boolean;
}

function usage(message: string): never {
	process.stderr.write(`omp-reference import: ${message}\n${USAGE}\n`);
	process.exit(2);
}

function parse(argv: string[]): Options {
	const mode = argv[0];
	if (mode !== "claude" && mode !== "codex" && mode !== "views") usage(`unknown mode ${JSON.stringify(mode ?? "")}`);
	const opts: Options = { mode, home: "", agentDir: "", cwd: process.cwd(), claudeConfigDir: null, files: [], child: false, noViews: false };
	for (let i = 1; i < argv.length; i++) {
		const a = argv[i];
		const value = () => {
			if (i + 1 >= argv.length) usage(`${a} needs a value`);
			return path.resolve(argv[++i]);
		};
		if (a === "--home") opts.home = value();
		else if (a === "--agent-dir") opts.agentDir = value();
		else if (a === "--cwd") opts.cwd = value();
		else if (a === "--claude-config-dir") opts.claudeConfigDir = value();
		else if (a === "--child") opts.child = true;
		else if (a === "--no-views") opts.noViews = true; // timing runs: only list + persist
		else if (a.startsWith("-")) usage(`unknown option ${a}`);
		else opts.files.push(path.resolve(a));
	}
	if (!opts.home || !opts.agentDir) usage("--home and --agent-dir are required");
	if (opts.mode !== "views" && opts.files.length > 0) usage("FILE arguments go with the views mode only");
	return opts;
}

// Re-run this file under the same bun with the isolated environment.
function spawnChild(opts: Options, argv: string[]): number {
	const env: Record<string, string> = {};
	for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
	for (const k of [
		"XDG_DATA_HOME",
		"XDG_STATE_HOME",
		"XDG_CACHE_HOME",
		"XDG_CONFIG_HOME",
		"OMP_PROFILE",
		"PI_PROFILE",
		"PI_CONFIG_DIR",
		"PI_CODING_AGENT_SESSION_DIR",
		"CLAUDE_CONFIG_DIR",
		"CODEX_HOME",
	])
		delete env[k];
	env.HOME = opts.home;
	env.PI_CODING_AGENT_DIR = opts.agentDir;
	env.TZ = "UTC";
	if (opts.claudeConfigDir) env.CLAUDE_CONFIG_DIR = opts.claudeConfigDir;
	fs.mkdirSync(opts.agentDir, { recursive: true });
	const child = Bun.spawnSync([process.execPath, import.meta.path, ...argv, "--child"], {
		cwd: opts.cwd,
		env,
		stdin: "ignore",
		stdout: "inherit",
		stderr: "inherit",
	});
	return child.exitCode ?? 3;
}

function viewsOf(sm: SessionManagerLike): string {
	const errors = new Map<string, string>();
	const pairs: [string, string][] = [...views(sm, errors)];
	pairs.push(["view_errors", errorsText(errors)]);
	return objectText(pairs);
}

async function openViews(SessionManager: { open(...args: unknown[]): Promise<SessionManagerLike> }, file: string): Promise<string> {
	// A copy: opening may rewrite a file omp would migrate, and inputs are never touched.
	const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "import-views-"));
	try {
		const copy = path.join(tmp, path.basename(file));
		fs.copyFileSync(file, copy);
		const sm = await SessionManager.open(copy, tmp, undefined, { suppressBreadcrumb: true, initialCwd: "/oracle/cwd" });
		try {
			return viewsOf(sm);
		} finally {
			await (sm.close as () => Promise<void>)();
		}
	} finally {
		fs.rmSync(tmp, { recursive: true, force: true });
	}
}

function infoJson(info: Record<string, unknown>): Record<string, unknown> {
	const time = (d: unknown) => (d instanceof Date ? d.getTime() : null);
	return {
		source: info.source,
		id: info.id,
		path: info.path,
		cwd: info.cwd,
		title: info.title ?? null,
		created: time(info.created),
		modified: time(info.modified),
		firstMessage: info.firstMessage ?? null,
		messageCount: info.messageCount ?? null,
	};
}

async function child(opts: Options): Promise<void> {
	const dir = installDir();
	const sm = await import(ompModule(dir, "pi-coding-agent/src/session/session-manager.ts"));
	const out = (line: string) => process.stdout.write(`${line}\n`);
	if (opts.mode === "views") {
		for (const file of opts.files) {
			let record: string;
			try {
				record = objectText([
					["oracle", jsonText(FORMAT)],
					["kind", jsonText("import-views")],
					["file", jsonText(file)],
					["error", "null"],
					["views", await openViews(sm.SessionManager, file)],
				]);
			} catch (err) {
				record = objectText([
					["oracle", jsonText(FORMAT)],
					["kind", jsonText("import-views")],
					["file", jsonText(file)],
					["error", jsonText(errorText(err))],
					["views", "null"],
				]);
			}
			out(record);
		}
		return;
	}
	const foreign = await import(ompModule(dir, "pi-coding-agent/src/session/foreign-session-import.ts"));
	const dirs = await import(ompModule(dir, "pi-utils/src/dirs.ts"));
	const sessionsRoot: string = dirs.getSessionsDir();
	const store = foreign.createForeignSessionStore(opts.mode);
	let infos: Record<string, unknown>[] = [];
	let listError: string | null = null;
	try {
		infos = await store.list();
	} catch (err) {
		listError = errorText(err);
	}
	out(
		objectText([
			["oracle", jsonText(FORMAT)],
			["kind", jsonText("import-list")],
			["source", jsonText(opts.mode)],
			["error", jsonText(listError)],
			["sessions", jsonText(infos.map(infoJson))],
		]),
	);
	for (const info of infos) {
		let error: string | null = null;
		let file: string | null = null;
		let bytes: Buffer | null = null;
		let shown = "null";
		try {
			const imported = await foreign.persistForeignSession(store, info, {
				fallbackCwd: process.cwd(),
				suppressBreadcrumb: true,
			});
			file = imported.getSessionFile() ?? null;
			await imported.close();
			if (file && !opts.noViews) {
				bytes = fs.readFileSync(file);
				shown = await openViews(sm.SessionManager, file);
			}
		} catch (err) {
			error = errorText(err);
		}
		out(
			objectText([
				["oracle", jsonText(FORMAT)],
				["kind", jsonText("import")],
				["info", jsonText(infoJson(info))],
				["error", jsonText(error)],
				["session_file", jsonText(file === null ? null : path.relative(sessionsRoot, file))],
				["b64", jsonText(bytes === null ? null : bytes.toString("base64"))],
				["views", shown],
			]),
		);
	}
}

const argv = process.argv.slice(2);
const opts = parse(argv);
if (opts.child) {
	await child(opts);
} else {
	process.exit(spawnChild(opts, argv));
}
