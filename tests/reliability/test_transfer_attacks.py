# ruff: noqa: E501 - tables of attack lines read better one per line
"""Attacks on backup and move (``langmem-ext memories export`` / ``import``)
and on the stores' input checks, on SQLite and PostgreSQL, each counted.

1. export → import → export must give the same bytes, whatever the text holds
   (Unicode line separators, control characters, emoji, 100,000-character
   values, NUL where the store keeps it);
2. an import is all or nothing: a bad line anywhere (after the first batches
   too) stops it before anything is written, named by its number, never a
   traceback; with ``--skip-bad`` the good lines go in and the bad ones are
   listed by number, including lines the store refuses only when writing;
3. an import never replaces existing items unless told to (``--replace``);
4. wrong-type and out-of-range inputs at every store method, on every face
   (sync and async) of both stores: one of the package's errors, nothing
   changed, the same answer everywhere.
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import random
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from psycopg.conninfo import conninfo_to_dict
from typer.testing import CliRunner

from langmem_ext.cli.app import app
from langmem_ext.cli.dbopen import open_store
from langmem_ext.errors import InvalidOperationError, LangmemError
from langmem_ext.stores.transfer import import_jsonl
from tests.stores.store_probes import ACCEPTED, FACES, PROBES, REFUSED, Faces, expected, snapshot

from .conftest import LONG, SCALE

STORES = ("sqlite", "postgres")
runner = CliRunner()


class Db:
    """A fresh store as the command line reaches it (``--db``): a SQLite file,
    or a PostgreSQL URL on a schema of its own."""

    def __init__(self, kind: str, tmp_path: Path, pg_server: Any) -> None:
        self.kind = kind
        if kind == "sqlite":
            self.url = str(tmp_path / f"{uuid.uuid4().hex}.db")
        else:
            options = conninfo_to_dict(pg_server.fresh_schema())["options"]
            self.url = f"{pg_server.uri('langmem_test')}?options={quote(str(options))}"

    def items(self) -> list[tuple]:
        with open_store(self.url, embed=None, create=True) as store:
            return snapshot(store)

    def put(self, items: list[tuple[tuple[str, ...], str, dict, dict]]) -> None:
        with open_store(self.url, embed=None, create=True) as store:
            for ns, key, value, kwargs in items:
                store.put(ns, key, value, **kwargs)


def cli(*args: str) -> tuple[int, str, bool]:
    """Exit code, output, and whether it ended in an exception (a traceback)."""
    result = runner.invoke(app, ["memories", *args])
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    return result.exit_code, result.output, crashed


# 1 -- round trip ----------------------------------------------------------------------

# Characters that broke or could break a line-based file: Unicode line and
# paragraph separators and NEL (str.splitlines splits at them), C0/C1 controls,
# a BOM, quotes and backslashes, emoji sequences, combining and bidi marks.
TRICKY = [
    "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\r", "\n", "\r\n",
    "\t", "\x01", "\x1f", "\x7f", "\x9f", "\ufeff", '"', "\\", "\\u2028", "😀", "👩‍👩‍👧",
    "e\u0301", "\u202e", "ß", "中文", " ",
]  # fmt: skip


def _text(rng: random.Random, n: int, *, nul: bool = False) -> str:
    pool = TRICKY + ["a", "b", "word "] + (["\x00"] if nul else [])
    return "".join(rng.choice(pool) for _ in range(n))


def tricky_items(rng: random.Random, n: int, *, nul: bool) -> list[tuple]:
    """``n`` items with tricky text in labels, keys and values; two hold
    100,000-character values."""
    items = []
    for i in range(n):
        label = _text(rng, 4).replace(".", "") or "x"
        key = f"{i}-{_text(rng, 6)}"
        size = 100_000 if i < 2 else rng.randint(1, 60)
        value = {
            "content": _text(rng, size, nul=nul and i % 3 == 0),
            "tags": [_text(rng, 3) for _ in range(rng.randint(0, 3))],
            "n": rng.randint(-(2**40), 2**40),
            _text(rng, 3) or "k": {"deep": [_text(rng, 2), None, True, 1.5]},
        }
        kwargs: dict[str, Any] = {}
        if i % 4 == 1:
            kwargs["ttl"] = 60.0 * rng.randint(1, 10_000)
        if i % 5 == 2:
            kwargs["index"] = False
        items.append((("user", label), key, value, kwargs))
    return items


@pytest.mark.parametrize("kind", STORES)
def test_export_import_export_gives_the_same_bytes(kind, tmp_path, pg_server, tally):
    t = tally(
        "export → import → export is byte-identical (line separators, controls, emoji, 100k-char values)"
    )
    rng = random.Random(f"round trip {kind}")
    source, target = Db(kind, tmp_path, pg_server), Db(kind, tmp_path, pg_server)
    # PostgreSQL cannot hold NUL, so only SQLite's items carry it (it must come back too).
    items = tricky_items(rng, 12 * SCALE, nul=kind == "sqlite")
    source.put(items)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    code, out, crashed = cli("export", str(first), "--db", source.url)
    assert code == 0 and not crashed, out
    code, out, crashed = cli("import", str(first), "--db", target.url, "--embed", "none")
    code2, out2, crashed2 = cli("export", str(second), "--db", target.url)
    assert code2 == 0 and not crashed2, out2
    a, b = first.read_bytes(), second.read_bytes()
    a_lines, b_lines = a.split(b"\n"), b.split(b"\n")
    for n in range(len(items)):
        t.case()
        if n >= len(b_lines) or a_lines[n] != b_lines[n]:
            t.violation(f"{kind}: line {n + 1} changed ({out.strip()[-200:]!r})")
    if a != b and not t.seen:
        t.violation(f"{kind}: the files differ beyond their lines")
    # Readers that split at Unicode line breaks see the same lines.
    t.case()
    if len(a.decode("utf-8").splitlines()) != len(items):
        t.violation(f"{kind}: str.splitlines() splits the export into other lines")


def test_sqlite_export_into_postgres_refuses_nul_by_line_number(tmp_path, pg_server, tally):
    t = tally("NUL: kept where the store can, refused by line number where not")
    for round_ in range(SCALE):
        rng = random.Random(f"nul {round_}")
        source = Db("sqlite", tmp_path, pg_server)
        source.put(tricky_items(rng, 6, nul=True))
        path = tmp_path / "nul.jsonl"
        cli("export", str(path), "--db", source.url)
        lines = path.read_bytes().split(b"\n")[:-1]
        with_nul = [n for n, line in enumerate(lines, 1) if b"\\u0000" in line]
        target = Db("postgres", tmp_path, pg_server)
        code, out, crashed = cli("import", str(path), "--db", target.url, "--embed", "none")
        t.case()
        named = all(f"line {n}:" in out for n in with_nul)
        if code == 0 or crashed or target.items() or not named:
            t.violation(f"strict import: exit {code}, {len(target.items())} items, {out[-300:]!r}")
        code, out, crashed = cli(
            "import", str(path), "--db", target.url, "--embed", "none", "--skip-bad"
        )
        t.case()
        got, want = target.items(), len(lines) - len(with_nul)
        if crashed or len(got) != want:
            t.violation(f"--skip-bad: {len(got)} of {want} items: {out[-300:]!r}")
        elif not all(f"skipped line {n}:" in out for n in with_nul):
            t.violation(f"--skip-bad did not list every NUL line: {out[-300:]!r}")


# 2 -- all or nothing --------------------------------------------------------------------

GOOD = '{"namespace": ["user", "u%d"], "key": "k%d", "value": {"content": "fact number %d"}}'
LONG_TEXT = " ".join(f"w{i:07d}" for i in range(150_000))  # > 1 MB of words: tsvector too long


def _bad(kind: str) -> tuple[bytes, tuple[str, ...]]:
    """A bad line and the stores that refuse it."""
    line = {
        "lone surrogate in a value": (r'{"namespace": ["u"], "key": "s", "value": {"t": "a\ud800"}}', STORES),
        "lone surrogate in a label": (r'{"namespace": ["\udc00"], "key": "s", "value": {}}', STORES),
        "NUL in the key": (r'{"namespace": ["u"], "key": "a\u0000", "value": {}}', STORES),
        "NUL in a value": (r'{"namespace": ["u"], "key": "n", "value": {"t": "a\u0000"}}', ("postgres",)),
        "ttl beyond 1e9 minutes": ('{"namespace": ["u"], "key": "t", "value": {}, "ttl": 1e300}', STORES),
        "nested 100,000 deep": ('{"namespace": ["u"], "key": "d", "value": {"v": ' + "[" * 100_000 + "]" * 100_000 + "}}", STORES),
        "not JSON": ('{"namespace": ["u"], "key": ', STORES),
        "keyword index too long": (json.dumps({"namespace": ["u"], "key": "l", "value": {"t": LONG_TEXT}}), ("postgres",)),
    }  # fmt: skip
    if kind == "invalid UTF-8":
        return b'{"namespace": ["u"], "key": "x", "value": {"t": "\xff\xfe"}}', STORES
    text, refused_by = line[kind]
    return text.encode(), refused_by


BAD_KINDS = [
    "lone surrogate in a value",
    "lone surrogate in a label",
    "NUL in the key",
    "NUL in a value",
    "ttl beyond 1e9 minutes",
    "nested 100,000 deep",
    "not JSON",
    "invalid UTF-8",
    "keyword index too long",
]


@pytest.mark.parametrize("kind", STORES)
def test_a_bad_line_after_the_first_batches_writes_nothing(kind, tmp_path, pg_server, tally):
    t = tally("a bad line after the first batches: nothing written, or skipped by number")
    rng = random.Random(f"atomic {kind}")
    modes = ("strict", "--skip-bad")
    if LONG:
        runs = [(bad, mode) for bad in BAD_KINDS for mode in modes for _ in range(SCALE)]
    else:
        # Short: both modes for the lines only PostgreSQL refuses (one only when
        # writing), one mode each otherwise, the other mode on the other store.
        flip = STORES.index(kind)
        runs = [
            (bad, mode)
            for i, bad in enumerate(BAD_KINDS)
            for mode in (modes if _bad(bad)[1] != STORES else [modes[(i + flip) % 2]])
        ]
    for bad_kind, mode in runs:
        line, refused_by = _bad(bad_kind)
        if kind not in refused_by:
            continue
        n_good = rng.randint(510, 560 if not LONG else 1_500)
        at = rng.randint(501, n_good)  # after the first batch of 500
        lines = [(GOOD % (i % 3, i, i)).encode() for i in range(n_good)]
        lines.insert(at - 1, line)
        path = tmp_path / "bad.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        db = Db(kind, tmp_path, pg_server)
        db.put([(("keep",), "k", {"content": "there before"}, {})])
        before = db.items()
        t.case()
        args = ["import", str(path), "--db", db.url, "--embed", "none"]
        code, out, crashed = cli(*args, *([mode] if mode != "strict" else []))
        what = f"{kind}, {bad_kind} at line {at}, {mode}"
        if crashed:
            t.violation(f"{what}: a traceback ({out[-200:]!r})")
            continue
        got = db.items()
        if mode == "strict":
            if code == 0 or got != before:
                t.violation(f"{what}: exit {code}, {len(got) - len(before)} items written")
            elif f"line {at}:" not in out:
                t.violation(f"{what}: the error does not name line {at}: {out[-300:]!r}")
        else:
            if code != 0 or len(got) != len(before) + n_good:
                t.violation(f"{what}: exit {code}, {len(got) - len(before)} of {n_good} written")
            elif f"skipped line {at}:" not in out:
                t.violation(f"{what}: line {at} not reported: {out[-300:]!r}")


# 3 -- replacing existing items -----------------------------------------------------------


@pytest.mark.parametrize("kind", STORES)
def test_an_import_replaces_existing_items_only_when_told(kind, tmp_path, pg_server, tally):
    t = tally("an edited export aimed at another user's items: refused unless --replace")
    rng = random.Random(f"replace {kind}")
    for _ in range(2 * SCALE):
        db = Db(kind, tmp_path, pg_server)
        n = rng.randint(3, 30)
        db.put([(("user", "bob"), f"m{i}", {"content": f"bob's memory {i}"}, {}) for i in range(n)])
        before = db.items()
        # An export of ada's memories, edited so some lines name bob's items.
        hit = sorted(rng.sample(range(n), rng.randint(1, n)))
        rows = [
            {"namespace": ["user", "ada"], "key": f"a{i}", "value": {"content": "ada"}}
            for i in range(5)
        ]
        rows += [
            {"namespace": ["user", "bob"], "key": f"m{i}", "value": {"content": "rewritten"}}
            for i in hit
        ]
        rng.shuffle(rows)
        path = tmp_path / "edited.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        t.case()
        code, out, crashed = cli("import", str(path), "--db", db.url, "--embed", "none")
        if crashed or code == 0 or db.items() != before:
            t.violation(f"{kind}: imported over {len(hit)} of bob's items without --replace")
        elif f"{len(hit)} item(s) would replace" not in out or "user/bob" not in out:
            t.violation(f"{kind}: the refusal does not say what and where: {out[-300:]!r}")
        t.case()
        with open_store(db.url, embed=None) as store:
            try:
                import_jsonl(store, [json.dumps(r) for r in rows])
                t.violation(f"{kind}: import_jsonl replaced items without replace=True")
            except InvalidOperationError as e:
                if e.details.get("replaced") != len(hit) or snapshot(store) != before:
                    t.violation(f"{kind}: import_jsonl refused but {e.details} / changed the store")
            except Exception as e:
                t.violation(f"{kind}: import_jsonl raised {type(e).__name__}: {e!s:.200}")
        t.case()
        code, out, crashed = cli(
            "import", str(path), "--db", db.url, "--embed", "none", "--replace"
        )
        items = {(ns, key): value for ns, key, value in db.items()}
        rewritten = sum(
            items.get((("user", "bob"), f"m{i}")) == '{"content": "rewritten"}' for i in hit
        )
        if crashed or code != 0 or rewritten != len(hit) or f"{len(hit)} replaced" not in out:
            t.violation(
                f"{kind}: --replace: exit {code}, {rewritten} of {len(hit)}: {out[-200:]!r}"
            )


# 4 -- wrong-type and out-of-range inputs ---------------------------------------------------


def test_wrong_inputs_at_store_methods_answer_alike_everywhere(pg_server, tally):
    t = tally("wrong-type / out-of-range inputs at store methods (both stores, sync and async)")
    rng = random.Random("inputs")

    async def run() -> None:
        async with Faces(pg_server.fresh_schema) as faces:
            for name, (_, call) in PROBES.items():
                for face in FACES:
                    t.case()
                    got = await faces.outcome(face, call)
                    if got != expected(name, face):
                        t.violation(f"{face}: {name}: {got} (expected {expected(name, face)})")
            # Long runs: random combinations of odd arguments, every face
            # answering alike (NUL aside: only SQLite keeps it).
            for _ in range(50 * SCALE if LONG else 0):
                label, call = _random_call(rng)
                answers = {face: await faces.outcome(face, call) for face in FACES}
                t.case(len(FACES))
                for face, got in answers.items():
                    if got not in (ACCEPTED, REFUSED):
                        t.violation(f"{face}: {label}: {got}")
                groups = [FACES] if "\\x00" not in label else [FACES[:2], FACES[2:]]
                if any(len({answers[face] for face in group}) > 1 for group in groups):
                    t.violation(f"{label}: the faces disagree: {answers}")

    asyncio.run(run())


ODD = [
    None, True, 0, -1, 1.5, 2**70, 10**400, math.nan, math.inf, "", "x", "a.b", "a\x00", "a\ud800",
    "\u2028", "$gt", b"x", [], ["x"], (), ("u",), ("u", ""), ("u", 1), {}, {"text": "x"},
    {"a": {"$gt": 1}}, {"a": {"$in": 5}}, {1: 2}, {"a": math.nan}, object(),
]  # fmt: skip


def _random_call(rng: random.Random) -> tuple[str, Any]:
    method = rng.choice(["put", "get", "delete", "search", "list_namespaces"])
    odd = [rng.choice(ODD) for _ in range(4)]
    ns = rng.choice([NS_OK, odd[0]])
    if method == "put":
        args, kwargs = (ns, rng.choice(["k", odd[1]]), rng.choice([V_OK, odd[2]])), {"ttl": odd[3]}
    elif method in ("get", "delete"):
        args, kwargs = (ns, rng.choice(["k", odd[1]])), {}
        if method == "get":
            kwargs["refresh_ttl"] = rng.choice([None, odd[2]])
    elif method == "search":
        names = ["query", "filter", "limit", "offset", "refresh_ttl"]
        args, kwargs = (ns,), {n: v for n, v in zip(rng.sample(names, 3), odd[1:], strict=True)}
    else:
        names = ["prefix", "suffix", "max_depth", "limit", "offset"]
        args, kwargs = (), {n: v for n, v in zip(rng.sample(names, 3), odd[1:], strict=True)}
    label = f"{method}{args!r:.80}{kwargs!r:.120}"
    return label, lambda c: c(method, *args, **kwargs)


NS_OK, V_OK = ("u",), {"text": "x"}


def test_an_import_in_python_reads_bytes_and_text_alike(tally):
    t = tally(
        "export → import → export is byte-identical (line separators, controls, emoji, 100k-char values)"
    )
    from langmem_ext import SQLiteStore
    from langmem_ext.stores.transfer import export_jsonl

    rng = random.Random("python")
    source = SQLiteStore()
    items = tricky_items(rng, 8 * SCALE, nul=True)
    for ns, key, value, kwargs in items:
        source.put(ns, key, value, **kwargs)
    out = io.StringIO()
    export_jsonl(source, out)
    text = out.getvalue()
    for lines in (io.BytesIO(text.encode()), io.StringIO(text), text.split("\n")):
        target = SQLiteStore()
        try:
            import_jsonl(target, lines)
        except LangmemError as e:
            t.case()
            t.violation(f"{type(lines).__name__}: {e!s:.200}")
            continue
        again = io.StringIO()
        export_jsonl(target, again)
        t.case(len(items))
        if again.getvalue() != text:
            t.violation(f"{type(lines).__name__}: the second export differs")
