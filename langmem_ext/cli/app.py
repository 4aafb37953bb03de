"""``langmem-ext``: the command line. Each command is a thin call into the library.

Only the command line itself is imported to start: a command imports the
library when it runs, and the ``memories`` and ``store`` groups (built from
the engine's catalogue) when they are used, so ``langmem-ext --help`` answers
without loading the stores, the engine or LangChain.
"""

from __future__ import annotations

import importlib
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, ClassVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperGroup

from .bench_retrieval import bench_retrieval
from .dev import dev_module, eval_extraction
from .extras import needs_extra
from .ui import ui

#: The groups imported when used: name -> (module, the help line ``--help`` shows).
LAZY_GROUPS = {
    "memories": (".memories", "Look at, fix, back up and move memories."),
    "store": (".store", "The store's items in every namespace (what the database holds)."),
}


class _LazyGroup(TyperGroup):
    """A command group whose module is imported when the group is used."""

    def __init__(self, name: str, module: str, help: str) -> None:
        super().__init__(name=name, help=help, no_args_is_help=True)
        self._module = module
        self._real: Any = None

    def real(self) -> Any:
        if self._real is None:
            module = importlib.import_module(self._module, __package__)
            self._real = typer.main.get_command(module.app)
            self._real.name = self.name
        return self._real

    def make_context(
        self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any
    ) -> Any:
        return self.real().make_context(info_name, args, parent=parent, **extra)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return self.real().get_command(ctx, cmd_name)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.real().list_commands(ctx))


class _Root(TyperGroup):
    """The top-level group: its own commands, with the lazy groups after ``mcp``."""

    _lazy: ClassVar[dict[str, _LazyGroup]] = {}

    def list_commands(self, ctx: Any) -> list[str]:
        names = list(super().list_commands(ctx))
        at = names.index("mcp") + 1 if "mcp" in names else len(names)
        return names[:at] + list(LAZY_GROUPS) + names[at:]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in LAZY_GROUPS:
            if cmd_name not in self._lazy:
                self._lazy[cmd_name] = _LazyGroup(cmd_name, *LAZY_GROUPS[cmd_name])
            return self._lazy[cmd_name]
        return super().get_command(ctx, cmd_name)


app = typer.Typer(
    help="Long-term memory for LangGraph agents: embedded SQLite store with hybrid search.",
    no_args_is_help=True,
    add_completion=False,
    cls=_Root,
)


