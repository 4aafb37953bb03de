"""Offline stand-ins for examples and tests: scripted chat models that play a
conversation or an extraction without a network (:mod:`.chat`).

Examples:
    >>> from langmem_ext.testing.chat import ScriptedExtractionModel
    >>> ScriptedExtractionModel([[("Lives in Berlin", "context", 0.9)]]).calls
    0
"""
