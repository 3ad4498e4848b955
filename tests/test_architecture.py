"""The house's rules, checked on the source (docs/architecture.md):

* imports point down the layers: cli -> ops -> write -> catalog -> model | store -> format -> js -> base;
* ``model`` and ``store`` never import each other, and no ``ops`` job imports another job;
* no import cycle between modules, counting imports inside functions too;
* nothing inside the package imports the façade (``omp_session/__init__``);
* no module imports another module's private (``_name``) helper.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "omp_session"

# The base modules are rank 0; a module may import only a lower rank, or its own package.
RANKS: dict[str, float] = {
    "diagnostics": 0, "paths": 0, "_version": 0, "bytesearch": 0, "errors": 0.5, "extras": 0.75,  # errors names Diagnostic (types only)
    "js": 1, "format": 2, "model": 3, "store": 3, "catalog": 4, "write": 5, "foreign": 5.5, "ops": 6, "mcp_server": 6.5, "serve": 6.5, "cli": 7, "__main__": 8,
}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(module: str, path: Path) -> list[tuple[str, str, int]]:
    """(target module, imported name or "", line) for every import of our package, at any depth."""
    tree = ast.parse(path.read_text("utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[tuple[str, str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base != "omp_session" and not base.startswith("omp_session."):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in MODULES:
                    out.append((sub, "", node.lineno))
                else:
                    out.append((base, alias.name, node.lineno))
        elif isinstance(node, ast.Import):
            out.extend((alias.name, "", node.lineno) for alias in node.names
                       if alias.name.startswith("omp_session."))
    return out


EDGES = {m: _imports(m, p) for m, p in MODULES.items()}


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _job(module: str) -> str:
    """An ops module's job: ``ops.search.index`` -> ``search``, ``ops.sync`` -> ``sync``; a job's
    ``_watch`` module (``ops.sync_watch``, the follower of ``sync``) is that job's."""
    return module.split(".")[2].removesuffix("_watch") if len(module.split(".")) > 2 else ""


def test_every_module_has_a_layer() -> None:
    assert {_top(m) for m in MODULES} - {""} <= set(RANKS)


def test_imports_point_down() -> None:
    wrong = []
    for module, targets in EDGES.items():
        if module == "omp_session":
            continue  # the façade may name anything (lazily)
        for target, _name, line in targets:
            src, dst = _top(module), _top(target)
            if target == "omp_session":
                wrong.append(f"{module}:{line} imports the façade")
            elif src == dst:
                if src == "ops" and _job(module) != _job(target):
                    wrong.append(f"{module}:{line} -> {target} (ops jobs never import each other)")
            elif RANKS[dst] >= RANKS[src]:
                wrong.append(f"{module}:{line} -> {target} (upward or sideways)")
    assert wrong == []


def test_no_private_names_across_modules() -> None:
    wrong = []
    for module, targets in EDGES.items():
        for target, name, line in targets:
            private_module = any(p.startswith("_") and p != "__init__" for p in target.split(".")[1:])
            if name.startswith("_") and name != "__version__" and target != module:
                wrong.append(f"{module}:{line} imports {target}.{name}")
            if private_module and target.rpartition(".")[0] != module.rpartition(".")[0] \
                    and target.rpartition(".")[0] != module and target != "omp_session._version":
                wrong.append(f"{module}:{line} imports the private module {target}")
    assert wrong == []


def test_no_private_attributes_across_modules() -> None:
    """``mod._helper`` through a module alias counts as importing a private name."""
    wrong = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text("utf-8"))
        aliases = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                   for alias in node.names
                   if any(t == f"{b}.{alias.name}" for t, _n, _l in EDGES[module] for b in (t.rpartition(".")[0],))}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                wrong.append(f"{module}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert wrong == []


def test_no_import_cycles() -> None:
    graph = {m: sorted({t for t, _n, _l in targets if t in MODULES and t != m}) for m, targets in EDGES.items()}
    graph.pop("omp_session")
    for targets in graph.values():
        if "omp_session" in targets:
            targets.remove("omp_session")
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert cycles == []


def test_the_rules_catch_a_violation(tmp_path: Path) -> None:
    """The checker itself: an upward import and a cycle are seen (so a green run means something)."""
    bad = tmp_path / "m.py"
    bad.write_text("from omp_session.cli import main\nfrom . import reader\n", "utf-8")
    found = _imports("omp_session.format.m", bad)
    assert ("omp_session.cli", "main", 1) in found
    assert ("omp_session.format.reader", "", 2) in found
