"""A source module that fails at import, as a plugin with a missing dependency does."""
import airweave_source_broken_missing_dependency  # noqa: F401  (no such module)
