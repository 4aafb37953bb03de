"""Store contract: semantic, keyword and hybrid search."""

from __future__ import annotations

import pytest

from tests.embeddings import WordEmbeddings, cosine

TEXTS = [
    "The user prefers dark mode in every editor",
    "User is allergic to peanuts",
    "Favourite drink is green tea with jasmine",
    "Works as a nurse at the city hospital",
    "Is learning to play the cello on weekends",
    "Lives in Lisbon near the river",
    "Birthday is on the fourth of July",
    "Owns a golden retriever named Biscuit",
]


def _index(emb=None, fields=("text",)):
    return {"dims": 64, "embed": emb or WordEmbeddings(64), "fields": list(fields)}


async def _seed(api, n=None, ns=("mem",)):
    n = len(TEXTS) if n is None else n
    for i in range(n):
        await api.put(ns, f"k{i}", {"text": TEXTS[i % len(TEXTS)] + (f" #{i}" if i >= 8 else "")})


async def test_vector_scores_are_plain_cosine(make_api):
    emb = WordEmbeddings(64)
    api = make_api(index=_index(emb))
    await _seed(api)
    query = "which drink does the user like, tea?"
    got = await api.search(("mem",), query=query, limit=8, mode="vector")
    assert len(got) == 8
    qv = emb.embed_query(query)
    for r in got:
        assert r.score == pytest.approx(cosine(qv, emb.embed_query(r.value["text"])), abs=1e-5)
    assert [r.score for r in got] == sorted((r.score for r in got), reverse=True)
    assert got[0].key == "k2"


async def test_deep_offsets_return_full_exact_pages(make_api):
    api = make_api(index=_index())
    await _seed(api, n=57)
    full = await api.search(("mem",), query="tea with the user", limit=57, mode="vector")
    assert len(full) == 57
    paged = []
    for off in range(0, 57, 7):
        page = await api.search(
            ("mem",), query="tea with the user", limit=7, offset=off, mode="vector"
        )
        assert len(page) == min(7, 57 - off)
        paged.extend(page)
    assert [r.key for r in paged] == [r.key for r in full]
    assert len({r.key for r in paged}) == 57


async def test_deep_offsets_hybrid_and_filtered(make_api):
    api = make_api(index=_index())
    api.need("modes")
    await _seed(api, n=60)
    flt = {"text": {"$contains": "e"}}
    full = await api.search(("mem",), query="tea nurse", filter=flt, limit=100)
    paged = []
    for off in range(0, len(full) + 10, 9):
        paged.extend(await api.search(("mem",), query="tea nurse", filter=flt, limit=9, offset=off))
    assert [r.key for r in paged] == [r.key for r in full]
    assert all(0.0 <= r.score <= 1.0 for r in full)


async def test_reput_with_new_text_leaves_no_stale_vector(make_api):
    api = make_api(index=_index())
    await _seed(api)
    await api.put(("mem",), "k1", {"text": "Collects vintage typewriters"})
    got = await api.search(("mem",), query="allergic to peanuts", limit=3, mode="vector")
    assert "k1" not in [r.key for r in got[:1]]
    got = await api.search(("mem",), query="vintage typewriters", limit=1, mode="vector")
    assert got[0].key == "k1"
    if api.has("keyword"):
        kw = await api.search(("mem",), query="peanuts", limit=3, mode="keyword")
        assert kw == []  # no item still matches the old words


async def test_reput_with_index_false_drops_vector(make_api):
    api = make_api(index=_index())
    api.need("no_stale_vectors")
    await _seed(api)
    await api.put(("mem",), "k1", {"text": "User is allergic to peanuts"}, index=False)
    got = await api.search(("mem",), query="allergic to peanuts", limit=8, mode="vector")
    assert got[-1].key == "k1" and got[-1].score is None
    assert all(r.score is not None for r in got[:-1])


async def test_unindexed_items_come_last_with_no_score(make_api):
    api = make_api(index=_index())
    await _seed(api, n=4)
    await api.put(("mem",), "raw", {"text": "dark mode"}, index=False)
    got = await api.search(("mem",), query="dark mode", limit=10, mode="vector")
    assert [r.key for r in got][-1] == "raw"
    assert got[-1].score is None
    assert len(got) == 5


