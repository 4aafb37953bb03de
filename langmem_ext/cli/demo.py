"""The ``langmem-ext demo`` scenario: a fresh SQLite file, a small sample of
memories for two users, hybrid, vector, keyword and filtered searches."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..stores import SQLiteStore


def _m(content: str, category: str, importance: int) -> dict[str, Any]:
    return {"content": content, "category": category, "importance": importance}


SAMPLE: dict[str, list[dict[str, Any]]] = {
    "ada": [
        {
            "content": "Prefers dark mode in every editor and terminal",
            "category": "preference",
            "importance": 4,
        },
        _m("Is allergic to peanuts and tree nuts", "health", 9),
        {
            "content": "Works as a backend engineer on the payments team",
            "category": "work",
            "importance": 6,
        },
        {
            "content": "Learning the cello; practices on Sunday mornings",
            "category": "hobby",
            "importance": 3,
        },
        {
            "content": "Her dog Biscuit is a golden retriever",
            "category": "personal",
            "importance": 5,
        },
        {
            "content": "Wants to run a half marathon in Lisbon next spring",
            "category": "goal",
            "importance": 7,
        },
        {
            "content": "Drinks green tea, never coffee after noon",
            "category": "preference",
            "importance": 2,
        },
    ],
    "bob": [
        {
            "content": "Prefers light themes with large fonts",
            "category": "preference",
            "importance": 4,
        },
        _m("Training for a triathlon in September", "goal", 8),
        _m("Vegetarian since 2019", "health", 6),
    ],
}

Query = tuple[str, tuple[str, ...], str, dict[str, Any] | None, str | None]
QUERIES: list[Query] = [
    # (title, namespace, query, filter, mode)
    ("hybrid search", ("user", "ada"), "food allergies", None, None),
    ("hybrid search", ("user", "ada"), "editor theme", None, None),
    ("rare word (keyword side finds it)", ("user", "ada"), "Biscuit", None, None),
    (
        "vector only: plain cosine",
        ("user", "ada"),
        "sports event she is preparing for",
        None,
        "vector",
    ),
    ("keyword only", ("user", "ada"), "tea", None, "keyword"),
    ("filtered: preferences", ("user", "ada"), "likes", {"category": "preference"}, None),
    ("filtered: importance >= 6", ("user", "ada"), "", {"importance": {"$gte": 6}}, None),
    ("another user's namespace", ("user", "bob"), "editor theme", None, None),
    ("all users, filter $in", ("user",), "goals", {"category": {"$in": ["goal"]}}, None),
]


@dataclass
class DemoResult:
    title: str
    namespace: tuple[str, ...]
    query: str
    filter: dict[str, Any] | None
    mode: str
    hits: list[tuple[float | None, str, str]]  # (score, namespace/key, content)


def run_demo(path: Path, embed: str = "local") -> list[DemoResult]:
    """Store the sample in a fresh store at ``path`` and run the demo searches.

    Examples:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> results = run_demo(d / "demo.db")
        >>> results[0].hits[0][2]
        'Is allergic to peanuts and tree nuts'
        >>> [hit[1] for hit in results[-2].hits]  # bob's namespace only
        ['user/bob/m0', 'user/bob/m2', 'user/bob/m1']
    """
    if path.exists():
        raise FileExistsError(f"{path} exists; the demo writes a fresh file, pass another --db")
    out: list[DemoResult] = []
    index = {"embed": embed, "fields": ["content"]}
    with SQLiteStore(path, index=index) as store:
        for user, memories in SAMPLE.items():
            for i, memory in enumerate(memories):
                store.put(("user", user), f"m{i}", memory)
        for title, ns, query, flt, mode in QUERIES:
            hits = store.search(
                ns,
                query=query or None,
                filter=flt,
                limit=3,
                mode=mode,  # type: ignore[arg-type]
            )
            out.append(
                DemoResult(
                    title,
                    ns,
                    query,
                    flt,
                    mode or store.search_mode,
                    [
                        (h.score, "/".join(h.namespace) + "/" + h.key, h.value["content"])
                        for h in hits
                    ],
                )
            )
    return out
