"""``make mutate``: the mutation check prmg runs on its own verdict code.

Each mutant of ``tests/mutants.yaml`` (an exact replacement in one file, with the wrong verdict it would cause) is
applied on its own, in a scratch copy of the tree, and the tests are run against it: first the test that killed it
last time (its ``killed_by``, when listed: seconds, where the subset takes half a minute), then the ``verdict``-marked
subset (``make test-verdict``), stopping at the first failure, then -- when that subset passed -- the files the
mutant names (pytest collecting none of them is a stale list, not a kill). A mutant some test fails on is killed;
one that a run times out on is killed too (it hangs the tool). A mutant listed ``equivalent`` (it changes no
verdict, metric or exit code; its entry says why) is not run. The last line is ``mutants: K of N killed (E
equivalent)``; the exit code is 0 when every mutant not equivalent was killed, 1 otherwise (the survivors are
listed above it, with their diffs), 2 when the list does not apply (an ``original`` not found exactly once, a test
it names not defined) or the unmutated tree fails its own tests.

Usage: ``python tests/mutate.py [--jobs N] [-k TEXT[,TEXT...]] [--list] [--keep]``. Mutants run ``--jobs`` at a
time (2 by default: one per core of the 2-core machine), each in its own copy; the scratch copies share one
emulator build and one cache of compiled helpers (``PRMG_TEST_EMULATOR_HOME``), so a mutant of ``native.c`` compiles
its library once.
Python writes no bytecode in the copies (``PYTHONDONTWRITEBYTECODE``): a mutant restored within the second it was
written could otherwise be run from its stale ``.pyc``.
"""

from __future__ import annotations

import argparse
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from conftest import PYTEST         # pytest as the tests start it: no cache folder, no hypothesis plugin

ROOT = Path(__file__).resolve().parent.parent
LIST = ROOT / "tests" / "mutants.yaml"
MARKER = "mark.verdict"                 # how a test file says it holds verdict tests
SUBSET_TIMEOUT, TESTS_TIMEOUT = 300, 900


@dataclass
class Mutant:
    id: str
    path: str               # relative to the tree
    original: str
    mutant: str
    reason: str
    tests: tuple[str, ...] = ()
    equivalent: str = ""
    killed_by: str = ""      # the test that killed it when the list was last run: run first


def load(listing: Path = LIST) -> list[Mutant]:
    """The mutants of ``listing``, their files resolved through its ``files`` table."""
    document = yaml.safe_load(listing.read_text(encoding="utf-8"))
    files = document["files"]
    return [Mutant(entry["id"], files[entry["file"]], entry["original"], entry["mutant"], entry["reason"],
                   tuple(entry.get("tests", ())), entry.get("equivalent", ""), entry.get("killed_by", ""))
            for entry in document["mutants"]]


def problems(mutants: list[Mutant], root: Path = ROOT) -> list[str]:
    """Why the list does not apply to the tree at ``root``: an id twice, a missing file, an ``original`` not found
    exactly once in its file, a mutant equal to its original, a missing test file."""
    found, seen = [], set()
    for mutant in mutants:
        if mutant.id in seen:
            found.append(f"{mutant.id}: the id is listed twice")
        seen.add(mutant.id)
        path = root / mutant.path
        if not path.is_file():
            found.append(f"{mutant.id}: no file {mutant.path}")
            continue
        count = path.read_text(encoding="utf-8").count(mutant.original)
        if count != 1:
            found.append(f"{mutant.id}: its original occurs {count} times in {mutant.path} (once expected)")
        if mutant.original == mutant.mutant:
            found.append(f"{mutant.id}: the mutant equals its original")
        for test in (*mutant.tests, *filter(None, [mutant.killed_by])):
            file, _, name = test.partition("::")
            if not (root / file).is_file():
                found.append(f"{mutant.id}: no test file {test}")
            elif name and f"def {name.split('[')[0]}(" not in (root / file).read_text(encoding="utf-8"):
                found.append(f"{mutant.id}: no test {test}")           # renamed: pytest would run nothing
    return found


# The verdict files that kill most mutants soonest run first (pytest runs files in the order given); the others
# follow in name order, the slow sweeps of test_perf_equivalence.py last.
FIRST = ("test_standards.py", "test_check_bounds.py", "test_judge.py", "test_verdict_paths.py")
LAST = ("test_perf_equivalence.py",)


def verdict_files(root: Path) -> list[str]:
    """The test files holding ``verdict``-marked tests: ``FIRST``, the others by name, ``LAST``."""
    names = {path.name for path in (root / "tests").glob("test_*.py") if MARKER in path.read_text()}
    rank = lambda name: (FIRST.index(name) if name in FIRST else len(FIRST) + (name in LAST), name)
    return [f"tests/{name}" for name in sorted(names, key=rank)]


