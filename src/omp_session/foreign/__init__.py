"""Claude Code and Codex sessions brought into omp, as omp's own importer does (docs/import.md).

omp 18.2.3 imports one foreign session at a time (``omp --from-claude`` / ``--from-codex``:
``claude-session-store.ts``, ``codex-session-store.ts``, ``foreign-session-import.ts``). This
package does the same conversion in batch: the same entries, the same deterministic ids, the same
``foreign_session_import`` custom entry and header, in the same project folder.

* :mod:`.jsonl` -- a foreign transcript's lines -> records, lenient as omp, every skipped line told
* :mod:`.sources` -- where the Claude Code and Codex folders are, and a session found in them
* :mod:`.claude`, :mod:`.codex` -- listing the sessions of each
* :mod:`.convert_claude`, :mod:`.convert_codex` -- one transcript -> omp entries
* :mod:`.importer` -- persisting a converted session as a new omp session; :mod:`.ledger` -- what
  was imported already
"""