def _version(show: bool) -> None:
    if show:
        from importlib.metadata import version

        typer.echo(f"langmem-ext {version('langmem-ext')}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Long-term memory for LangGraph agents."""


@app.command()
def demo(
    db: Annotated[
        Path | None,
        typer.Option(help="SQLite file to create (must not exist); default: a temp file."),
    ] = None,
) -> None:
    """Store sample memories in a fresh SQLite file and run hybrid, vector,
    keyword and filtered searches, printing the hits with their scores.

    Example: langmem-ext demo --db /tmp/memories.db
    """
    from ..errors import LangmemError
    from .demo import run_demo

    console = Console()
    path = db or Path(tempfile.mkdtemp(prefix="langmem-ext-")) / "demo.db"
    started = time.perf_counter()
    try:
        results = run_demo(path)
    except (LangmemError, FileExistsError) as e:
        raise typer.BadParameter(str(e)) from e
    console.print(f"[bold]Store:[/bold] {path}  (embedder: local multilingual-e5-small, 384 dims)")
    for r in results:
        flt = f"  filter={r.filter}" if r.filter else ""
        console.print(
            f"\n[bold]{escape(r.title)}[/bold]: "
            + escape(f"{'/'.join(r.namespace)}  query={r.query!r}{flt}  mode={r.mode}"),
            markup=True,
            highlight=False,
        )
        table = Table()
        table.add_column("score", justify="right")
        table.add_column("item")
        table.add_column("content")
        for score, where, content in r.hits:
            table.add_row("-" if score is None else f"{score:.3f}", where, content)
        console.print(table)
    console.print(f"done in {time.perf_counter() - started:.1f} s")


@app.command()
def mcp(
    db: Annotated[str, typer.Option(help="SQLite file or postgresql:// URL.")] = "memories.db",
    transport: Annotated[str, typer.Option(help="stdio or http.")] = "stdio",
    host: Annotated[str, typer.Option(help="HTTP address (keep 127.0.0.1 unless proxied).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8000,
    callers: Annotated[
        Path | None,
        typer.Option(
            help="Callers JSON (bearer tokens → tenant, user); default: $LANGMEM_EXT_CALLERS."
        ),
    ] = None,
    token: Annotated[
        str | None, typer.Option(help="stdio: act as the caller of this token.")
    ] = None,
    user_id: Annotated[
        str | None, typer.Option(help="stdio, or HTTP with --allow-anonymous: the one local user.")
    ] = None,
    allow_anonymous: Annotated[
        bool,
        typer.Option(help="HTTP: serve requests without a token as --user-id (one local user)."),
    ] = False,
    embed: Annotated[str, typer.Option(help="Embedder: local, none, or provider:model.")] = "local",
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(help="HTTP: also answer to this host name (a reverse proxy's); repeatable."),
    ] = None,
    create: Annotated[
        bool, typer.Option(help="Create the SQLite file if it does not exist yet.")
    ] = False,
) -> None:
    """Serve the memory tools over MCP (stdio, or streamable HTTP on /mcp).

    Example: langmem-ext mcp --db memories.db --transport http --callers callers.json
    """
    needs_extra("mcp", "mcp", "uvicorn")
    from ..engine import MemoryContext
    from ..errors import LangmemError
    from ..servers.callers import Callers
    from ..servers.hosts import allowed_hosts
    from ..servers.mcp import create_mcp_server
    from .dbopen import open_store

    if transport not in ("stdio", "http"):
        raise typer.BadParameter(f"transport must be stdio or http, got {transport!r}")
    # One line per event on stderr (the SDK's default wraps a failed call's
    # message over many lines); stdout stays the protocol's, for stdio.
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        anonymous_http = transport == "http" and allow_anonymous and callers is None
        needs_callers = callers is not None or token is not None or transport == "http"
        known = Callers.load(callers) if needs_callers and not anonymous_http else None
        caller = None
        if token is not None:
            caller = known.authenticate(f"Bearer {token}")  # type: ignore[union-attr]
        elif user_id is not None:
            caller = MemoryContext(user_id=user_id)
        if transport == "http" and allow_anonymous and caller is None:
            raise typer.BadParameter("--allow-anonymous needs --user-id (the one local user)")
        if transport == "stdio" and caller is None:
            raise typer.BadParameter("stdio needs --token or --user-id: who is the caller?")
        with open_store(db, embed=None if embed == "none" else embed, create=create) as store:
            server = create_mcp_server(
                store,
                callers=known,
                caller=caller,
                allow_anonymous=allow_anonymous,
                url=f"http://{host}:{port}",
                allowed_hosts=allowed_hosts(host, allowed_host or []),
            )
            if transport == "stdio":
                server.run_stdio()
            else:
                server.run_http(host, port)
    except LangmemError as e:
        raise typer.BadParameter(str(e)) from e


bench_app = typer.Typer(help="Benchmarks you can rerun on your machine.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")
bench_app.command("retrieval")(bench_retrieval)


@bench_app.command("locomo")
def bench_locomo(
    data: Annotated[Path, typer.Option(help="LoCoMo JSON file (e.g. locomo10.json).")],
    out: Annotated[Path, typer.Option(help="Directory for locomo.json/png.")] = Path(
        "bench-results"
    ),
    backends: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated: sqlite,postgres,inmemory (default: all three; "
            "with --answer-model: sqlite)"
        ),
    ] = None,
    docs: Annotated[
        str | None,
        typer.Option(
            help="Document sets: turns,observations,facts (facts: what reflection stores, "
            "recalled through the memory engine; default: turns,observations; with "
            "--answer-model: turns)"
        ),
    ] = None,
    date_prefix: Annotated[
        bool, typer.Option(help="Prefix each turn with its session date.")
    ] = True,
    captions: Annotated[bool, typer.Option(help="Append shared photos' captions.")] = True,
    vector_weight: Annotated[
        float, typer.Option(help="Hybrid fusion weight of the vector side.")
    ] = 0.5,
    context_turns: Annotated[
        int, typer.Option(help="Neighbouring turns (each side) indexed as keyword context.")
    ] = 2,
    context_weight: Annotated[float, typer.Option(help="BM25 weight of that context.")] = 0.5,
    conversations: Annotated[
        str,
        typer.Option(
            help="Only the first N conversations (0: all), or those named: conv-26,conv-30."
        ),
    ] = "0",
    questions: Annotated[
        int, typer.Option(help="Only the first N questions of each conversation (0: all).")
    ] = 0,
    stages: Annotated[
        str,
        typer.Option(
            help="Re-ranking stages measured on each hybrid search: feedback,group,diversify"
        ),
    ] = "",
    candidates: Annotated[int, typer.Option(help="Results a re-ranking stage reorders.")] = 50,
    rerank: Annotated[
        str,
        typer.Option(
            help="Re-rankers through the stores' re-ranking stage, comma-separated: oracle@N "
            "(knows the evidence: the ceiling of a perfect re-ranker of N candidates), "
            "feedback@N (query_feedback) or chat:MODEL@N (chat_reranker over that model)"
        ),
    ] = "",
    facts_window: Annotated[
        int,
        typer.Option(
            help="Turns per extraction call of the facts set (a fact's provenance names "
            "every turn of its window)."
        ),
    ] = 1,
    answer_model: Annotated[
        str | None,
        typer.Option(
            help="Answer every question from the retrieved memories with this model and "
            "grade the answers: a LangChain model string (openai:gpt-4o-mini), or the "
            "model name to send to --base-url."
        ),
    ] = None,
    judge_model: Annotated[
        str | None,
        typer.Option(help="The judge (LLM-as-judge, CORRECT/WRONG); default: the answer model."),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            help="An OpenAI-compatible server for the answer (and reflect) model, "
            "e.g. http://127.0.0.1:8765/v1 (key: $OPENAI_API_KEY, else none)."
        ),
    ] = None,
    judge_base_url: Annotated[
        str | None, typer.Option(help="The judge's server (default: --base-url).")
    ] = None,
    reflect_model: Annotated[
        str | None,
        typer.Option(
            help="With --answer-model: the model reflection extracts the facts set with "
            "(default: scripted, LoCoMo's own observations)."
        ),
    ] = None,
    full_context: Annotated[
        bool,
        typer.Option(help="With --answer-model: also answer from the whole conversation."),
    ] = False,
    errata: Annotated[
        Path | None,
        typer.Option(
            help="Corrections of the answer key (JSON, the LoCoMo audit's format), applied "
            "before grading."
        ),
    ] = None,
    context_tokens: Annotated[
        int,
        typer.Option(help="The reflect model's context size (a local server's n_ctx)."),
    ] = 8192,
    k: Annotated[int, typer.Option(help="With --answer-model: memories per question.")] = 10,
    concurrency: Annotated[
        int, typer.Option(help="With --answer-model: questions answered at once.")
    ] = 1,
    timeout: Annotated[float, typer.Option(help="Seconds per model call.")] = 120.0,
) -> None:
    """Score recall@k of LoCoMo evidence for every backend and search mode; with
    --answer-model, answer every question from the retrieved memories and grade
    the answers (LLM judge, token F1, BLEU-1), with latency and tokens per question.

    Example: langmem-ext bench locomo --data path/to/locomo10.json
    """
    from rich.progress import Progress

    lo = dev_module("bench.locomo")
    BACKENDS, DOC_SETS, STAGES = lo.BACKENDS, lo.DOC_SETS, lo.STAGES
    LocomoConfig, run_locomo, write_outputs = lo.LocomoConfig, lo.run_locomo, lo.write_outputs
    qa_mode = answer_model is not None
    if backends is None:
        backends = "sqlite" if qa_mode else "sqlite,postgres,inmemory"
    if docs is None:
        docs = "turns" if qa_mode else "turns,observations"
    first, named = _conversations(conversations)

    chosen = tuple(b.strip() for b in backends.split(",") if b.strip())
    unknown = [b for b in chosen if b not in BACKENDS]
    if unknown:
        raise typer.BadParameter(f"unknown backends {unknown}; choose from {sorted(BACKENDS)}")
    staged = tuple(s.strip() for s in stages.split(",") if s.strip())
    bad_stages = [s for s in staged if s not in STAGES]
    if bad_stages:
        raise typer.BadParameter(f"unknown stages {bad_stages}; choose from {sorted(STAGES)}")
    reranked = tuple(r.strip() for r in rerank.split(",") if r.strip())
    for spec in reranked:
        try:
            lo.parse_rerank(spec)
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None
    doc_sets = tuple(d.strip() for d in docs.split(",") if d.strip())
    bad_sets = [d for d in doc_sets if d not in DOC_SETS]
    if bad_sets or not (doc_sets or (qa_mode and full_context)):
        raise typer.BadParameter(f"unknown document sets {bad_sets}; choose from {list(DOC_SETS)}")
    if facts_window < 1:
        raise typer.BadParameter(f"--facts-window must be at least 1, got {facts_window}")
    if not data.exists():
        raise typer.BadParameter(f"{data} does not exist")
    if qa_mode:
        from .bench_qa import run_qa_command

        run_qa_command(
            data=data,
            out=out,
            backends=chosen,
            doc_sets=doc_sets,
            first=first,
            named=named,
            answer_model=answer_model or "",
            judge_model=judge_model,
            base_url=base_url,
            judge_base_url=judge_base_url,
            reflect_model=reflect_model,
            context_tokens=context_tokens,
            full_context=full_context,
            errata=errata,
            k=k,
            concurrency=concurrency,
            timeout=timeout,
            questions=questions,
            rerank=reranked,
            facts_window=facts_window,
            options={
                "date_prefix": date_prefix,
                "captions": captions,
                "vector_weight": vector_weight,
                "context_turns": context_turns,
                "context_weight": context_weight,
            },
        )
        return
    if named:
        raise typer.BadParameter("naming conversations needs --answer-model; give a number")
    cfg = LocomoConfig(
        data=data,
        backends=chosen,
        doc_sets=doc_sets,
        date_prefix=date_prefix,
        captions=captions,
        vector_weight=vector_weight,
        context_turns=context_turns,
        context_weight=context_weight,
        cache=out / "embeddings.db",
        conversations=first or None,
        questions=questions or None,
        stages=staged,
        candidates=candidates,
        rerank=reranked,
        facts_window=facts_window,
    )
    out.mkdir(parents=True, exist_ok=True)
    console = Console()
    with Progress(console=console, transient=True) as progress:
        result = run_locomo(cfg, progress)
    table = Table(title="LoCoMo retrieval, categories 1-4 (k counts dialog turns)")
    cats = ("multi-hop", "temporal", "open-domain", "single-hop")
    cols = ("documents", "retriever", "R@1", "R@5", "R@10", "R@20", *(f"{c} R@10" for c in cats))
    for col in (*cols, "search ms", "stage ms"):
        table.add_column(col, justify="left" if col in ("documents", "retriever") else "right")
    for r in result["rows"]:
        o, by = r["overall"], r["by_category"]
        table.add_row(
            r["doc_set"],
            r["retriever"],
            *(f"{o[k]:.3f}" for k in ("R@1", "R@5", "R@10", "R@20")),
            *(f"{by[c]['R@10']:.3f}" if c in by else "-" for c in cats),
            f"{r['search_ms_median']:.2f}",
            f"{r['stage_ms_median']:.2f}" if "stage_ms_median" in r else "",
        )
    if result["facts"]:
        table.caption = (
            "facts: what reflection stored, recalled with MemoryEngine.recall; the extraction "
            "model is scripted (LoCoMo's observations of the turns in each call), so these rows "
            "measure the pipeline and the search, not a model"
        )
    console.print(table)
    if result.get("query_embed_ms_median") is not None:
        console.print(
            f"query embedding (offline embedder, uncached, not in search ms): "
            f"{result['query_embed_ms_median']:.1f} ms median per question"
        )
    for label, t in result["facts"].items():
        console.print(
            f"facts ({label}): {t['offered']} offered for {t['observations']} observations in "
            f"{t['model_calls']} model calls; stored {t['stored']}, active {t['active']}; "
            f"screened {_reasons(t['screened'])}; skipped {_reasons(t['skipped'])}; merged "
            f"{t['merged']}; superseded {t['superseded']}; reflection took "
            f"{t['reflect_seconds']:.0f} s"
        )
    ev = result["evidence"]
    console.print(
        f"questions: {result['rows'][0]['questions']} in {len(result['conversations'])} "
        f"conversations; evidence ids repaired {ev.get('repaired', 0)}, split "
        f"{ev.get('split', 0)}, dropped malformed {ev.get('dropped_malformed', 0)}, dropped "
        f"unknown {ev.get('dropped_unknown', 0)}; questions without evidence "
        f"{ev.get('questions_without_evidence', 0)}; embedding took {result['embed_seconds']:.0f} s"
    )
    for path in write_outputs(result, out):
        console.print(f"wrote {path}")