def copy_tree(target: Path) -> None:
    """The tree's files (tracked, and new ones git does not ignore) copied to ``target``."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            destination = target / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)


def pytest(tree: Path, args: list[str], env: dict, timeout: float) -> tuple[str, str]:
    """Run pytest in ``tree``: ("passed" | "failed" | "timed out" | "no tests", the first failing test or "")."""
    try:
        done = subprocess.run([*PYTEST, "-q", "-x", *args], cwd=tree, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timed out", ""
    if done.returncode == 0:
        return "passed", ""
    if done.returncode == 5:                # pytest collected no test: a stale name, not a kill
        return "no tests", ""
    first = next((line.split(" - ")[0] for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))),
                 done.stdout.strip().splitlines()[-1] if done.stdout.strip() else f"exit code {done.returncode}")
    return "failed", first


def judge_mutant(mutant: Mutant, tree: Path, env: dict) -> tuple[str, str]:
    """Apply ``mutant`` in ``tree``, run the tests, restore the file: ("killed" | "survived", how)."""
    path = tree / mutant.path
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace(mutant.original, mutant.mutant, 1), encoding="utf-8")
    try:
        if mutant.killed_by:                # seconds where the whole subset takes half a minute
            outcome, first = pytest(tree, [mutant.killed_by], env, SUBSET_TIMEOUT)
            if outcome in ("failed", "timed out"):
                return "killed", f"{outcome}: {first}" if first else outcome
        outcome, first = pytest(tree, ["-m", "verdict", *verdict_files(tree)], env, SUBSET_TIMEOUT)
        if outcome != "passed":
            return "killed", f"verdict subset {outcome}: {first}" if first else f"verdict subset {outcome}"
        if mutant.tests:
            outcome, first = pytest(tree, list(mutant.tests), env, TESTS_TIMEOUT)
            if outcome == "no tests":
                return "survived", "its tests name no test"
            if outcome != "passed":
                return "killed", f"{outcome}: {first}" if first else outcome
        return "survived", "no test failed"
    finally:
        path.write_text(text, encoding="utf-8")


def diff(mutant: Mutant) -> str:
    """The mutant as two lines: - original, + mutant."""
    return f"    - {mutant.original!r}\n    + {mutant.mutant!r}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="mutants run at a time (default 2)")
    parser.add_argument("-k", dest="keyword", default="", help="only the mutants whose id contains TEXT (or one of a "
                        "comma-separated list)")
    parser.add_argument("--list", action="store_true", help="print the mutants, run nothing")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copies")
    options = parser.parse_args(argv)
    mutants = load()
    wrong = problems(mutants)
    if wrong:
        print("\n".join(f"mutate: {line}" for line in wrong))
        return 2
    mutants = [mutant for mutant in mutants if any(word in mutant.id for word in options.keyword.split(","))]
    if options.list:
        for mutant in mutants:
            print(f"{mutant.id:48} {mutant.path}: {mutant.equivalent and 'equivalent: '}{mutant.reason}")
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="prmg-mutate-"))
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PRMG_TEST_EMULATOR_HOME": str(scratch / "builds")}
    began = time.monotonic()
    try:
        trees = [scratch / f"tree{job}" for job in range(max(1, options.jobs))]
        for tree in trees:
            copy_tree(tree)
        outcome, first = pytest(trees[0], ["-m", "verdict", *verdict_files(trees[0])], env, SUBSET_TIMEOUT)
        if outcome != "passed":
            print(f"mutate: the unmutated tree fails its verdict subset ({outcome}: {first})")
            return 2
        print(f"mutate: the verdict subset passes unmutated ({time.monotonic() - began:.0f} s); "
              f"{len(mutants)} mutants, {len(trees)} at a time", flush=True)
        return run_all(mutants, trees, env, began)
    finally:
        if not options.keep:
            shutil.rmtree(scratch, ignore_errors=True)


def run_all(mutants: list[Mutant], trees: list[Path], env: dict, began: float) -> int:
    """Judge every mutant not equivalent, ``len(trees)`` at a time; print each as it ends and the summary line."""
    pending: queue.Queue = queue.Queue()
    for mutant in mutants:
        if not mutant.equivalent:
            pending.put(mutant)
    total = pending.qsize()
    results: dict[str, tuple[str, str, float]] = {}
    lock = threading.Lock()

    def work(tree: Path) -> None:
        while not stopping.is_set():
            try:
                mutant = pending.get_nowait()
            except queue.Empty:
                return
            started = time.monotonic()
            verdict, how = judge_mutant(mutant, tree, env)
            with lock:
                results[mutant.id] = (verdict, how, time.monotonic() - started)
                print(f"[{len(results):3}/{total}] {verdict:8} {mutant.id} ({how}, "
                      f"{results[mutant.id][2]:.0f} s)", flush=True)

    # Daemon workers that take no new mutant once stopping: an interrupt (Ctrl-C) ends the run at once, instead of
    # the workers going on through the queue in the scratch copies main() then removes.
    stopping = threading.Event()
    workers = [threading.Thread(target=work, args=(tree,), daemon=True) for tree in trees]
    for worker in workers:
        worker.start()
    try:
        for worker in workers:
            while worker.is_alive():
                worker.join(0.5)
    except KeyboardInterrupt:
        stopping.set()
        print(f"mutate: interrupted after {len(results)} of {total} mutants", flush=True)
        raise
    equivalent = [mutant for mutant in mutants if mutant.equivalent]
    for mutant in equivalent:
        print(f"equivalent {mutant.id}: {' '.join(mutant.equivalent.split())}")
    survivors = [mutant for mutant in mutants if results.get(mutant.id, ("",))[0] == "survived"]
    for mutant in survivors:
        print(f"SURVIVED {mutant.id} ({mutant.path}): {mutant.reason}\n{diff(mutant)}")
    killed = sum(1 for verdict, _, _ in results.values() if verdict == "killed")
    print(f"mutate: {time.monotonic() - began:.0f} s")
    print(f"mutants: {killed} of {len(mutants)} killed ({len(equivalent)} equivalent)")
    return 0 if killed + len(equivalent) == len(mutants) else 1


if __name__ == "__main__":
    sys.exit(main())
