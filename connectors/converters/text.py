"""Plain text and source code: the file's text as it is.

`convert(data, path, max_bytes) -> Document`; raises SkipEntity when the bytes are not text.
"""
from __future__ import annotations

from pathlib import Path

from connectors.converters._common import Document, decode_text

EXTENSIONS = frozenset({
    # plain text, config and data
    ".txt", ".text", ".rst", ".adoc", ".org", ".tex", ".log", ".json", ".jsonl", ".yaml",
    ".yml", ".toml", ".ini", ".cfg", ".conf", ".xml", ".properties",
    # source code
    ".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".java", ".go", ".rs", ".c",
    ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".cs", ".rb", ".php", ".swift", ".kt", ".kts",
    ".scala", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".sql", ".css", ".scss", ".sass",
    ".less", ".vue", ".svelte", ".lua", ".r", ".pl", ".pm", ".dart", ".ex", ".exs", ".erl",
    ".hs", ".clj", ".groovy", ".gradle", ".tf", ".proto", ".graphql", ".m", ".mm", ".jl",
    ".zig", ".nim", ".ml", ".fs", ".elm",
})


def convert(data: bytes, path: Path, max_bytes: int) -> Document:
    return Document(text=decode_text(data))
