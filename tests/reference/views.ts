// What omp shows of one session, as record fields: the views shared by
// `load`, `run` and the `snapshot` op, and the file states around them.

import nodeCrypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

import { errorText, type Json, jsonText, objectText } from "./common.ts";

// Replaces the temporary paths of one input by placeholders, longest first.
export class Paths {
	constructor(private readonly pairs: [string, string][]) {}

	text(s: string): string {
		for (const [from, to] of this.pairs) s = s.split(from).join(to);
		return s;
	}

	bytes(buf: Buffer): Buffer {
		for (const [from, to] of this.pairs) {
			const needle = Buffer.from(from);
			if (buf.indexOf(needle) < 0) continue;
			const parts: Buffer[] = [];
			let at = 0;
			for (let i = buf.indexOf(needle); i >= 0; i = buf.indexOf(needle, at)) {
				parts.push(buf.subarray(at, i), Buffer.from(to));
				at = i + needle.length;
			}
			parts.push(buf.subarray(at));
			buf = Buffer.concat(parts);
		}
		return buf;
	}
}

export function sha256(buf: Buffer): string {
	return nodeCrypto.createHash("sha256").update(buf).digest("hex");
}

export function readMaybe(file: string): Buffer | null {
	try {
		return fs.readFileSync(file);
	} catch {
		return null;
	}
}

export function fileState(file: string, input: Buffer, paths: Paths): Json {
	const now = readMaybe(file);
	if (now === null) return { exists: false, changed: true, size: null, sha256: null, b64: null };
	if (now.equals(input)) return { exists: true, changed: false, size: now.length, sha256: sha256(now), b64: null };
	const shown = paths.bytes(now);
	return { exists: true, changed: true, size: shown.length, sha256: sha256(shown), b64: shown.toString("base64") };
}

export function listDir(dir: string): string[] | null {
	const out: string[] = [];
	const walk = (rel: string) => {
		for (const ent of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
			const p = rel ? `${rel}/${ent.name}` : ent.name;
			if (ent.isDirectory()) {
				out.push(`${p}/`);
				walk(p);
			} else {
				out.push(p);
			}
		}
	};
	try {
		walk("");
	} catch {
		return null;
	}
	return out.sort();
}

export type SessionManagerLike = Record<string, (...args: unknown[]) => unknown>;

export interface Omp {
	SessionManager: Record<string, unknown> & {
		open(...args: unknown[]): Promise<SessionManagerLike>;
		create(...args: unknown[]): SessionManagerLike;
		inMemory(...args: unknown[]): SessionManagerLike;
	};
	loadSessionFile(file: string): Promise<{
		entries: unknown[];
		malformedRecords: number;
		invalidHeader: boolean;
		titleSlot?: unknown;
		sourceSize?: number | null;
	}>;
}

export function idOf(entry: unknown): Json {
	if (entry === null || typeof entry !== "object") return null;
	const id = (entry as { id?: unknown }).id;
	return id === undefined ? null : id;
}

export interface TreeNode {
	entry: unknown;
	children: TreeNode[];
	label?: unknown;
}

export function flattenTree(roots: TreeNode[], entries: unknown[]): Json[] {
	const indexOf = new Map<unknown, number>();
	entries.forEach((e, i) => {
		if (!indexOf.has(e)) indexOf.set(e, i);
	});
	const out: Json[] = [];
	const stack: [TreeNode, number][] = [];
	for (let i = roots.length - 1; i >= 0; i--) stack.push([roots[i], 0]);
	while (stack.length > 0) {
		const [node, depth] = stack.pop()!;
		const item: Record<string, Json> = { id: idOf(node.entry), index: indexOf.get(node.entry) ?? null, depth };
		if (node.label !== undefined) item.label = node.label;
		out.push(item);
		for (let i = node.children.length - 1; i >= 0; i--) stack.push([node.children[i], depth + 1]);
	}
	return out;
}

// The views shared by `load`, `run` and the `snapshot` op, each as JSON text
// taken at once (omp may change its objects later, e.g. on flush).
export function views(sm: SessionManagerLike, errors: Map<string, string>): Map<string, string> {
	const out = new Map<string, string>();
	let entries: unknown[] | null = null;
	const view = (name: string, f: () => Json) => {
		try {
			out.set(name, jsonText(f()));
		} catch (err) {
			errors.set(name, errorText(err));
			out.set(name, "null");
		}
	};
	view("header", () => sm.getHeader());
	view("session_name", () => sm.getSessionName() ?? null);
	view("entries", () => {
		entries = sm.getEntries() as unknown[];
		return entries;
	});
	view("leaf_id", () => sm.getLeafId() ?? null);
	view("branch", () => (sm.getBranch() as unknown[]).map(idOf));
	view("context", () => sm.buildSessionContext());
	view("transcript", () => sm.buildSessionContext({ transcript: true }));
	view("labels", () => {
		const labels: Record<string, Json> = {};
		for (const e of entries ?? (sm.getEntries() as unknown[])) {
			if (e === null || typeof e !== "object" || (e as { type?: unknown }).type !== "label") continue;
			const target = (e as { targetId?: unknown }).targetId;
			const label = sm.getLabel(target);
			if (label !== undefined) labels[String(target)] = label;
		}
		return labels;
	});
	view("children", () => {
		const seen = new Set<unknown>();
		const out: Json[] = [];
		for (const e of entries ?? (sm.getEntries() as unknown[])) {
			const parent = e === null || typeof e !== "object" ? undefined : (e as { parentId?: unknown }).parentId;
			if (seen.has(parent)) continue;
			seen.add(parent);
			out.push({
				parent: parent === undefined ? { $undefined: true } : parent,
				children: (sm.getChildren(parent) as unknown[]).map(idOf),
			});
		}
		return out;
	});
	view("usage", () => sm.getUsageStatistics());
	return out;
}

export function treeText(sm: SessionManagerLike, errors: Map<string, string>): string {
	try {
		const entries = sm.getEntries() as unknown[];
		return jsonText(flattenTree(sm.getTree() as TreeNode[], entries));
	} catch (err) {
		errors.set("tree", errorText(err));
		return "null";
	}
}

export function errorsText(errors: Map<string, string>): string {
	return objectText([...errors].map(([k, v]) => [k, jsonText(v)]));
}
