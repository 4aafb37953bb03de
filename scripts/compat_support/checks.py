"""The three checks of ``scripts/compat``: each returns table rows."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from langmem_ext_dev.compat.blocks import Unit, find_units
from langmem_ext_dev.compat.runner import MARK, rename
from report import Row

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PACKAGES = ("langmem", "langmem_ext")


def _env(extra_path: list[str]) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*extra_path, str(ROOT)])
    env.setdefault("LANGSMITH_TRACING", "false")
    return env


def _run_unit(unit: Unit, package: str, src: Path, timeout: float, tmp: Path) -> list[dict]:
    """Each block's outcome; a block past ``timeout`` stops the unit."""
    spec = tmp / f"{abs(hash((unit.source, package)))}.json"
    spec.write_text(json.dumps(unit.to_json()))
    cmd = [sys.executable, "-m", "langmem_ext_dev.compat.runner", str(spec), package, str(src)]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=_env([str(src)]),
        cwd=tmp,
        start_new_session=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    done: dict[int, dict] = {}
    running: int | None = None
    # Imports and the setup block count against the first block's time.
    while True:
        try:
            line = lines.get(timeout=timeout + (30 if running is None else 0))
        except queue.Empty:
            os.killpg(proc.pid, signal.SIGKILL)
            at = running if running is not None else 0
            done[at] = {"status": "timeout", "error": f"no result after {timeout:.0f} s"}
            break
        if line is None:
            break
        if not line.startswith(MARK):
            continue  # what the example itself prints
        event = json.loads(line[len(MARK) :])
        if "start" in event:
            running = event["start"]
        elif event["block"] == -1:
            done = {i: event for i in range(len(unit.blocks))}
            break
        else:
            done[event["block"]] = event
            running = None
    proc.wait()
    out = []
    for i in range(len(unit.blocks)):
        if i in done:
            out.append(done[i])
        else:
            out.append({"status": "not run", "error": "an earlier block stopped the page"})
    return out


def run_docs(checkout: Path, timeout: float, jobs: int, k: str | None) -> list[Row]:
    """LangMem's documented examples, block by block, on both packages."""
    src = checkout / "src"
    units = [u for u in find_units(checkout) if not k or k in u.source]
    tmp = Path(tempfile.mkdtemp(prefix="lmx-compat-"))
    work = [(u, p) for u in units for p in PACKAGES]
    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            results = list(pool.map(lambda up: _run_unit(*up, src, timeout, tmp), work))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    by = {(u.source, p): r for (u, p), r in zip(work, results, strict=True)}
    rows = []
    for unit in units:
        for i in range(len(unit.blocks)):
            orig = by[(unit.source, "langmem")][i]
            ours = by[(unit.source, "langmem_ext")][i]
            rows.append(
                Row(
                    part="docs",
                    source=f"{unit.source}#{i + 1}",
                    original=orig["status"],
                    ours=ours["status"],
                    original_error=orig.get("error", ""),
                    error=ours.get("error", ""),
                )
            )
    return rows


def _junit(path: Path) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    if not path.exists():
        return out
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{Path(case.get('classname', '').replace('.', '/')).name}::{case.get('name')}"
        bad = case.find("failure")
        bad = bad if bad is not None else case.find("error")
        if bad is not None:
            msg = (bad.get("message") or "").splitlines()
            out[name] = ("fail", msg[0][:200] if msg else "")
        elif case.find("skipped") is not None:
            out[name] = ("skipped", "")
        else:
            out[name] = ("pass", "")
    return out


