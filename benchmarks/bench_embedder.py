"""The offline default embedder: load time, throughput, and the cache.

    python benchmarks/bench_embedder.py [--locomo ../shared/data/locomo/locomo_dev.json] [--n 500]

With ``--locomo`` the texts are LoCoMo dialog turns (read from the given file,
never copied); otherwise synthetic sentences of similar length.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

LOAD = """
import time
t = time.perf_counter()
from langmem_ext.stores.embeddings import LocalEmbeddings
LocalEmbeddings().embed_query("warm up")
print(time.perf_counter() - t)
"""


def texts_from(locomo: Path | None, n: int) -> list[str]:
    if locomo is None:
        base = "I went hiking with my sister last weekend and we saw a waterfall near the lake"
        return [f"{base} ({i}); it was {'really ' * (i % 5)}great" for i in range(n)]
    out: list[str] = []
    for sample in json.loads(locomo.read_text()):
        conv = sample["conversation"]
        for key, turns in conv.items():
            if key.startswith("session_") and isinstance(turns, list):
                out.extend(f"{t['speaker']}: {t['text']}" for t in turns)
    return out[:n]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--locomo", type=Path, default=None)
    ap.add_argument("--n", type=int, default=500)
    args = ap.parse_args(argv)
    loads = [
        float(
            subprocess.run(
                [sys.executable, "-c", LOAD], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(3)
    ]
    from langmem_ext.stores.embeddings import resolve_index

    texts = texts_from(args.locomo, args.n)
    emb = resolve_index({"embed": "local", "cache": False}).embeddings
    t = time.perf_counter()
    emb.embed_documents(texts)
    cold = len(texts) / (time.perf_counter() - t)
    t = time.perf_counter()
    emb.embed_documents(texts)
    warm = len(texts) / (time.perf_counter() - t)
    t = time.perf_counter()
    for text in texts[:50]:
        emb.inner.embed_query(text)
    q_ms = (time.perf_counter() - t) / 50 * 1000
    print(
        f"texts: {len(texts)} ({'LoCoMo turns' if args.locomo else 'synthetic'}), "
        f"mean {sum(map(len, texts)) / len(texts):.0f} chars"
    )
    print(f"load (import + first query, fresh process): {min(loads):.2f} s best of 3")
    print(f"embed documents, batched: {cold:.1f} texts/s")
    print(f"embed documents again (cache hits): {warm:,.0f} texts/s")
    print(f"single query: {q_ms:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
