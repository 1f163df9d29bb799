"""Connectors keep no tables of their own: their data lives in airweave.collections."""
