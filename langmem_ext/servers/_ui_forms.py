"""The memory browser's forms, made from the operation catalogue: the fields
of an operation's form, the values a submitted form gives it, what an edit
changed, and what forgetting does.

Examples:
    >>> from langmem_ext.engine.operations import OPERATIONS
    >>> [f["name"] for f in form_fields(OPERATIONS["store_rule"])]
    ['content', 'layer', 'scope', 'tags', 'derived_from']
"""

from __future__ import annotations

import io
import json
import typing
from typing import Any

from ..engine import OPERATIONS, Fact, MemoryContext, MemoryEngine, MemoryRecord, Spec
from ..stores.transfer import export_jsonl
from .values import alternatives, read, shape

__all__ = ["changed_fields", "export_own", "forget_effect", "form_fields", "form_values"]


def form_fields(spec: Spec[Any, Any], *only: str) -> list[dict[str, Any]]:
    """The fields of an operation's form: name, label, help, widget
    (``select`` for a choice, ``textarea`` for content, ``input`` otherwise),
    choices, whether required."""
    out = []
    for p in spec.offered():
        if only and p.public not in only:
            continue
        choices = [
            v
            for t in alternatives(p.annotation)
            if typing.get_origin(t) is typing.Literal
            for v in typing.get_args(t)
        ]
        widget = "select" if choices else "textarea" if p.name == "content" else "input"
        several = " Separate several with commas." if shape(p) == "list" else ""
        out.append(
            {
                "name": p.public,
                "label": p.public.replace("_", " "),
                "help": p.description + several,
                "widget": widget,
                "choices": choices,
                "required": p.required,
                "default": None if p.required or p.field.default is None else p.field.default,
            }
        )
    return out


def form_values(spec: Spec[Any, Any], form: Any) -> dict[str, Any]:
    """A submitted form as the operation's arguments: empty optional fields
    left out (the operation's defaults apply), the rest read as typed (a blank
    required field is passed on, for the operation to say what is wrong)."""
    out = {}
    for p in spec.offered():
        raw = form.get(p.public)
        if raw is None:
            continue
        text = str(raw)
        if text.strip():
            out[p.name] = read(p, text.strip())
        elif p.required:
            out[p.name] = text
    return out


def changed_fields(record: MemoryRecord, form: Any) -> tuple[Any, dict[str, Any]]:
    """What the edit form changed, compared with the memory it was made from:
    the new content (None if the same) and the other changed fields of a fact.
    An untouched field is never sent, so it cannot change by accident (a fact
    without a category stays without one)."""
    content = None
    if "content" in form:
        text = str(form.get("content", "")).replace("\r\n", "\n").strip()
        if isinstance(record.content, str):
            new: Any = text
            same = text == record.content.strip()
        else:
            try:
                new = json.loads(text)
            except ValueError:
                new = text
            same = new == record.content
        content = None if same else new
    changes: dict[str, Any] = {}
    if isinstance(record, Fact):
        category = str(form.get("category", "")).strip()
        if category and category != (record.category or ""):
            changes["category"] = category
        raw = str(form.get("confidence", "")).strip()
        if raw:
            param = {p.name: p for p in OPERATIONS["update_fact"].params}["confidence"]
            confidence = read(param, raw)
            if confidence != record.confidence:
                changes["confidence"] = confidence
    return content, changes


def forget_effect(record: MemoryRecord) -> str:
    """What forgetting this memory does, in words (shown before confirming)."""
    if record.damaged:
        return (
            "This stored item cannot be read as a memory (see why above), so it is "
            "removed for good: it cannot be undone. Its audit events stay."
        )
    state = {"fact": "retracted", "rule": "forgotten", "episode": "forgotten"}.get(
        record.type, "forgotten"
    )
    return (
        f"This {record.type} will be {state}: it is never recalled, searched or put in a "
        "prompt again. It stays in its history below (and in the audit). It cannot be undone "
        "here; to have it back, store it again."
    )


def export_own(engine: MemoryEngine, who: MemoryContext) -> str:
    """The caller's own memories as JSON Lines (the format ``langmem-ext
    memories import`` reads); never another user's, even below the caller's
    space (see :meth:`MemoryContext.owns`)."""
    space = engine.env(who).layer("user").ns
    out = io.StringIO()
    export_jsonl(engine.store, out, space, keep=lambda ns: who.owns(space, ns))
    return out.getvalue()
