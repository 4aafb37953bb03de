"""``langmem-ext memories`` (one caller's memories, commands derived from the
operation catalogue) and ``langmem-ext store`` (the store's items) on a SQLite
file, and JSON Lines export → import round trips (SQLite → PostgreSQL →
SQLite) that keep every field: value, timestamps, indexing, TTL and expiry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict
from typer.testing import CliRunner

from langmem_ext import SQLiteStore
from langmem_ext.cli.app import app
from tests.postgres_server import pg_server  # noqa: F401 - fixture

runner = CliRunner()


def cli(*args: str, ok: bool = True) -> str:
    result = runner.invoke(app, list(args))
    if ok:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code != 0, result.output
    return result.output


@pytest.fixture
def db(tmp_path: Path) -> str:
    """An existing, empty database (SQLite reads an empty file as one): a
    path with no file is refused unless --create is given."""
    path = tmp_path / "memories.db"
    path.touch()
    return str(path)


def test_version():
    assert cli("--version").startswith("langmem-ext ")


def test_put_get_list_search_delete(db):
    cli("store", "put", "user/ada", "m1", '{"content": "Ada likes green tea"}', "--db", db)
    cli("store", "put", "user/ada", "m2", '{"content": "Ada lives in Munich"}', "--db", db)
    cli("store", "put", "user/bob", "m1", '{"content": "Bob likes coffee"}', "--db", db)

    got = json.loads(cli("store", "get", "user/ada", "m2", "--db", db))
    assert got["value"] == {"content": "Ada lives in Munich"}
    assert got["namespace"] == ["user", "ada"]

    listed = cli("store", "list", "user/ada", "--db", db)
    assert "Ada likes green tea" in listed and "Ada lives in Munich" in listed
    assert "Bob" not in listed

    found = cli("store", "search", "where does Ada live", "--namespace", "user/ada", "--db", db)
    lines = [line for line in found.splitlines() if "Ada" in line]
    assert "Munich" in lines[0], found  # best first
    assert any(ch.isdigit() for ch in lines[0].split()[1])  # a score is shown

    cli("store", "delete", "user/ada", "m2", "--db", db)
    out = cli("store", "get", "user/ada", "m2", "--db", db, ok=False)
    assert "no item 'm2'" in out
    # A key with nothing under it is no deletion (a typo is said, exit status 1).
    out = cli("store", "delete", "user/ada", "m2", "--db", db, ok=False)
    assert out.strip() == "error: no item 'm2' in 'user/ada'; nothing was deleted"


def test_a_mistyped_db_is_refused_unless_create(tmp_path):
    typo = tmp_path / "memoreis.db"
    for args in (
        ("store", "list", "--db", str(typo)),
        ("store", "put", "user/ada", "m1", '{"content": "x"}', "--db", str(typo)),
        ("memories", "search", "tea", "--user-id", "ada", "--db", str(typo), "--embed", "none"),
        ("memories", "export", str(tmp_path / "out.jsonl"), "--db", str(typo)),
    ):
        out = cli(*args, ok=False)
        assert "no database at" in out and "--create" in out, out
        assert not typo.exists()  # nothing was created
    cli("store", "put", "user/ada", "m1", '{"content": "x"}', "--db", str(typo), "--create",
        "--embed", "none")  # fmt: skip
    assert typo.exists()
    assert "x" in cli("store", "list", "user/ada", "--db", str(typo))
    fresh = tmp_path / "fresh.db"
    cli("memories", "add", "Likes tea", "--user-id", "ada", "--db", str(fresh), "--create",
        "--embed", "none")  # fmt: skip
    assert "Likes tea" in cli(
        "memories", "search", "tea", "--user-id", "ada", "--db", str(fresh), "--embed", "none"
    )


def test_a_memories_command_without_a_caller_says_who_is_missing(db):
    cli("memories", "add", "Likes tea", "--user-id", "ada", "--db", db, "--embed", "none")
    for args in (("search", "tea"), ("add", "Likes coffee"), ("list",)):
        out = cli("memories", *args, "--db", db, "--embed", "none", ok=False)
        assert out.startswith("error: MISSING_IDENTIFIER: who is the caller? pass --user-id"), out
    # The tenant alone is no caller either.
    out = cli("memories", "search", "tea", "--tenant-id", "acme", "--db", db, ok=False)
    assert "who is the caller" in out


def test_memories_commands_act_as_one_caller(db):
    ada, bob = ("--user-id", "ada"), ("--user-id", "bob")
    out = cli("memories", "store-fact", "user", "city", "Lives in Berlin", *ada, "--db", db,
              "--embed", "none", "--json")  # fmt: skip
    berlin = json.loads(out)["id"]
    cli("memories", "store-fact", "user", "city", "Lives in Munich", *ada, "--db", db,
        "--embed", "none", "--importance", "7", "--tags", "home", "--tags", "city")  # fmt: skip
    cli("memories", "add", "Allergic to peanuts", *ada, "--db", db, "--embed", "none")
    found = cli("memories", "search", "peanuts", *ada, "--db", db, "--embed", "none")
    assert "Allergic to peanuts" in found and "note" in found
    assert "peanuts" not in cli(
        "memories", "search", "peanuts", *bob, "--db", db, "--embed", "none"
    )
    versions = json.loads(
        cli("memories", "versions", berlin, *ada, "--db", db, "--embed", "none", "--json")
    )
    assert [v["content"] for v in versions] == ["Lives in Berlin", "Lives in Munich"]
    assert versions[1]["importance"] == 7 and versions[1]["tags"] == ["home", "city"]
    stats = json.loads(cli("memories", "stats", *ada, "--db", db, "--embed", "none", "--json"))
    assert (stats["facts"]["active"], stats["notes"]["total"]) == (1, 1)
    out = cli("memories", "forget", "fact", versions[1]["id"], *bob, "--db", db, "--embed",
              "none", ok=False)  # fmt: skip
    assert out.startswith("error: MEMORY_NOT_FOUND: ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("store-fact", "u", "p", "x", "--importance", "high"),
         "error: INVALID_VALUE: importance must be a number, got 'high'"),
        (("store-fact", "u", "p", "x", "--importance", "11"),
         "error: INVALID_VALUE: importance must be a number from 0 to 10, got 11"),
        (("store-rule", "   "), "error: INVALID_VALUE: content must contain text, got '   '"),
        (("search", "x", "--types", "memo"),
         "error: INVALID_MEMORY_TYPE: unknown memory type 'memo'; use one of note, fact, "
         "episode, rule"),
        (("store-rule", "x", "--layer", "galaxy"),
         "error: INVALID_LAYER: unknown memory layer 'galaxy'; use one of agent, user, "
         "session, project, team, org, company"),
        (("store-rule", "x" * 10_001), "error: CONTENT_TOO_LONG: content is 10001 characters"),
        (("search", "x", "--filter", "{bad"), "error: INVALID_VALUE: filter must be an object"),
    ],
)  # fmt: skip
def test_memories_commands_give_the_coded_errors(db, args, message):
    out = cli("memories", *args, "--user-id", "ada", "--db", db, "--embed", "none", ok=False)
    assert out.startswith(message), out
    with SQLiteStore(db) as store:
        assert store.search(()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("put", "user/ada", "m1", "[1, 2]"), "must be a dict"),
        (("put", "user/ada", "m1", "{oops"), "Expecting property name"),
        (("put", "", "m1", '{"content": "x"}'), "empty"),
        (("search", "tea", "--filter", "{bad"), "Expecting property name"),
    ],
)
def test_bad_input_is_a_clear_error_and_stores_nothing(db, args, message):
    out = cli("store", *args, "--db", db, ok=False)
    assert message in out
    assert "Traceback" not in out
    with SQLiteStore(db) as store:
        assert store.search(()) == []


def _export(db: str, path: Path) -> list[dict]:
    cli("memories", "export", str(path), "--db", db)
    return [json.loads(line) for line in path.read_text().splitlines()]


def _seed(db: str) -> None:
    with SQLiteStore(db, index={"embed": "local", "fields": ["content"]}) as store:
        store.put(("user", "ada"), "fact", {"kind": "fact", "content": "Lives in Munich"})
        store.put(("user", "ada"), "quiet", {"content": "Not searchable"}, index=False)
        store.put(("user", "ada", "episodes"), "e1", {"content": "Met Bob"}, ttl=90.5)
        store.put(("user", "bob"), "m1", {"content": "Bob ünïcode ✓", "n": [1, {"x": None}]})


def test_round_trip_sqlite_postgres_sqlite_keeps_every_field(tmp_path, pg_server):  # noqa: F811
    source = str(tmp_path / "source.db")
    _seed(source)
    first = _export(source, tmp_path / "a.jsonl")
    assert len(first) == 4
    by_key = {(tuple(r["namespace"]), r["key"]): r for r in first}
    assert by_key[("user", "ada"), "quiet"]["indexed"] is False
    assert by_key[("user", "ada"), "fact"]["indexed"] is True
    assert by_key[("user", "ada", "episodes"), "e1"]["ttl"] == 90.5
    assert by_key[("user", "ada", "episodes"), "e1"]["expires_at"] is not None

    dbname = conninfo_to_dict(pg_server.fresh_database())["dbname"]
    url = pg_server.uri(dbname)
    out = cli("memories", "import", str(tmp_path / "a.jsonl"), "--db", url)
    assert "imported 4 items" in out
    second = _export(url, tmp_path / "b.jsonl")

    back = str(tmp_path / "back.db")
    cli("memories", "import", str(tmp_path / "b.jsonl"), "--db", back)
    third = _export(back, tmp_path / "c.jsonl")

    def norm(rows):
        return sorted(rows, key=lambda r: (r["namespace"], r["key"]))

    assert norm(second) == norm(first)
    assert norm(third) == norm(first)

    # Indexing came across too: the quiet item is not found, the fact is.
    hits = cli("store", "search", "Munich", "--namespace", "user/ada", "--db", url)
    assert "Lives in Munich" in hits
    found = cli("store", "search", "searchable", "--namespace", "user/ada", "--db", url)
    assert "Not searchable" not in found
    assert "1 more without a score" in found
    every = cli("store", "search", "searchable", "--namespace", "user/ada", "--db", url, "--all")
    assert any(r.split("│")[1:2] == ["     - "] and "quiet" in r for r in every.splitlines())


def test_export_of_one_namespace(db, tmp_path):
    _seed(db)
    rows = _export_ns(db, tmp_path / "ada.jsonl", "user/ada")
    assert {tuple(r["namespace"]) for r in rows} == {("user", "ada"), ("user", "ada", "episodes")}


def _export_ns(db: str, path: Path, ns: str) -> list[dict]:
    cli("memories", "export", str(path), "--namespace", ns, "--db", db)
    return [json.loads(line) for line in path.read_text().splitlines()]


GOOD = '{"namespace": ["user", "ada"], "key": "k%d", "value": {"content": "fact %d"}}'


def test_malformed_lines_are_reported_with_numbers_and_nothing_is_imported(db, tmp_path):
    lines = [
        GOOD % (1, 1),
        "{not json",
        GOOD % (3, 3),
        '{"namespace": "user", "key": "k", "value": {}}',
        '{"namespace": ["user"], "key": "k", "value": [1]}',
        '{"namespace": ["user"], "key": "k", "value": {}, "ttl": -5}',
        '{"namespace": ["user"], "key": "k", "value": {}, "created_at": "yesterday"}',
        "",
        GOOD % (9, 9),
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    out = cli("memories", "import", str(path), "--db", db, ok=False)
    assert "5 malformed line(s), nothing imported" in out
    for number in (2, 4, 5, 6, 7):
        assert f"line {number}:" in out
    assert "--skip-bad" in out
    with SQLiteStore(db) as store:
        assert store.search(()) == []

    out = cli("memories", "import", str(path), "--db", db, "--skip-bad")
    assert "imported 3 items" in out and "skipped line 2" in out
    with SQLiteStore(db) as store:
        assert sorted(i.key for i in store.search(("user", "ada"))) == ["k1", "k3", "k9"]


def test_missing_file_is_a_clear_error(db, tmp_path):
    out = cli("memories", "import", str(tmp_path / "nope.jsonl"), "--db", db, ok=False)
    assert "nope.jsonl" in out and "Traceback" not in out


def test_line_separators_in_values_survive_export_and_import(db, tmp_path):
    text = "one\u2028two\u2029three\x85four\x0bfive"
    with SQLiteStore(db) as store:
        store.put(("user", "ada"), "m1", {"content": text})
        store.put(("user", "ada"), "m2", {"content": "plain"})
    path = tmp_path / "sep.jsonl"
    cli("memories", "export", str(path), "--db", db)
    raw = path.read_bytes()
    # Escaped, so readers that split at Unicode line breaks see two lines too.
    assert len(raw.decode().splitlines()) == 2 and b"\\u2028" in raw
    back = str(tmp_path / "back.db")
    assert "imported 2 items (2 new, 0 replaced)" in cli(
        "memories", "import", str(path), "--db", back
    )
    with SQLiteStore(back) as store:
        assert store.get(("user", "ada"), "m1").value == {"content": text}
    # A file with the separators raw (as earlier exports wrote them) reads the same.
    raw_path = tmp_path / "raw.jsonl"
    raw_path.write_text(
        json.dumps(
            {"namespace": ["user", "ada"], "key": "m1", "value": {"content": text}},
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    again = str(tmp_path / "again.db")
    cli("memories", "import", str(raw_path), "--db", again)
    with SQLiteStore(again) as store:
        assert store.get(("user", "ada"), "m1").value == {"content": text}


def test_undecodable_and_too_deep_lines_are_named_not_a_traceback(db, tmp_path):
    path = tmp_path / "odd.jsonl"
    deep = '{"namespace": ["u"], "key": "d", "value": {"v": ' + "[" * 100_000 + "]" * 100_000 + "}}"
    path.write_bytes(
        b"\n".join([(GOOD % (1, 1)).encode(), b'{"k": "\xff"}', deep.encode()]) + b"\n"
    )
    result = runner.invoke(app, ["memories", "import", str(path), "--db", db])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert "line 2: not UTF-8 text (byte 0xff" in result.output
    assert "line 3: nested too deeply" in result.output
    out = cli("memories", "import", str(path), "--db", db, "--skip-bad")
    assert "skipped line 2" in out and "skipped line 3" in out and "imported 1 items" in out


def test_replacing_existing_items_needs_replace(db, tmp_path):
    with SQLiteStore(db) as store:
        store.put(("user", "bob"), "m1", {"content": "Bob likes coffee"})
    path = tmp_path / "edited.jsonl"
    rows = [
        {"namespace": ["user", "ada"], "key": "m1", "value": {"content": "Ada likes tea"}},
        {"namespace": ["user", "bob"], "key": "m1", "value": {"content": "rewritten"}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = cli("memories", "import", str(path), "--db", db, ok=False)
    assert "1 item(s) would replace existing ones" in out and "user/bob" in out
    assert "--replace" in out
    with SQLiteStore(db) as store:
        assert store.get(("user", "bob"), "m1").value == {"content": "Bob likes coffee"}
        assert store.get(("user", "ada"), "m1") is None  # nothing imported
    out = cli("memories", "import", str(path), "--db", db, "--replace")
    assert "imported 2 items (1 new, 1 replaced)" in out
    with SQLiteStore(db) as store:
        assert store.get(("user", "bob"), "m1").value == {"content": "rewritten"}
