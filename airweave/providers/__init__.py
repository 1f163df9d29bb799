"""Embedding, rerank and language-model providers. No Django models, no database."""
