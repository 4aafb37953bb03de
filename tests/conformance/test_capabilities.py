"""The optional capabilities of :mod:`langmem_ext.stores.capabilities`: a
backend claiming ``capabilities`` implements all three, and export/import use
them (timestamps restored, one transaction); any other ``BaseStore`` is
exported and imported through its API."""

from __future__ import annotations

import io
import json

from langmem_ext.stores.capabilities import BulkImport, IndexedFields, PagedExport
from langmem_ext.stores.retriever import item_text
from langmem_ext.stores.transfer import export_jsonl, import_jsonl

INDEX = {"embed": lambda texts: [[1.0, 0.0]] * len(texts), "dims": 2, "fields": ["content"]}


def test_a_backend_declares_its_capabilities_and_transfer_uses_them(make_api):
    api = make_api(index=INDEX)
    store, claims = api.store, api.has("capabilities")
    declared = [isinstance(store, c) for c in (PagedExport, BulkImport, IndexedFields)]
    assert declared == [claims] * 3
    if claims:
        assert [list(p) for p in store.indexed_fields] == [["content"]]
    line = {
        "namespace": ["user", "ada"],
        "key": "k1",
        "value": {"content": "Likes tea", "note": "x"},
        "created_at": "2024-01-02T03:04:05+00:00",
        "updated_at": "2024-01-02T03:04:05+00:00",
    }
    report = import_jsonl(store, [json.dumps(line)])
    # Only a bulk importer restores the timestamps the lines carry.
    assert (report.imported, report.timestamps_restored) == (1, claims)
    out = io.StringIO()
    assert export_jsonl(store, out) == 1
    (row,) = [json.loads(x) for x in out.getvalue().splitlines()]
    assert (row["namespace"], row["key"], row["value"]) == (
        line["namespace"],
        line["key"],
        line["value"],
    )
    # The retriever's text is what the index embeds, whichever way it is found.
    assert item_text(store, line["value"]) == "Likes tea"
