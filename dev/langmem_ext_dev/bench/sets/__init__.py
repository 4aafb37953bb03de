"""Retrieval sets written for this project (see docs/retrieval-sets.md)."""
