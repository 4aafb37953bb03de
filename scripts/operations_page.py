"""Write docs/operations.md from the operation catalogue, or check that it is current.

    .venv/bin/python scripts/operations_page.py           # write the page
    .venv/bin/python scripts/operations_page.py --check   # fail if it is stale

Every memory operation is declared once (langmem_ext.engine.operations); this
page is made from those declarations, like every surface, so it cannot drift.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "operations.md"

INTRO = """\
# Memory operations

Every memory operation is declared once: its parameters (types, allowed values,
ranges and a one-line description), its result, the errors it can raise and who may
call it. The engine's methods, the agent tools, the MCP tools, the `langmem-ext
memories` commands and the memory browser are all made from these declarations, so
they take the same arguments, find the same memories and give the same errors. This
page is made from them too.

* **Python**: `engine.name(ctx, ...)` and `await engine.aname(ctx, ...)`; `ctx` is
  the caller (a `MemoryContext` or the run's config).
* **Tool**: the agent tool (`create_memory_tools(engine)`) and the MCP tool of that
  name. `tenant_id` is offered to admins only (`create_memory_tools(..., admin=True)`;
  over MCP, to callers with `memory:admin`). Read-only callers (`memory:read` without
  `memory:write`) are not offered the tools that write.
* **Command**: `langmem-ext memories <command> --user-id <user>` (see
  [the command line](cli.md)).
* **Browser**: the memory browser's pages run these operations, their forms made
  from the operation's parameters.
* **Errors**: every surface shows an error as `<CODE>: <message>`, with the same
  message: an error `ToolMessage` for an agent, an MCP result with `isError: true`,
  `error: ...` and exit status 1 on the command line, a message on the browser's page.
  A refused call changes nothing. `PROVIDER_ERROR` (the store failed; retried 3 times
  first) can come from any operation.
"""


def _type(schema: dict[str, Any]) -> str:
    """A parameter's JSON schema in a few words: its type, choices or range."""
    options = schema.get("anyOf", [schema])
    shown = []
    for s in options:
        if s.get("type") == "null":
            continue
        if "enum" in s:
            shown.append(" \\| ".join(f"`{v}`" for v in s["enum"]))
        elif s.get("type") == "array":
            inner = s.get("items", {})
            shown.append(f"list of {_type(inner) if inner else 'values'}")
        elif "minimum" in s and "maximum" in s:
            bounds = (s["minimum"], s["maximum"])
            low, high = (int(x) if float(x).is_integer() else x for x in bounds)
            shown.append(f"{s.get('type', 'number')} {low}–{high}")
        else:
            shown.append(s.get("type", "JSON"))
    return " or ".join(shown) or "JSON"


def render() -> str:
    from langmem_ext.agents.reflection.context import context
    from langmem_ext.engine.operations import OPERATIONS
    from langmem_ext.servers.ui import BROWSER_ACTIONS  # the browser's pages run these

    lines = [INTRO]
    specs = [*OPERATIONS.values(), context]
    lines += ["| operation | access | tool | command | browser |", "|---|---|---|---|---|"]
    for spec in specs:
        offered = "yes" if spec.name in BROWSER_ACTIONS else ""
        lines.append(
            f"| [`{spec.name}`](#{spec.name}) | {spec.access} | "
            f"{f'`{spec.tool}`' if spec.tool else ''} | "
            f"{f'`{spec.cli}`' if spec.cli else ''} | {offered} |"
        )
    for spec in specs:
        schema = spec.schema(admin=True)
        props, required = schema.get("properties", {}), set(schema.get("required", []))
        python = (
            "`memory_context(engine, ctx, ...)`"
            if spec.name == "context"
            else f"`engine.{spec.name}({'ctx, ' if spec.caller else ''}…)` / `a{spec.name}`"
        )
        lines += ["", f"## {spec.name}", "", spec.summary, ""]
        where = [f"Python: {python}"]
        if spec.tool:
            where.append(f"tool: `{spec.tool}`")
        if spec.cli:
            where.append(f"command: `langmem-ext memories {spec.cli}`")
        if spec.name in BROWSER_ACTIONS:
            where.append("browser")
        lines += ["; ".join(where) + f". Access: {spec.access}.", ""]
        if props:
            lines += ["| parameter | type | default | description |", "|---|---|---|---|"]
            internal = [p.public for p in spec.params if p.meta.internal]
            for name, p in props.items():
                default = "required" if name in required else f"`{p.get('default')}`"
                desc = p.get("description", "").replace("|", "\\|")
                lines.append(f"| `{name}` | {_type(p)} | {default} | {desc} |")
            if internal:
                lines += ["", f"Python only: {', '.join(f'`{n}`' for n in internal)}."]
            lines.append("")
        codes = ", ".join(dict.fromkeys(e.code for e in spec.errors))
        lines.append(f"Errors: {codes}.")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if the page is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        if PAGE.read_text() != text:
            print(f"{PAGE} is stale: run scripts/operations_page.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
