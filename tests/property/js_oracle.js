// Differential oracle for tests/property/test_codec_node.py. Runs under node (JSON.stringify /
// JSON.parse) and under bun (additionally Bun.JSONL.parseChunk and omp's lenient loop over it).
//
// Protocol: one request per stdin line, one JSON response per stdout line.
//   {"op": "stringify", "values": [TAGGED...]}  -> [string | null, ...]
//   {"op": "jsonl", "texts": [string...]}        -> [{chunk, loop, parse}, ...]
// TAGGED encodes a JS value exactly (JSON text alone cannot carry undefined, -0, NaN, big integers
// or the intended property order): null / true / false as themselves, ["s", str], ["i", decimal],
// ["f", repr | "NaN" | "Infinity" | "-Infinity"], ["u"] (undefined), ["a", [TAGGED...]],
// ["o", [[key, TAGGED], ...]] (properties created in that order).
"use strict";
const readline = require("readline");

function decode(t) {
  if (t === null || typeof t === "boolean") return t;
  switch (t[0]) {
    case "s":
      return t[1];
    case "i":
    case "f":
      return Number(t[1]); // correctly rounded, like the JSON.parse omp would have done
    case "u":
      return undefined;
    case "a":
      return t[1].map(decode);
    case "o": {
      const o = {};
      for (const [k, v] of t[1]) {
        // defineProperty: a plain assignment to "__proto__" would set the prototype instead.
        Object.defineProperty(o, k, { value: decode(v), enumerable: true, writable: true, configurable: true });
      }
      return o;
    }
    default:
      throw new Error("bad tag " + JSON.stringify(t));
  }
}

// omp's skip-on-error loop (spec S1.4.3) over Bun.JSONL.parseChunk. Malformed spans are reported in
// UTF-16 offsets of the whole text: [read, next LF) after an error, [open value, end) when incomplete.
function lenient(text) {
  const records = [];
  const malformed = [];
  let base = 0;
  let buffer = text;
  while (buffer.length > 0) {
    const r = Bun.JSONL.parseChunk(buffer);
    for (const v of r.values) records.push(v);
    if (r.error) {
      const nl = buffer.indexOf("\n", r.read);
      const end = nl === -1 ? buffer.length : nl;
      if (buffer.substring(r.read, end).trim().length > 0) malformed.push([base + r.read, base + end]);
      if (nl === -1) break;
      base += nl + 1;
      buffer = buffer.substring(nl + 1);
      continue;
    }
    if (r.read === 0) {
      if (buffer.trim().length > 0) {
        const lead = /^[ \t\r\n]*/.exec(buffer)[0].length;
        malformed.push([base + lead, base + buffer.length]);
      }
      break;
    }
    base += r.read;
    buffer = buffer.substring(r.read);
    if (r.done) break;
  }
  return { records: JSON.stringify(records), malformed };
}

function jsonl(text) {
  const r = Bun.JSONL.parseChunk(text);
  let parse;
  try {
    parse = { ok: JSON.stringify(JSON.parse(text)) };
  } catch (e) {
    parse = { error: e.name };
  }
  return {
    chunk: [JSON.stringify(r.values), r.read, r.done, r.error !== null && r.error !== undefined],
    loop: lenient(text),
    parse,
  };
}

function handle(req) {
  if (req.op === "stringify") {
    return req.values.map((t) => {
      const s = JSON.stringify(decode(t));
      return s === undefined ? null : s;
    });
  }
  if (req.op === "jsonl") {
    if (typeof Bun === "undefined") throw new Error("jsonl needs bun");
    return req.texts.map(jsonl);
  }
  throw new Error("unknown op " + req.op);
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
rl.on("line", (line) => {
  let out;
  try {
    out = { ok: handle(JSON.parse(line)) };
  } catch (e) {
    out = { fail: String(e && e.stack ? e.stack : e) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
});