def _conversations(value: str) -> tuple[int, tuple[str, ...]]:
    """``--conversations``: a count (0: all) or sample ids."""
    value = value.strip()
    if value.isdigit():
        return int(value), ()
    named = tuple(v.strip() for v in value.split(",") if v.strip())
    if not named:
        raise typer.BadParameter("--conversations: a number, or sample ids such as conv-26")
    return 0, named


def _reasons(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items())) or "0"


@bench_app.command("store")
def bench_store(
    sizes: Annotated[str, typer.Option(help="Comma-separated store sizes.")] = "1000,10000,100000",
    stores: Annotated[str, typer.Option(help="Comma-separated contenders.")] = (
        "sqlite,postgres,lg-inmemory,lg-sqlite,lg-postgres,lg-postgres-exact"
    ),
    kinds: Annotated[
        str, typer.Option(help="Comma-separated vector kinds: random, clustered, text.")
    ] = "random,clustered",
    queries: Annotated[int, typer.Option(help="Queries per case.")] = 50,
    load_budget: Annotated[
        float, typer.Option(help="Skip a contender whose load would take longer (minutes).")
    ] = 20.0,
    out: Annotated[Path, typer.Option(help="Directory for store.json/png.")] = Path(
        "bench-results"
    ),
    keep: Annotated[
        Path | None,
        typer.Option(
            help="Keep the vectors and file-based stores in this directory and reuse "
            "them in later runs of the same kind, size and query count."
        ),
    ] = None,
    large: Annotated[
        bool,
        typer.Option(help="Allow sizes above two million items (hours of loading, tens of GB)."),
    ] = False,
    neighbours: Annotated[
        int,
        typer.Option(
            help="Also search with this many CPU-bound processes running beside "
            "(quiet and busy figures side by side)."
        ),
    ] = 0,
) -> None:
    """Put throughput, open-to-first-result, memory and query latency (whole
    store, 10 % namespace, filter, small namespace) with recall@10 against exact
    search, for our stores and LangGraph's, in one run, each median beside its
    ratio to numpy brute force over the same vectors measured in the same run.

    Example: langmem-ext bench store --sizes 1000,10000 --kinds random
    """
    KINDS = dev_module("bench.store_data").KINDS
    speed = dev_module("bench.store_speed")
    CONTENDERS, report = speed.CONTENDERS, dev_module("bench.store_report").report

    names = [s.strip() for s in stores.split(",") if s.strip()]
    unknown = [n for n in names if n not in CONTENDERS]
    if unknown:
        raise typer.BadParameter(f"unknown stores {unknown}; choose from {sorted(CONTENDERS)}")
    kind_list = [k.strip() for k in kinds.split(",") if k.strip()]
    bad = [k for k in kind_list if k not in KINDS]
    if bad:
        raise typer.BadParameter(f"unknown kinds {bad}; choose from {list(KINDS)}")
    try:
        ns = [int(x) for x in sizes.split(",") if x.strip()]
    except ValueError as e:
        raise typer.BadParameter(f"--sizes must be integers: {e}") from e
    if neighbours < 0:
        raise typer.BadParameter("--neighbours must be 0 or more")
    if max(ns, default=0) > speed.LARGE and not large:
        raise typer.BadParameter(
            f"sizes above {speed.LARGE:,} items take hours and tens of GB: add --large to run them"
        )
    try:
        speed.check_disk(ns, names, keep or Path(tempfile.gettempdir()), keep is not None)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from e
    report(ns, names, kind_list, queries, out, load_budget * 60, Console(), keep, neighbours)