def run_tests(checkout: Path, k: str | None) -> list[Row]:
    """LangMem's offline tests (``tests/short_term``), on both packages."""
    tests = checkout / "tests" / "short_term"
    if not tests.is_dir():
        raise SystemExit(f"{tests} not found: is {checkout} a LangMem checkout?")
    tmp = Path(tempfile.mkdtemp(prefix="lmx-compat-tests-"))
    results: dict[str, dict[str, tuple[str, str]]] = {}
    try:
        for package in PACKAGES:
            root = tmp / package
            staged = root / "tests" / "short_term"
            staged.mkdir(parents=True)
            (root / "tests" / "__init__.py").write_text("")
            for f in sorted(tests.glob("*.py")):
                (staged / f.name).write_text(rename(f.read_text(encoding="utf-8"), package))
            junit = root / "junit.xml"
            cmd = [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider"]
            cmd += ["--rootdir", str(root), f"--junitxml={junit}", "-o", "asyncio_mode=auto"]
            if k:
                cmd += ["-k", k]
            env = _env([str(root), str(checkout / "src")])
            subprocess.run(cmd, cwd=root, env=env, check=False, capture_output=True)
            results[package] = _junit(junit)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    names = sorted(set(results["langmem"]) | set(results["langmem_ext"]))
    return [
        Row(
            part="tests",
            source=f"tests/short_term/{name}",
            original=results["langmem"].get(name, ("missing", ""))[0],
            ours=results["langmem_ext"].get(name, ("missing", ""))[0],
            original_error=results["langmem"].get(name, ("", ""))[1],
            error=results["langmem_ext"].get(name, ("", ""))[1],
        )
        for name in names
    ]


def run_langgraph(checkout: Path, k: str | None) -> list[Row]:
    """LangGraph's store suites on LangGraph's stores and on ours."""
    tmp = Path(tempfile.mkdtemp(prefix="lmx-compat-lg-"))
    results: dict[str, dict] = {}
    try:
        for stores in ("langgraph", "ours"):
            out = tmp / f"{stores}.json"
            cmd = [sys.executable, str(ROOT / "scripts" / "langgraph-suites"), str(checkout)]
            cmd += ["--stores", stores, "--json", str(out)]
            if k:
                cmd += ["-k", k]
            done = subprocess.run(cmd, cwd=ROOT, check=False, capture_output=True, text=True)
            if not out.exists():
                why = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
                raise SystemExit(f"scripts/langgraph-suites --stores {stores} failed: {why[0]}")
            results[stores] = json.loads(out.read_text())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def outcomes(r: dict) -> dict[str, tuple[str, str]]:
        got: dict[str, tuple[str, str]] = {}
        for suite, counts in r.items():
            for name in counts.get("passed_tests", []):
                got[f"{suite}::{name}"] = ("pass", "")
            for f in counts.get("failed", []):
                got[f"{suite}::{f['test']}"] = ("fail", f["message"])
        return got

    orig, ours = outcomes(results["langgraph"]), outcomes(results["ours"])
    rows = []
    for name in sorted(set(orig) | set(ours)):
        rows.append(
            Row(
                part="langgraph",
                source=name,
                original=orig.get(name, ("missing", ""))[0],
                ours=ours.get(name, ("missing", ""))[0],
                original_error=orig.get(name, ("", ""))[1],
                error=ours.get(name, ("", ""))[1],
            )
        )
    return rows


def export(checkout: Path, rows: list[Row], path: Path) -> None:
    """LangMem's examples as LangMem wrote them, and how each block fared on
    LangMem, for the examples test (which has no checkout to read)."""
    commit = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    on_langmem = {r.source: (r.original, r.original_error) for r in rows if r.part == "docs"}
    units = []
    for unit in find_units(checkout):
        data = unit.to_json()
        data["on_langmem"] = [
            on_langmem.get(f"{unit.source}#{i + 1}", ("not run", ""))
            for i in range(len(unit.blocks))
        ]
        units.append(data)
    doc = {
        "from": f"https://github.com/langchain-ai/langmem at {commit} (MIT licence, "
        "Copyright (c) LangChain, Inc.)",
        "made_by": "scripts/compat --langmem PATH --only docs --export THIS_FILE",
        "units": units,
    }
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
