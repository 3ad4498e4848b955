// What the reference runner's processes share: the record format's fixed
// parts and the supervisor <-> worker protocol.

import * as path from "node:path";

export const FORMAT = 1;
export const PROG = "omp-reference";
export const INITIAL_CWD = "/oracle/cwd";
export const DEFAULT_RUN_CWD = "/home/dev/project";
export const CLOCK_START = Date.UTC(2026, 0, 1);
// Any constant seed makes runs reproducible; this one also gives the ids that
// the records of the shared oracle hold, so old records compare byte for byte.
export const UUID_SEED = 0x9e3779b9;

export type Json = unknown;
export type Kind = "load" | "run";

export interface Task {
	index: number;
	kind: Kind;
	file: string;
}

// Worker -> supervisor messages. `partial` is the record so far, sent just
// before the step that may hang, so a timeout there still yields a record.
export type WorkerMessage =
	| { type: "ready" }
	| { type: "fatal"; error: string }
	| { type: "partial"; index: number; stage: string; record: string }
	| { type: "done"; index: number; record: string };

export function installDir(): string {
	const dir = process.env.OMP_REFERENCE_DIR;
	if (!dir) {
		process.stderr.write(`${PROG}: OMP_REFERENCE_DIR is not set (run me through tests/reference/omp-reference)\n`);
		process.exit(2);
	}
	return dir;
}

export function ompModule(dir: string, rel: string): string {
	return path.join(dir, "node_modules", "@oh-my-pi", rel);
}

export function errorText(err: unknown): string {
	if (err instanceof Error || (typeof err === "object" && err !== null && "message" in err)) {
		const e = err as { name?: unknown; message?: unknown };
		return `${String(e.name ?? "Error")}: ${String(e.message)}`;
	}
	return String(err);
}

export function jsonText(value: Json): string {
	// undefined (and functions) have no JSON; the record format says null.
	return JSON.stringify(value) ?? "null";
}

export function objectText(pairs: [string, string][]): string {
	return `{${pairs.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`;
}

export function emptyRecord(kind: Kind, file: string, error: string, stage: string): string {
	const pairs: [string, string][] = [
		["oracle", jsonText(FORMAT)],
		["kind", jsonText(kind)],
		["file", jsonText(file)],
		["error", jsonText(error)],
		["error_stage", jsonText(stage)],
		["view_errors", "{}"],
	];
	const rest =
		kind === "load"
			? LOAD_KEYS
			: ["steps", "refs", ...VIEW_KEYS, "tree", "session_file", "files", "session_dir_files"];
	// A run that never started still has (empty) steps, refs and files.
	const empty: Record<string, string> = kind === "run" ? { steps: "[]", refs: "{}", files: "[]" } : {};
	for (const k of rest) pairs.push([k, empty[k] ?? "null"]);
	return objectText(pairs);
}

export const VIEW_KEYS = [
	"header",
	"session_name",
	"entries",
	"leaf_id",
	"branch",
	"context",
	"transcript",
	"labels",
	"children",
	"usage",
];
export const LOAD_KEYS = ["input", "loader", "after_open", ...VIEW_KEYS, "tree", "after_flush", "session_dir_files"];