async def test_index_fields_override_per_put(make_api):
    api = make_api(index=_index(fields=["text"]))
    await api.put(
        ("m",), "a", {"text": "nothing relevant", "other": "espresso machine"}, index=["other"]
    )
    await api.put(("m",), "b", {"text": "something else entirely", "other": "zzz"})
    got = await api.search(("m",), query="espresso machine", limit=2, mode="vector")
    assert got[0].key == "a" and got[0].score > 0.9


async def test_hybrid_finds_rare_words_the_embedding_misses(make_api):
    # An embedder blind to the rare word: only keyword search can find it.
    emb = WordEmbeddings(64, ignore=frozenset({"quokka"}))
    api = make_api(index=_index(emb))
    api.need("modes")
    await _seed(api)
    await api.put(("mem",), "rare", {"text": "Saw a quokka on Rottnest"})
    vec = await api.search(("mem",), query="quokka", limit=3, mode="vector")
    assert "rare" not in [r.key for r in vec[:1]]
    hyb = await api.search(("mem",), query="quokka", limit=3)
    assert hyb[0].key == "rare"
    assert 0.0 <= hyb[-1].score <= hyb[0].score <= 1.0


async def test_keyword_search_without_embedder(make_api):
    api = make_api()
    api.need("keyword")
    await _seed(api)
    got = await api.search(("mem",), query="Who is ALLERGIC to peanut?", limit=3)
    assert got[0].key == "k1"
    assert got[0].score == 1.0
    # No mode asked for, no embedder: LangGraph's contract (a query without an
    # index narrows nothing), the matches ranked first, everything else after.
    assert got[1].score is None
    # FTS syntax in user text is data, not a query language
    got = await api.search(("mem",), query='jasmine" AND * ) (', limit=1)
    assert got[0].key == "k2"


async def test_keyword_mode_returns_only_matches(make_api):
    # A keyword search is an answer to its words: an item without them is no
    # result, whether the store has an embedder or not, at any page.
    for index in (_index(), None):
        api = make_api(index=index) if index else make_api()
        api.need("keyword")
        await _seed(api)
        await api.put(("mem",), "raw", {"text": "zebra crossing"}, index=False)
        assert await api.search(("mem",), query="zebra", mode="keyword") == []
        assert await api.search(("mem",), query="quagga", mode="keyword", offset=3) == []
        got = await api.search(("mem",), query="tea", mode="keyword", limit=50)
        assert got and all(0.0 < r.score <= 1.0 for r in got)
        assert all("tea" in r.value["text"].lower() for r in got)
        assert max(r.score for r in got) == 1.0
        # Words with no searchable term match nothing either.
        assert await api.search(("mem",), query="?!", mode="keyword") == []


async def test_search_modes_validated(make_api):
    api = make_api()
    api.need("modes")
    await _seed(api, n=2)
    with pytest.raises(ValueError, match="embedder"):
        await api.search(("mem",), query="x", mode="vector")
    with pytest.raises(ValueError, match="hybrid"):
        await api.search(("mem",), query="x", mode="fuzzy")


async def test_namespace_scoped_vector_search(make_api):
    api = make_api(index=_index())
    await _seed(api, ns=("user", "a"))
    await _seed(api, ns=("user", "b"))
    got = await api.search(("user", "a"), query="tea", limit=100, mode="vector")
    assert len(got) == len(TEXTS)
    assert {tuple(r.namespace) for r in got} == {("user", "a")}


async def test_context_fields_are_keyword_only_and_weighted_lower(make_api):
    index = {**_index(WordEmbeddings(16)), "dims": 16, "context_fields": ["context"]}
    api = make_api(index=index)
    api.need("context_fields")
    await api.put(("c",), "own", {"text": "we adopted a kitten", "context": "nice weather"})
    await api.put(("c",), "near", {"text": "so cute", "context": "we adopted a kitten"})
    await api.put(("c",), "none", {"text": "pottery class", "context": "clay"})
    got = await api.search(("c",), query="kitten", mode="keyword")
    assert [r.key for r in got[:2]] == ["own", "near"]
    assert 0 < got[1].score < got[0].score == 1.0
    assert len(got) == 2  # "none" has no kitten: not a keyword result
    # a re-put without context drops the old context from the keyword index
    await api.put(("c",), "near", {"text": "so cute"})
    got = await api.search(("c",), query="kitten", mode="keyword")
    assert [r.key for r in got] == ["own"]
