"""Search operations: one class per file, each declaring what it depends on (see base.py)."""
