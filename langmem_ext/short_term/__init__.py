"""LangMem's ``langmem.short_term`` names: running summaries of long threads
(:mod:`langmem_ext.langmem.summarization`).

Examples:
    >>> from langmem_ext.short_term import RunningSummary
    >>> RunningSummary("so far: hello").summary
    'so far: hello'
"""

from ..langmem.summarization import (
    RunningSummary,
    SummarizationNode,
    SummarizationResult,
    asummarize_messages,
    summarize_messages,
)

__all__ = [
    "RunningSummary",
    "SummarizationNode",
    "SummarizationResult",
    "asummarize_messages",
    "summarize_messages",
]
