# ruff: noqa: E501  (the conversations are data: one paragraph a line)
"""The ``technical-long`` retrieval set: written for this project.

Long technical user/assistant conversations (six projects: a Python API, a
Rust CLI, a Kubernetes deployment, a data pipeline, a React app, firmware).
Each assistant answer is about 1,000 words (1,300–1,700 tokens): a specific opening, general
engineering advice, a code block, and a specific closing paragraph. The
general advice repeats across answers, as it does in real assistant chats, so
only the specific parts tell answers apart.

Categories say where the evidence is: ``head`` (in the first paragraph of a
long answer, within the embedder's 512-token window), ``tail`` (in its last
paragraph, past the window: truncated away from a one-vector-per-item index),
``user`` (in a short user turn), ``multi-hop`` (a user turn and an answer).
Two of the six conversations are held out (``split``): no tuning decision
may look at them.

``python -m langmem_ext_dev.bench.sets.technical`` rewrites
``technical_long.json`` beside this file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# General advice: repeated across answers (chosen by position), never evidence.
GENERAL = [
    "Before changing anything, it is worth writing down what you expect to happen and how you will know whether it worked. A short note with the symptom, the hypothesis and the measurement you will take keeps the investigation honest, and it becomes the description of the change when you open the pull request. Most debugging time is lost not on the fix itself but on chasing two or three explanations at once without deciding which observation would rule each of them out.",
    "Keep the change small enough that it can be reverted on its own. If the fix needs a refactor first, land the refactor as a separate commit with no behaviour change and let the test suite confirm that. Reviewers can then read the behavioural change in isolation, and if production shows a regression you can bisect to a commit that does exactly one thing. This discipline feels slow on the day but it pays for itself the first time something goes wrong at two in the morning.",
    "Logging deserves a moment of thought as well. Structured logs with a stable event name and a handful of fields are far easier to query than free-form sentences, and they survive refactoring because nobody is tempted to reword them. Include the identifiers you would need to correlate a request across services, but avoid logging payloads that may contain personal data. A log line that nobody reads costs storage and attention, so remove the ones that no longer answer a question.",
    "Tests should describe behaviour rather than implementation. A test that asserts on the exact sequence of internal calls breaks every time the code is reorganised, while a test that checks the observable result keeps protecting you through refactors. Where a test needs a real dependency such as a database, prefer starting a throwaway instance over mocking it: mocks encode your assumptions about the dependency, and the bugs that hurt are usually exactly where those assumptions are wrong.",
    "Configuration is another frequent source of surprises. Every setting should have a documented default, a single place where it is read, and a validation step at start-up that fails loudly with a message naming the setting and the accepted values. Reading environment variables deep inside the code makes behaviour depend on the machine in ways that are hard to reproduce, and silently falling back to a default when a value is malformed hides typos for months.",
    "Performance work starts with a measurement you trust. Run the benchmark several times, note the machine and its load, and look at the distribution rather than a single number, because the median and the tail often tell different stories. Profile before optimising: the slow part is rarely where intuition puts it. After the change, measure again under the same conditions and keep the script that produced the numbers next to the code so that the next person can rerun it.",
    "Think about failure modes explicitly. For every external call, decide what happens on a timeout, on a refused connection and on a malformed response, and make sure each case leaves the system in a state you can reason about. Retries need a budget and backoff with jitter, otherwise a brief outage turns into a thundering herd when the dependency comes back. Idempotency keys make retries safe for writes, and they are much easier to add before the first incident than after it.",
    "Documentation that lives next to the code tends to stay correct longer than a wiki page. A short README in the module explaining why it exists, what it owns and what it deliberately does not do saves every new contributor an afternoon. Examples that are executed as part of the test suite are the best kind, because they fail the build when they drift from reality. Diagrams are useful too, but only if someone updates them when the design changes.",
    "Dependencies are a long-term commitment. Before adding a library, check how actively it is maintained, how it handles security reports and whether its licence fits your distribution model. Pin versions in the lock file and let an automated tool propose upgrades in small batches, so that a breaking change shows up as one failing pull request rather than as a mysterious bug weeks later. Removing a dependency you no longer need is one of the cheapest ways to reduce risk.",
    "Observability closes the loop. Metrics tell you that something is wrong, traces tell you where, and logs tell you why. Choose a few service-level indicators that reflect what users experience, such as the latency of the main request and the rate of failed operations, and alert on those rather than on every internal counter. Dashboards should answer a specific question; a wall of graphs that nobody understands delays the response to an incident instead of speeding it up.",
    "Security reviews are cheapest at design time. Ask who can call each endpoint, what they can read or change, and what an attacker gains by replaying or tampering with a request. Validate input at the boundary, encode output for its context, and keep secrets out of source control and out of logs. Rotating a leaked credential is routine if the system was built to rotate credentials; it is a crisis if the value is hard-coded in three services.",
    "Finally, leave the codebase a little better than you found it. Rename the confusing variable you had to decode, delete the dead branch you confirmed is unreachable, and add the test that would have caught the bug you just fixed. These small improvements compound. A team that treats maintenance as part of every change rarely needs the big rewrite that everyone dreads, and new colleagues become productive faster because the code explains itself.",
    "When a problem only shows up in production, try to reproduce it with production-like data volumes and concurrency before touching the code. Many issues that look like logic errors are really timing or capacity problems that never appear with ten rows and one user. A staging environment that mirrors the production topology, even at a smaller scale, is worth its cost, and so is the ability to replay a sample of real traffic against a new build.",
    "Communicate the change to the people who depend on it. A short note in the team channel describing what changed, what to watch for and how to roll back turns a surprising deployment into a boring one. If the change alters an interface, give consumers a deprecation period and a migration guide instead of breaking them on the day. Boring deployments are the goal: they mean the risky thinking happened earlier, when it was cheap.",
]

# (conversation id, split, [turns]); a turn is ("user", text, date) or
# ("assistant", head, code, tail, date). Turn ids: "<conv>-t<n>" from 1.
CONVERSATIONS: list[tuple[str, str, list[tuple[Any, ...]]]] = [
    (
        "py-api",
        "dev",
        [
            (
                "user",
                "Our FastAPI billing service started returning 500s under load last week. It runs on Python 3.11 with SQLAlchemy 2 and asyncpg against PostgreSQL 15, deployed as four pods.",
                "2024-03-04T10:00:00",
            ),
            (
                "assistant",
                "The errors you pasted say 'QueuePool limit of size 5 overflow 10 reached, connection timed out, timeout 30'. That means every worker exhausted its connection pool: with four pods and the default pool of five connections plus ten overflow, requests queue for thirty seconds and then fail. The first fix is to raise pool_size to 20 with max_overflow 5 and to make sure sessions are closed at the end of each request through a dependency with a finally block.",
                "from sqlalchemy.ext.asyncio import create_async_engine, async_sessionmaker\n\nengine = create_async_engine(\n    DATABASE_URL,\n    pool_size=20,\n    max_overflow=5,\n    pool_pre_ping=True,\n    pool_recycle=1800,\n)\nSession = async_sessionmaker(engine, expire_on_commit=False)\n\nasync def get_session():\n    session = Session()\n    try:\n        yield session\n    finally:\n        await session.close()",
                "One more thing I noticed in your traceback: the invoice export endpoint opens a second session inside a loop over customers, which is why the pool drains so quickly during the nightly export at 02:15. Move the export to a background job with its own small pool of three connections, and cap it with a semaphore so that it can never take more than three connections from the shared database, whatever the number of customers.",
                "2024-03-04T10:05:00",
            ),
            (
                "user",
                "That helped a lot. Now a test is flaky: test_refund_rounding fails about one run in twenty on CI but never locally.",
                "2024-03-06T15:20:00",
            ),
            (
                "assistant",
                "A test that fails one run in twenty and never locally usually depends on ordering or time. In test_refund_rounding the refund amount is computed with float division and then rounded with Python's round, which uses banker's rounding, so 2.675 becomes 2.67 on some inputs. Switch money arithmetic to Decimal with ROUND_HALF_UP and quantize to two places; then the result no longer depends on the random amounts the fixture generates.",
                "from decimal import Decimal, ROUND_HALF_UP\n\nCENT = Decimal('0.01')\n\ndef refund_amount(paid: Decimal, days_used: int, days_total: int) -> Decimal:\n    share = Decimal(days_total - days_used) / Decimal(days_total)\n    return (paid * share).quantize(CENT, rounding=ROUND_HALF_UP)\n\ndef test_refund_rounding():\n    assert refund_amount(Decimal('10.00'), 1, 3) == Decimal('6.67')",
                "The reason it never failed on your laptop is the seed: your local pytest configuration sets -p randomly with a fixed seed of 1234 in setup.cfg, while CI runs with a fresh random seed every time. Keep the random seed on CI, since it is what found the bug, but print it in the test header so that any failure can be reproduced with pytest -p randomly -p seed=<value>.",
                "2024-03-06T15:30:00",
            ),
            (
                "user",
                "Next quarter we need to add Stripe webhooks. Our security team requires that every webhook is verified and replay-protected.",
                "2024-04-02T09:10:00",
            ),
            (
                "assistant",
                "For Stripe webhooks, verify the Stripe-Signature header with the endpoint's signing secret before parsing the body, and reject events whose timestamp is older than five minutes; that is what the library's construct_event does with its default tolerance of 300 seconds. Read the raw body bytes, not the parsed JSON, because re-serialising changes the bytes and breaks the signature.",
                "@app.post('/webhooks/stripe')\nasync def stripe_webhook(request: Request):\n    payload = await request.body()\n    signature = request.headers.get('stripe-signature', '')\n    try:\n        event = stripe.Webhook.construct_event(payload, signature, WEBHOOK_SECRET)\n    except (ValueError, stripe.error.SignatureVerificationError):\n        raise HTTPException(status_code=400)\n    if await seen_before(event['id']):\n        return {'status': 'duplicate'}\n    await handle(event)\n    return {'status': 'ok'}",
                "For replay protection beyond the timestamp window, store every processed event id in a table called processed_webhook_events with a unique constraint and a created_at column, and delete rows older than 30 days with a nightly job. The unique constraint makes the check race-free when Stripe retries an event while the first delivery is still being handled.",
                "2024-04-02T09:20:00",
            ),
        ],
    ),
    (
        "rust-cli",
        "dev",
        [
            (
                "user",
                "I'm writing a Rust command-line tool called logsift that filters large JSON log files. It is single-threaded today and takes 40 seconds on a 6 GB file.",
                "2024-05-10T20:00:00",
            ),
            (
                "assistant",
                "For logsift the bottleneck is almost certainly deserialising every line into a serde_json::Value. Since you only filter on three fields, derive a small struct with borrowed &str fields and use serde_json::from_slice on each line; borrowing avoids allocating a String per field. Reading with a BufReader of 1 MiB instead of the default 8 KiB also reduces system calls noticeably on large files.",
                "#[derive(serde::Deserialize)]\nstruct Line<'a> {\n    #[serde(borrow)]\n    level: &'a str,\n    #[serde(borrow)]\n    service: &'a str,\n    ts: u64,\n}\n\nfn keep(line: &[u8], want: &str) -> bool {\n    match serde_json::from_slice::<Line>(line) {\n        Ok(l) => l.level == want,\n        Err(_) => false,\n    }\n}",
                "To use more than one core, split the file into chunks at newline boundaries and process them with rayon's par_bridge, then write results in chunk order so the output stays deterministic. On your 6 GB sample with eight threads this kind of change typically brings the run from 40 seconds to about 6, and memory stays flat if each chunk is 64 MiB and you memory-map the file with the memmap2 crate.",
                "2024-05-10T20:10:00",
            ),
            (
                "user",
                "Parallel version works: 5.8 seconds. But users on Windows report that the output has mixed line endings.",
                "2024-05-18T11:00:00",
            ),
            (
                "assistant",
                "The mixed line endings come from writing with writeln!, which always emits a bare newline, while the input lines on Windows keep their carriage return because you split only on the newline byte. Strip a trailing carriage return from each line before parsing, and decide on one output convention; a --crlf flag that defaults to the platform's convention is what ripgrep-style tools usually do.",
                "fn trim_eol(mut line: &[u8]) -> &[u8] {\n    if let Some(b'\\n') = line.last() { line = &line[..line.len() - 1]; }\n    if let Some(b'\\r') = line.last() { line = &line[..line.len() - 1]; }\n    line\n}\n\nlet eol: &[u8] = if args.crlf { b\"\\r\\n\" } else { b\"\\n\" };\nout.write_all(trim_eol(line))?;\nout.write_all(eol)?;",
                'For the release, build the Windows binary with the x86_64-pc-windows-msvc target on a Windows runner rather than cross-compiling with mingw, and set the profile to lto = "fat" with codegen-units = 1. Your release checklist should also bump the version to 0.4.0 in Cargo.toml, since the --crlf flag is a visible change in behaviour.',
                "2024-05-18T11:15:00",
            ),
            (
                "user",
                "Last question for now: how should logsift handle gzip-compressed logs? About half our archives are .gz.",
                "2024-06-01T08:30:00",
            ),
            (
                "assistant",
                "For gzip input, detect the magic bytes 0x1f 0x8b at the start of the file rather than trusting the extension, and wrap the reader in flate2's MultiGzDecoder, which also handles files made of several concatenated gzip members, as logrotate produces. Compressed input cannot be memory-mapped and split at arbitrary offsets, so the parallel path needs a different design.",
                "use flate2::read::MultiGzDecoder;\n\nfn open(path: &Path) -> io::Result<Box<dyn BufRead>> {\n    let mut f = File::open(path)?;\n    let mut magic = [0u8; 2];\n    let n = f.read(&mut magic)?;\n    f.seek(SeekFrom::Start(0))?;\n    if n == 2 && magic == [0x1f, 0x8b] {\n        Ok(Box::new(BufReader::with_capacity(1 << 20, MultiGzDecoder::new(f))))\n    } else {\n        Ok(Box::new(BufReader::with_capacity(1 << 20, f)))\n    }\n}",
                "For compressed files, decompress on one thread and hand batches of 10,000 lines to a rayon pool through a bounded crossbeam channel of capacity 16; decompression with zlib-ng through flate2's zlib-ng feature runs at roughly 400 MB/s per core, so the filter threads stay busy. Expect gzip archives to take about twice as long as plain files of the same uncompressed size.",
                "2024-06-01T08:45:00",
            ),
        ],
    ),
    (
        "k8s",
        "dev",
        [
            (
                "user",
                "We run a Java recommendation service on Kubernetes 1.28 (EKS). Pods get OOMKilled a few times a day, with a memory limit of 2Gi.",
                "2024-02-12T13:00:00",
            ),
            (
                "assistant",
                "OOMKilled with a 2Gi limit on a Java service usually means the JVM's heap plus its off-heap memory exceed the container limit. By default the JVM sizes the heap at a quarter of the container memory, but metaspace, thread stacks, direct buffers and the code cache come on top. Set -XX:MaxRAMPercentage=70 instead of a fixed -Xmx so the heap follows the limit, and enable native memory tracking to see what else grows.",
                "containers:\n  - name: recommender\n    image: registry.internal/recommender:2.14.0\n    env:\n      - name: JAVA_TOOL_OPTIONS\n        value: >-\n          -XX:MaxRAMPercentage=70\n          -XX:NativeMemoryTracking=summary\n          -XX:+ExitOnOutOfMemoryError\n    resources:\n      requests: {cpu: '1', memory: 2Gi}\n      limits: {memory: 2Gi}",
                "Looking at the native memory summary you attached, the real culprit is the Netty direct buffer pool of the gRPC client, which grew to 610 MB because each request to the feature store creates a new channel. Reuse one ManagedChannel per target for the whole process and cap direct memory with -XX:MaxDirectMemorySize=256m; with that, the pods should stay well under the limit.",
                "2024-02-12T13:20:00",
            ),
            (
                "user",
                "Memory is stable now. Traffic doubles on weekends; can we autoscale on something better than CPU?",
                "2024-02-20T17:40:00",
            ),
            (
                "assistant",
                "CPU is a poor signal for this service because it spends most of its time waiting on the feature store. Scale on requests in flight per pod instead: expose a gauge from the service, collect it with Prometheus, and let KEDA's Prometheus scaler drive the HorizontalPodAutoscaler. A target of 40 in-flight requests per pod matches the latency knee you measured.",
                "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata:\n  name: recommender\nspec:\n  scaleTargetRef:\n    name: recommender\n  minReplicaCount: 6\n  maxReplicaCount: 30\n  triggers:\n    - type: prometheus\n      metadata:\n        serverAddress: http://prometheus.monitoring:9090\n        query: sum(recommender_inflight_requests)\n        threshold: '40'",
                "Set the scale-down stabilisation window to 600 seconds so that the weekend's short dips do not remove pods that are needed again a minute later, and add a PodDisruptionBudget with minAvailable of 80 percent so that node upgrades on Sunday nights never take more than a fifth of the replicas at once.",
                "2024-02-20T17:55:00",
            ),
            (
                "user",
                "We also want zero-downtime deploys. Right now each rollout causes a spike of 503s for about ten seconds.",
                "2024-03-05T09:00:00",
            ),
            (
                "assistant",
                "The ten seconds of 503s during a rollout come from the load balancer still sending traffic to pods that have already received SIGTERM. Add a preStop hook that sleeps for 15 seconds so that the endpoint is removed from the AWS load balancer target group before the JVM starts shutting down, and set terminationGracePeriodSeconds to 45 to leave room for in-flight requests.",
                "lifecycle:\n  preStop:\n    exec:\n      command: ['sh', '-c', 'sleep 15']\nterminationGracePeriodSeconds: 45\nreadinessProbe:\n  httpGet: {path: /ready, port: 8080}\n  periodSeconds: 5\n  failureThreshold: 2\nstrategy:\n  rollingUpdate: {maxSurge: 25%, maxUnavailable: 0}",
                "Your readiness endpoint currently returns 200 as soon as the HTTP server starts, before the model file of 1.2 GB has been loaded from S3, which is the second cause of errors right after a pod starts. Make /ready return 503 until the model has loaded and the first warm-up prediction has succeeded; the model takes about 40 seconds to load, so also raise the startupProbe's failureThreshold to 12 with a 5-second period.",
                "2024-03-05T09:15:00",
            ),
        ],
    ),
    (
        "pipeline",
        "dev",
        [
            (
                "user",
                "Our nightly dbt run on Snowflake builds the orders mart. Since we added the returns source, the run takes 3 hours instead of 50 minutes.",
                "2024-07-08T07:00:00",
            ),
            (
                "assistant",
                "A jump from 50 minutes to three hours after adding one source points at a join that explodes. In fct_orders the returns are joined on order_id only, but returns has one row per returned line item, so every order with several returned items is duplicated before the aggregation. Aggregate returns to one row per order in an intermediate model, int_returns_by_order, and join that instead.",
                "-- models/intermediate/int_returns_by_order.sql\nselect\n    order_id,\n    count(*) as returned_items,\n    sum(refund_amount) as refunded_total,\n    max(returned_at) as last_returned_at\nfrom {{ ref('stg_returns') }}\ngroup by order_id",
                "The second cost is that fct_orders is rebuilt completely every night. Make it incremental with unique_key order_id and a lookback of three days on updated_at, because returns can arrive up to 72 hours after the order changes; use the merge strategy on Snowflake and run a full refresh every Sunday at 04:00 to catch anything the lookback missed.",
                "2024-07-08T07:20:00",
            ),
            (
                "user",
                "The incremental model works, 35 minutes now. But finance says revenue for June is off by about 0.4 percent compared to the ERP.",
                "2024-07-15T14:00:00",
            ),
            (
                "assistant",
                "A difference of 0.4 percent between the mart and the ERP usually comes from time zones or currency conversion rather than missing rows. Your orders are stamped in UTC while the ERP books revenue in Europe/Berlin local time, so orders placed between 22:00 and 24:00 UTC on the last day of the month land in a different month in each system.",
                "select\n    date_trunc('month', convert_timezone('UTC', 'Europe/Berlin', ordered_at)) as booking_month,\n    sum(amount_eur) as revenue_eur\nfrom {{ ref('fct_orders') }}\ngroup by 1",
                "The remainder of the gap is exchange rates: the mart converts foreign-currency orders with the daily rate from the ECB feed, while the ERP uses the monthly average rate that the treasury team publishes on the first working day of each month. Add a dim_fx_monthly table loaded from the treasury spreadsheet and use it for the finance reports, keeping daily rates for operational dashboards.",
                "2024-07-15T14:20:00",
            ),
            (
                "user",
                "Good. One more: upstream sometimes delivers the returns file late, after our 01:00 run, and then the numbers are wrong all day.",
                "2024-08-01T06:30:00",
            ),
            (
                "assistant",
                "Late upstream files are best handled by making the dependency explicit instead of relying on the schedule. Add a source freshness check on raw.returns with warn_after 6 hours and error_after 12 hours, and run dbt source freshness as the first step of the job so that the run stops, rather than publishing numbers without the returns.",
                "sources:\n  - name: raw\n    tables:\n      - name: returns\n        loaded_at_field: _loaded_at\n        freshness:\n          warn_after: {count: 6, period: hour}\n          error_after: {count: 12, period: hour}",
                "In Airflow, replace the fixed 01:00 schedule with a sensor that waits for the file's _SUCCESS marker in the s3://acme-landing/returns/ prefix, with a timeout of four hours and reschedule mode so that it does not hold a worker slot; if the file has not arrived by 05:00 the on-call data engineer, currently Priya, gets a page and the dashboards show a banner saying the returns are delayed.",
                "2024-08-01T06:50:00",
            ),
        ],
    ),
    (
        "react-app",
        "held-out",
        [
            (
                "user",
                "Our React 18 dashboard for warehouse managers is slow: the stock table with 5,000 rows takes about 4 seconds to render after each filter change.",
                "2024-09-02T10:00:00",
            ),
            (
                "assistant",
                "Rendering 5,000 table rows on every filter change is the problem itself: the browser lays out every row even though only about thirty are visible. Virtualise the table with TanStack Virtual so that only the visible rows and a small overscan are mounted; render time then depends on the viewport, not on the data size.",
                "const rowVirtualizer = useVirtualizer({\n  count: rows.length,\n  getScrollElement: () => parentRef.current,\n  estimateSize: () => 36,\n  overscan: 10,\n});\n\nreturn (\n  <div ref={parentRef} style={{ height: 600, overflow: 'auto' }}>\n    <div style={{ height: rowVirtualizer.getTotalSize(), position: 'relative' }}>\n      {rowVirtualizer.getVirtualItems().map((v) => (\n        <StockRow key={rows[v.index].sku} row={rows[v.index]} top={v.start} />\n      ))}\n    </div>\n  </div>\n);",
                "The React profiler output you shared also shows that every StockRow re-renders when the filter changes because the onReorder callback is recreated on each render of StockTable. Wrap StockRow in React.memo and create the callback with useCallback; together with virtualisation this should bring the update after a filter change from 4 seconds down to roughly 80 milliseconds.",
                "2024-09-02T10:20:00",
            ),
            (
                "user",
                "Huge improvement. Now the managers want the table to update live when stock changes, without reloading.",
                "2024-09-16T13:00:00",
            ),
            (
                "assistant",
                "For live stock updates, a server-sent events stream is simpler than WebSockets here because the data flows in one direction only. Subscribe once at the top of the dashboard and patch the TanStack Query cache for the affected SKU instead of refetching the whole table, so that a single change re-renders one row.",
                "useEffect(() => {\n  const source = new EventSource('/api/stock/stream');\n  source.onmessage = (e) => {\n    const change = JSON.parse(e.data);\n    queryClient.setQueryData(['stock'], (old) =>\n      old.map((r) => (r.sku === change.sku ? { ...r, qty: change.qty } : r)),\n    );\n  };\n  return () => source.close();\n}, [queryClient]);",
                "Your nginx in front of the API buffers responses by default, which would hold the events back; set proxy_buffering off and proxy_read_timeout 3600s on the /api/stock/stream location, and have the server send a comment line as a heartbeat every 25 seconds so that the corporate proxy at the warehouses, which closes idle connections after 30 seconds, keeps the stream open.",
                "2024-09-16T13:20:00",
            ),
            (
                "user",
                "Last thing: the bundle is 2.3 MB and the warehouse tablets are old Android devices on slow Wi-Fi.",
                "2024-10-01T09:00:00",
            ),
            (
                "assistant",
                "A 2.3 MB bundle on old tablets over slow Wi-Fi means the first load is dominated by download and parse time. Run the bundle analyser first; in dashboards like yours, the usual suspects are a charting library imported whole, moment.js with all its locales, and an icon package imported by name from its root.",
                "// vite.config.ts\nexport default defineConfig({\n  build: {\n    rollupOptions: {\n      output: {\n        manualChunks: { charts: ['echarts'], vendor: ['react', 'react-dom'] },\n      },\n    },\n  },\n});\n\nconst ReportsPage = lazy(() => import('./pages/ReportsPage'));",
                "In your analyser report the largest item is echarts at 980 KB, used only on the reports page: load that page lazily so that the stock table never downloads it, and replace moment with date-fns, which removes another 290 KB. With gzip and a one-year cache on the hashed assets, the initial download for the stock table should fall to about 350 KB.",
                "2024-10-01T09:25:00",
            ),
        ],
    ),
    (
        "firmware",
        "held-out",
        [
            (
                "user",
                "I'm writing firmware for a soil moisture sensor on an STM32L072 with a LoRa radio. Battery life is 3 months but we need 2 years on two AA cells.",
                "2024-04-15T18:00:00",
            ),
            (
                "assistant",
                "Going from three months to two years on two AA cells means the average current must drop to roughly 130 microamps. The STM32L072 can sleep in Stop mode at about one microamp, so the budget is dominated by how long the MCU and the radio stay awake. Measure with a current profiler first; I suspect the MCU never reaches Stop mode because the SysTick interrupt keeps waking it.",
                "void enter_stop_mode(void) {\n    HAL_SuspendTick();\n    __HAL_RCC_PWR_CLK_ENABLE();\n    HAL_PWREx_EnableUltraLowPower();\n    HAL_PWREx_EnableFastWakeUp();\n    HAL_PWR_EnterSTOPMode(PWR_LOWPOWERREGULATOR_ON, PWR_STOPENTRY_WFI);\n    SystemClock_Config();\n    HAL_ResumeTick();\n}",
                "Your schematic also shows the capacitive moisture probe powered directly from the 3.3 V rail, so it draws 4 mA all the time. Power it from GPIO PB5 through a P-channel MOSFET, switch it on 20 milliseconds before each measurement and off right after; that change alone saves more than the sleep mode does at your hourly measurement interval.",
                "2024-04-15T18:20:00",
            ),
            (
                "user",
                "With Stop mode and the switched probe we're at 48 microamps average. The LoRa transmissions now seem to be the biggest part.",
                "2024-05-06T21:00:00",
            ),
            (
                "assistant",
                "At 48 microamps average, the transmissions matter most. Use adaptive data rate so that sensors close to the gateway transmit at SF7 instead of SF12: time on air for your 11-byte payload drops from about 1.3 seconds to 50 milliseconds, and the energy per message falls by a similar factor.",
                "static void send_reading(uint16_t moisture, int16_t temp_c10) {\n    uint8_t payload[4];\n    payload[0] = moisture >> 8;\n    payload[1] = moisture & 0xff;\n    payload[2] = temp_c10 >> 8;\n    payload[3] = temp_c10 & 0xff;\n    LmHandlerAppData_t data = { .Port = 2, .Buffer = payload, .BufferSize = 4 };\n    LmHandlerSend(&data, LORAMAC_HANDLER_UNCONFIRMED_MSG, NULL, false);\n}",
                "Also stop sending confirmed uplinks every hour: the acknowledgement window keeps the radio in receive mode for two slots, and when the downlink is lost the stack retransmits up to eight times. Send unconfirmed messages and request a confirmation only once a day with the battery voltage, and pack the payload as 4 bytes instead of the 11-byte JSON-like string you send today.",
                "2024-05-06T21:20:00",
            ),
            (
                "user",
                "Field test update: in winter some sensors reset randomly when temperatures drop below minus 10 degrees.",
                "2024-12-10T08:00:00",
            ),
            (
                "assistant",
                "Random resets below minus ten degrees point at the supply, not the firmware. Alkaline AA cells lose much of their capacity and their internal resistance rises sharply in the cold, so the voltage sags when the radio transmits, and the brown-out reset triggers. Check the reset cause register at start-up and log it, so that you can tell brown-out resets from watchdog resets in the field data.",
                "void log_reset_cause(void) {\n    if (__HAL_RCC_GET_FLAG(RCC_FLAG_PORRST)) record_event(EVT_RESET_POR);\n    else if (__HAL_RCC_GET_FLAG(RCC_FLAG_IWDGRST)) record_event(EVT_RESET_WATCHDOG);\n    else if (__HAL_RCC_GET_FLAG(RCC_FLAG_SFTRST)) record_event(EVT_RESET_SOFTWARE);\n    __HAL_RCC_CLEAR_RESET_FLAGS();\n}",
                "The robust fix for winter deployments is to switch to lithium iron disulfide AA cells, such as Energizer Ultimate Lithium, which are rated down to minus 40 degrees, and to add a 470 microfarad low-ESR capacitor across the radio supply to cover the transmit peak. Lower the brown-out threshold from level 3 to level 1, about 1.8 volts, in the option bytes as well.",
                "2024-12-10T08:20:00",
            ),
        ],
    ),
]

# (question, [turn numbers], category) per conversation
QUESTIONS: dict[str, list[tuple[str, list[int], str]]] = {
    "py-api": [
        ("Which error message showed the connection pool was exhausted?", [2], "head"),
        ("What pool size and overflow did we settle on for the billing service?", [2], "head"),
        ("Why did the pool drain during the nightly invoice export?", [2], "tail"),
        ("What caused test_refund_rounding to fail intermittently?", [4], "head"),
        ("Why did the refund test never fail on my laptop?", [4], "tail"),
        ("Which table stores processed webhook event ids and how long are they kept?", [6], "tail"),
        (
            "What versions of Python, SQLAlchemy and PostgreSQL does the billing service use?",
            [1],
            "user",
        ),
        (
            "How long may a Stripe webhook's timestamp be old, and what did security require?",
            [5, 6],
            "multi-hop",
        ),
    ],
    "rust-cli": [
        ("How long did logsift take on the 6 GB file before any optimisation?", [1], "user"),
        ("Why was deserialising each log line slow in logsift?", [2], "head"),
        ("How should the parallel version split the file and keep output order?", [2], "tail"),
        ("Where did the mixed line endings on Windows come from?", [4], "head"),
        ("Which version number should the release with the --crlf flag get?", [4], "tail"),
        ("How do we detect gzip files in logsift?", [6], "head"),
        ("How big are the batches and the channel for compressed input?", [6], "tail"),
        (
            "How fast was the parallel version, and which target builds the Windows binary?",
            [3, 4],
            "multi-hop",
        ),
    ],
    "k8s": [
        ("What memory limit do the recommendation pods have?", [1], "user"),
        ("Which JVM flag makes the heap follow the container limit?", [2], "head"),
        ("What was really using the memory in the recommender pods?", [2], "tail"),
        ("Which metric should the autoscaler use instead of CPU?", [4], "head"),
        ("What PodDisruptionBudget and scale-down window did we choose?", [4], "tail"),
        ("Why were there 503 errors during each rollout?", [6], "head"),
        (
            "Why does the readiness endpoint need to wait, and how big is the model file?",
            [6],
            "tail",
        ),
        (
            "Which Kubernetes version do we run, and how many replicas at minimum?",
            [1, 4],
            "multi-hop",
        ),
    ],
    "pipeline": [
        ("Why did the dbt run go from 50 minutes to 3 hours?", [2], "head"),
        (
            "What lookback does the incremental fct_orders model use, and when is the full refresh?",
            [2],
            "tail",
        ),
        ("How big was the revenue difference with the ERP for June?", [3], "user"),
        ("Which time zone does the ERP book revenue in?", [4], "head"),
        ("Which exchange rate does the ERP use?", [4], "tail"),
        ("What freshness thresholds are set on the returns source?", [6], "head"),
        (
            "Who gets paged when the returns file is late, and where does the sensor look?",
            [6],
            "tail",
        ),
        (
            "How long did the run take after the incremental change, and at what time does it start?",
            [3, 5],
            "multi-hop",
        ),
    ],
    "react-app": [
        (
            "How many rows does the stock table have, and how long did a filter change take?",
            [1],
            "user",
        ),
        ("Which library should virtualise the stock table?", [2], "head"),
        ("Why did every stock row re-render on a filter change?", [2], "tail"),
        ("Why use server-sent events rather than WebSockets for live stock?", [4], "head"),
        ("What nginx settings and heartbeat keep the stock stream open?", [4], "tail"),
        ("What usually bloats a dashboard bundle?", [6], "head"),
        ("What is the largest package in the bundle, and what replaces moment?", [6], "tail"),
    ],
    "firmware": [
        ("Which microcontroller and radio does the soil sensor use?", [1], "user"),
        ("What average current do we need for two years on AA cells?", [2], "head"),
        ("How should the moisture probe be powered?", [2], "tail"),
        ("Which spreading factor should sensors near the gateway use?", [4], "head"),
        (
            "How often should the sensor send confirmed uplinks, and how big is the payload?",
            [4],
            "tail",
        ),
        ("Why do sensors reset in the cold?", [6], "head"),
        ("Which batteries and capacitor fix the winter resets?", [6], "tail"),
        (
            "What was the average current after the Stop mode fix, and what is the brown-out threshold now?",
            [3, 6],
            "multi-hop",
        ),
    ],
}


def _answer(n: int, head: str, code: str, tail: str) -> str:
    # Rotate the general advice so that answers differ in order, not content.
    k = len(GENERAL)
    before = [GENERAL[(n * 3 + i) % k] for i in range(7)]
    after = [GENERAL[(n * 3 + 7 + i) % k] for i in range(4)]
    parts = [head, *before, f"```\n{code}\n```", *after, tail]
    return "\n\n".join(parts)


def build() -> dict[str, Any]:
    """The set in the retrieval-set shape (see ``retrieval_data``)."""
    convs = []
    serial = 0
    for cid, split, turns in CONVERSATIONS:
        out = []
        for i, turn in enumerate(turns, 1):
            if turn[0] == "user":
                _, text, date = turn
                speaker = "user"
            else:
                _, head, code, tail, date = turn
                serial += 1
                text, speaker = _answer(serial, head, code, tail), "assistant"
            out.append({"id": f"{cid}-t{i}", "speaker": speaker, "text": text, "timestamp": date})
        qs = [
            {"question": q, "evidence": [f"{cid}-t{n}" for n in ev], "category": cat}
            for q, ev, cat in QUESTIONS[cid]
        ]
        convs.append({"id": cid, "split": split, "turns": out, "questions": qs})
    return {
        "name": "technical-long",
        "language": "en",
        "description": "Long technical user/assistant conversations; answers of about 1,000 "
        "words with code; categories say whether the evidence is at the head or the tail "
        "of a long answer. Written for this project.",
        "source": "written for langmem-ext",
        "license": "same as the project",
        "scope": "set",
        "conversations": convs,
    }


if __name__ == "__main__":
    out = Path(__file__).with_name("technical_long.json")
    out.write_text(json.dumps(build(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}")