@bench_app.command("updates")
def bench_updates(
    people: Annotated[
        int, typer.Option(help="Relatives and friends the user talks about (<= 8).")
    ] = 8,
    updates: Annotated[int, typer.Option(help="Homes each of them has, one after another.")] = 5,
    k: Annotated[int, typer.Option(help="Memories recalled per question.")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of the generated story.")] = 0,
    embed: Annotated[
        str, typer.Option(help="Embedder of the store: none (keyword search) or local.")
    ] = "none",
    out: Annotated[Path, typer.Option(help="Directory for updates.json.")] = Path("bench-results"),
) -> None:
    """Knowledge updates, judge-free: the newest home of each person, reached
    by name and through a relation ("Ada's sister"), and the home at a past
    date, with a scripted extractor that names subjects and one that does not.

    Example: langmem-ext bench updates --people 8 --updates 5
    """
    up = dev_module("bench.updates")
    if not 1 <= people <= len(up.RELATIONS):
        raise typer.BadParameter(f"--people must be from 1 to {len(up.RELATIONS)}")
    if not 2 <= updates <= 10:
        raise typer.BadParameter("--updates must be from 2 to 10")
    if embed not in ("none", "local"):
        raise typer.BadParameter("--embed must be none or local")
    cfg = up.UpdatesConfig(people, updates, k, seed, None if embed == "none" else embed)
    result = up.run_updates(cfg)
    table = Table(title=f"knowledge updates: {result['turns']} turns, recall limit {k}")
    table.add_column("extractor")
    for what in ("current", "relation", "as_of"):
        table.add_column(f"{what} ({result['questions'][what]})", justify="right")
    table.add_column("recall ms (median)", justify="right")
    for kind in cfg.extractors:
        row = result[kind]
        cells = [f"{row[w]['accuracy']:.2f}" if row[w]["asked"] else "-" for w in
                 ("current", "relation", "as_of")]  # fmt: skip
        table.add_row(kind, *cells, f"{row['recall_ms_median']:.1f}")
    Console().print(table)
    Console().print(f"wrote {up.write_outputs(result, out)}", highlight=False)


app.command("eval-extraction")(eval_extraction)
app.command("ui")(ui)
