"""The HTML viewer's stylesheet, inlined into every export (export_html.py).

Kept as a Python constant rather than a .css package-data file because the package data in
pyproject.toml lists only py.typed and the samples: a module always ships with the wheel.
"""

from __future__ import annotations

from typing import Final

__all__ = ["VIEWER_CSS"]

VIEWER_CSS: Final = """\
:root { --bg: #fff; --fg: #1d2330; --muted: #6a7284; --line: #dde1e8; --panel: #f5f6f8;
  --accent: #2f6fde; --path: #e4edff; --sel: #c4d7ff; --user: #eef6ee; --err: #fdecec;
  --hit: #ffe97a; --cur: #ff9d3a; font-family: system-ui, sans-serif; font-size: 14px; }
* { box-sizing: border-box; }
/* The page is one grid of the window's size: the tree panel on the left, the messages on the right
   (#app only groups them: display: contents). Whatever a host adds to the page after #app (serve's
   toolbar) gets a row of its own under the messages instead of floating over them. */
body { margin: 0; color: var(--fg); background: var(--bg); display: grid; height: 100vh; height: 100dvh;
  grid-template-columns: minmax(220px, 28%) minmax(0, 1fr); grid-template-rows: minmax(0, 1fr); }
#app { display: contents; }
#app > .loading { grid-column: 1 / -1; }
#side { grid-column: 1; grid-row: 1 / span 2; }
#mainwrap { grid-column: 2; grid-row: 1; }
body > #app ~ :not(script) { grid-column: 2; position: static; justify-self: end; max-width: 100%;
  margin: 4px 12px 6px; }
#side { border-right: 1px solid var(--line); background: var(--panel); overflow: hidden; min-height: 0;
  display: flex; flex-direction: column; min-width: 0; }
#side h1 { font-size: 15px; margin: 10px; word-break: break-word; }
#side .meta { color: var(--muted); margin: 0 10px 8px; font-size: 12px; overflow-wrap: anywhere; }
#crumbs .back-link { margin: 0 10px 6px; }
#subagents { margin: 0 10px 8px; font-size: 12px; max-height: 30vh; overflow: auto; flex: none; }
#subagents .subagent { margin: 2px 0; }
#tree { font-family: ui-monospace, monospace; font-size: 12px; flex: 1; min-height: 0; overflow: auto;
  position: relative; border-top: 1px solid var(--line); }
#tree .space { position: relative; }
#tree .win { position: absolute; left: 0; right: 0; top: 0; }
#tree .node { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; cursor: pointer;
  height: 18px; line-height: 18px; padding: 0 6px; border-left: 3px solid transparent; }
#tree .node:hover { background: #e9ecf2; }
#tree .node.on-path { background: var(--path); border-left-color: var(--accent); }
#tree .node.selected { background: var(--sel); font-weight: 600; }
#tree .node.fork::before { content: "\\25be "; color: var(--accent); }
#tree .node.tip::after { content: " \\25c6"; color: var(--muted); }
#tree .kind { color: var(--muted); }
.label { background: #fff2c2; border: 1px solid #e6cf72; border-radius: 3px; padding: 0 4px;
  font-size: 11px; margin-left: 4px; }
#mainwrap { display: flex; flex-direction: column; min-width: 0; min-height: 0; }
#bar { display: flex; gap: 8px; align-items: center; padding: 8px 12px; border-bottom: 1px solid var(--line);
  flex-wrap: wrap; }
#bar input[type=search] { width: 240px; max-width: 100%; padding: 3px 6px; }
#bar .status { color: var(--muted); font-size: 12px; }
#main { overflow: auto; padding: 12px 16px 80px; flex: 1; }
.entry { border: 1px solid var(--line); border-radius: 6px; margin: 0 0 10px; padding: 8px 10px; }
.entry.role-user { background: var(--user); }
.entry.error { background: var(--err); }
.entry.note { border-style: dashed; color: var(--muted); padding: 4px 10px; }
.entry.flash { outline: 2px solid var(--accent); }
.entry .head { font-size: 12px; color: var(--muted); margin-bottom: 4px; display: flex; gap: 8px;
  flex-wrap: wrap; }
.entry .head b { color: var(--fg); }
.entry .usage { font-family: ui-monospace, monospace; }
.text { white-space: pre-wrap; word-break: break-word; margin: 4px 0; }
pre { white-space: pre-wrap; word-break: break-word; background: #f7f7f9; border: 1px solid var(--line);
  border-radius: 4px; padding: 6px; margin: 4px 0; font-size: 12px; }
details { margin: 4px 0; }
summary { cursor: pointer; color: var(--accent); }
.toolcall { border-left: 3px solid var(--accent); padding-left: 8px; margin: 6px 0; }
.placeholder { display: inline-block; border: 1px dashed var(--muted); color: var(--muted); padding: 6px;
  margin: 4px 0; }
img.inline { max-width: 100%; max-height: 480px; border: 1px solid var(--line); display: block; margin: 4px 0; }
mark.hit { background: var(--hit); }
mark.hit.current { background: var(--cur); }
.loading { color: var(--muted); padding: 20px; }
.chunk.pending { color: var(--muted); text-align: center; padding: 12px; overflow: hidden; }
.subagent-link { margin: 4px 0; display: inline-block; cursor: pointer; color: var(--accent);
  background: #fff; border: 1px solid var(--accent); border-radius: 4px; padding: 2px 8px; font-size: 12px; }
.subagent-missing { font-size: 12px; }
.sublinks { display: flex; flex-direction: column; align-items: flex-start; gap: 2px; margin: 4px 0; }
/* a narrow window (a phone): the tree above, a third of the height with its own scroll, the
   messages across the width below it, the host's toolbar (serve's) in the last row */
@media (max-width: 720px) {
  body { grid-template-columns: minmax(0, 1fr); grid-template-rows: auto minmax(0, 1fr); }
  #side { grid-column: 1; grid-row: 1; height: 35vh; height: 35dvh; min-height: 150px; border-right: 0;
    border-bottom: 1px solid var(--line); }
  #mainwrap { grid-column: 1; grid-row: 2; }
  body > #app ~ :not(script) { grid-column: 1; margin: 4px 8px 6px; }
  #side h1 { margin: 6px 10px 4px; display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: 2;
    overflow: hidden; flex: none; }
  #side .meta { display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: 2; overflow: hidden;
    margin-bottom: 6px; flex: none; }
  #subagents { max-height: 20vh; }
  #tree { min-height: 60px; }
  #bar { gap: 6px; padding: 6px 8px; }
  #bar input[type=search] { flex: 1 1 140px; width: auto; min-width: 0; }
  #main { padding: 10px 8px 24px; }
  .entry { padding: 6px 8px; }
}
"""
