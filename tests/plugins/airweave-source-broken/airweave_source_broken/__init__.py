"""A plugin package whose source module fails to import."""
