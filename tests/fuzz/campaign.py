"""The fuzz campaign: seed files, running cases, the time reference, minimising and saving failures.

Shared by the long run (``./dev fuzz``, ``run.py``) and the bounded CI tests (test_fuzz.py).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cli import check_cli, place
from .mutate import Case, Seed, load_seeds, make_case
from .views import Failure, check_file

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "fuzz"
KNOWN = Path(__file__).resolve().parent / "known_failures.json"
ORACLE = Path(os.environ.get("OMP_ORACLE_DIR", REPO / "tests" / "reference"))
GEN_LARGE = Path(os.environ.get("OMP_BENCH_DIR", REPO / "bench")) / "gen_large.py"
GOLDEN_DIRS = ("oracle_examples", "context", "persist", "validate")
BIG = 256 << 10  # a saved regression over this is gzipped

__all__ = ["DATA", "KNOWN", "Reference", "Run", "calibrate", "golden_paths", "known_failures", "run_cases",
           "run_cli_cases", "save_failure"]


# ----- seeds --------------------------------------------------------------------------------------


def golden_paths() -> list[Path]:
    """The bundled sample and the golden session files of the test data."""
    paths = [REPO / "src" / "omp_session" / "samples" / "sample.jsonl"]
    for d in GOLDEN_DIRS:
        paths.extend((REPO / "tests" / "data" / d).rglob("*.jsonl"))
    return paths


def generated_paths(out: Path, seed: int, count: int) -> list[Path]:
    """``gen_sessions.py`` files of every kind (the conftest's ``make_corpus`` does the same)."""
    subprocess.run([sys.executable, str(ORACLE / "gen_sessions.py"), "--seed", str(seed), "--count", str(count),
                    "--kinds", "all", "--out", str(out)], check=True, capture_output=True)
    return sorted(out.glob("*.jsonl"))


def large_paths(out: Path, sizes: Sequence[str]) -> list[Path]:
    """A few realistic bigger sessions from ``gen_large.py``."""
    paths = []
    out.mkdir(parents=True, exist_ok=True)
    for n, size in enumerate(sizes):
        p = out / f"large-{size}.jsonl"
        subprocess.run([sys.executable, str(GEN_LARGE), "--size", size, "--seed", str(n + 1), "-o", str(p)],
                       check=True, capture_output=True)
        paths.append(p)
    return paths


def seeds_from(paths: Iterable[Path], *, max_size: int | None = None) -> list[Seed]:
    """Seeds named by path under the repo (golden files) or by file name (generated ones)."""
    kept = [p for p in paths if max_size is None or p.stat().st_size <= max_size]
    return load_seeds(kept, root=REPO)


# ----- time relative to a clean file of the same size ---------------------------------------------


@dataclass(frozen=True)
class Reference:
    """Seconds every call takes on a clean file of ``size`` bytes: ``fixed + per_byte * size``."""

    fixed: float
    per_byte: float

    def seconds(self, size: int) -> float:
        return self.fixed + self.per_byte * size


def calibrate(seeds: Sequence[Seed], work: Path, timeout: float) -> Reference:
    """Time the unmutated seeds through the same calls (best of two: the machine is shared)."""
    path = work / "clean.jsonl"
    points = []
    for s in seeds:
        path.write_bytes(s.data)
        best = min(check_file(path, timeout)[1] for _ in range(2))
        points.append((len(s.data), best))
    small = [t for n, t in points if n < 20_000] or [min(t for _, t in points)]
    fixed = statistics.median(small)
    big = [(t - fixed) / n for n, t in points if n >= 100_000] or [(t - fixed) / n for n, t in points if n]
    return Reference(fixed, max(statistics.median(big), 1e-9))


# ----- a run --------------------------------------------------------------------------------------


@dataclass
class Found:
    """A distinct failure: its signature, the first case that showed it, and how often it came."""

    failure: Failure
    case: dict[str, Any]
    data: bytes
    count: int = 1


@dataclass
class Run:
    cases: int = 0
    seconds: float = 0.0
    found: dict[str, Found] = field(default_factory=dict)
    worst_ratio: float = 0.0
    worst_ratio_case: dict[str, Any] = field(default_factory=dict)
    worst_seconds: float = 0.0
    worst_seconds_case: dict[str, Any] = field(default_factory=dict)

    def add(self, case: Case, failures: list[Failure], elapsed: float, ref: Reference | None) -> None:
        self.cases += 1
        self.seconds += elapsed
        desc = {**case.describe(), "size": len(case.data), "seconds": round(elapsed, 3)}
        if ref is not None:
            ratio = elapsed / ref.seconds(len(case.data))
            if ratio > self.worst_ratio:
                self.worst_ratio, self.worst_ratio_case = ratio, desc
        if elapsed > self.worst_seconds:
            self.worst_seconds, self.worst_seconds_case = elapsed, desc
        for f in failures:
            if f.signature in self.found:
                self.found[f.signature].count += 1
            else:
                self.found[f.signature] = Found(f, case.describe(), case.data)

    def merge(self, other: Run) -> None:
        self.cases += other.cases
        self.seconds += other.seconds
        for sig, f in other.found.items():
            if sig in self.found:
                self.found[sig].count += f.count
            else:
                self.found[sig] = f
        if other.worst_ratio > self.worst_ratio:
            self.worst_ratio, self.worst_ratio_case = other.worst_ratio, other.worst_ratio_case
        if other.worst_seconds > self.worst_seconds:
            self.worst_seconds, self.worst_seconds_case = other.worst_seconds, other.worst_seconds_case


def run_cases(seeds: Sequence[Seed], seed: int, numbers: Iterable[int], work: Path, timeout: float,
              ref: Reference | None = None) -> Run:
    """Cases ``numbers`` of run ``seed`` through ``open`` and every view."""
    run = Run()
    path = work / "case.jsonl"
    for n in numbers:
        case = make_case(seeds, seed, n)
        path.write_bytes(case.data)
        failures, elapsed = check_file(path, timeout)
        run.add(case, failures, elapsed, ref)
    return run


def run_cli_cases(seeds: Sequence[Seed], seed: int, numbers: Iterable[int], work: Path, timeout: float) -> Run:
    """Cases ``numbers`` of run ``seed`` through every CLI read command (a fresh folder each)."""
    run = Run()
    for n in numbers:
        case = make_case(seeds, seed, n)
        with tempfile.TemporaryDirectory(dir=work) as d:
            started = time.perf_counter()
            failures = check_cli(place(Path(d), case.data), Path(d), timeout)
            run.add(case, failures, time.perf_counter() - started, None)
    return run


# ----- minimising and saving ----------------------------------------------------------------------


def reproduces(data: bytes, failure: Failure, work: Path, timeout: float) -> bool:
    """Whether ``data`` still fails with the same signature (only the failing call is made)."""
    if failure.call.startswith("cli "):
        with tempfile.TemporaryDirectory(dir=work) as d:
            found = check_cli(place(Path(d), data), Path(d), timeout, only=failure.call[4:])
    else:
        path = work / "minimise.jsonl"
        path.write_bytes(data)
        only = None if failure.call == "open" else failure.call
        found, _ = check_file(path, timeout, only=only)
    return any(f.signature == failure.signature for f in found)


def minimise(data: bytes, failure: Failure, work: Path, timeout: float, budget: float = 60.0) -> bytes:
    """Fewer lines that fail the same way (ddmin over lines, within ``budget`` seconds)."""
    deadline = time.monotonic() + budget
    lines = data.split(b"\n")
    chunk = max(len(lines) // 2, 1)
    while chunk >= 1 and time.monotonic() < deadline:
        i, removed = 0, False
        while i < len(lines) and time.monotonic() < deadline:
            trial = lines[:i] + lines[i + chunk:]
            if trial and reproduces(b"\n".join(trial), failure, work, timeout):
                lines, removed = trial, True
            else:
                i += chunk
        if not removed:
            chunk //= 2
    return _shallower(b"\n".join(lines), failure, work, timeout, deadline)


# (opener, closer) of the nesting mutate.py writes
_NESTS = [(b"[{\"a\":", b"}]"), (b"[", b"]")] + [(b'{"%s":' % k, b"}") for k in
                                                (b"a", b"type", b"content", b"text", b"input")]


def _shallower(data: bytes, failure: Failure, work: Path, timeout: float, deadline: float) -> bytes:
    """The same failure with the deep nesting halved as often as it still fails."""
    for opener, closer in _NESTS:
        while time.monotonic() < deadline:
            m = re.search(b"(?:%s){64,}" % re.escape(opener), data)
            if m is None:
                break
            depth = (m.end() - m.start()) // len(opener)
            half = depth // 2
            tail = data.find(closer * depth, m.end())
            if tail < 0:
                break
            trial = data[:m.start()] + opener * half + data[m.end():tail] + closer * half + data[tail + len(closer) * depth:]
            if not reproduces(trial, failure, work, timeout):
                break
            data = trial
    return data


def slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]+", "-", text).strip("-").lower()[:80]


def saved_signatures(folder: Path = DATA) -> set[str]:
    return {json.loads(p.read_text("utf-8"))["signature"] for p in folder.glob("*.json")}


def save_failure(found: Found, folder: Path, work: Path, timeout: float, *, minimise_budget: float = 60.0,
                 seed_files: str = "") -> Path:
    """The case as ``<name>.jsonl`` (minimised when it still fails) and ``<name>.json`` naming the
    seed, the mutations and the failing call; returns the session file's path."""
    f = found.failure
    data = found.data
    # each trial of a slow case takes the whole alarm: slow cases are kept as they came
    if f.kind != "slow" and reproduces(data, f, work, timeout):
        data = minimise(data, f, work, timeout, minimise_budget)
    name = f"{slug(f.call)}-{slug(f.kind)}-{found.case['seed']}-{found.case['case']}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.jsonl"
    if len(data) > BIG:  # a 10 MB line of "[" compresses to kilobytes; the replay unpacks it
        path = path.with_suffix(".jsonl.gz")
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)
    meta = {**found.case, "seed_files": seed_files, "call": f.call, "error": f.kind, "where": f.where, "message": f.message,
            "signature": f.signature, "seen": found.count, "original_size": len(found.data), "timeout": timeout}
    (folder / f"{name}.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", "utf-8")
    return path


