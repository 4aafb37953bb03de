"""Helpers for testing and benchmarking with real components (no mocks)."""

from .postgres import EmbeddedPostgres, start_embedded_postgres

__all__ = ["EmbeddedPostgres", "start_embedded_postgres"]