def known_failures(path: Path = KNOWN) -> dict[str, dict[str, Any]]:
    """signature -> its entry (reason, regression files) from known_failures.json."""
    return {k["signature"]: k for k in json.loads(path.read_text("utf-8"))["known"]}


def regressions(folder: Path = DATA) -> list[Path]:
    """The saved session files (``.jsonl``, or ``.jsonl.gz`` for big ones), each beside its ``.json``."""
    return sorted([*folder.glob("*.jsonl"), *folder.glob("*.jsonl.gz")])


def meta_of(path: Path) -> dict[str, Any]:
    name = path.name.removesuffix(".gz").removesuffix(".jsonl")
    meta: dict[str, Any] = json.loads((path.parent / f"{name}.json").read_text("utf-8"))
    return meta


def check_regression(path: Path, timeout: float, work: Path) -> list[Failure]:
    """A saved regression file through every call and every CLI read command."""
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    copy = work / path.name.removesuffix(".gz")
    copy.write_bytes(data)
    failures = check_file(copy, timeout)[0]
    with tempfile.TemporaryDirectory(dir=work) as d:
        return failures + check_cli(place(Path(d), copy.read_bytes()), Path(d), timeout)


def report_lines(run: Run, known: dict[str, Any], saved: dict[str, Path], what: str) -> list[str]:
    rate = run.cases / run.seconds if run.seconds else 0.0
    out = [f"{what}: {run.cases} cases in {run.seconds:.1f} s of calls ({rate:.1f} cases/s), "
           f"{len(run.found)} distinct failures"]
    if run.worst_ratio:
        out.append(f"  worst time ratio to a clean file of the same size: {run.worst_ratio:.1f}x "
                   f"({json.dumps(run.worst_ratio_case)})")
    out.append(f"  worst case: {run.worst_seconds:.2f} s ({json.dumps(run.worst_seconds_case)})")
    for sig, f in sorted(run.found.items()):
        mark = "known" if sig in known else "NEW"
        where = f" -> {saved[sig]}" if sig in saved else ""
        out.append(f"  [{mark}] {sig} x{f.count} (first: seed {f.case['seed']} case {f.case['case']}: "
                   f"{f.case['mutations']}){where}")
    return out


Progress = Callable[[Run], None]
