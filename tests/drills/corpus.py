"""A folder of a few hundred generated Markdown files for the drills: most of one chunk, every
tenth of several, each with words of its own so that a search can find it."""
from __future__ import annotations

import random
from pathlib import Path

WORDS = ("harbour lantern orchard granite meadow copper velvet summit glacier prairie canyon beacon "
         "quarry thicket lagoon cobalt saffron juniper bramble falcon otter walnut cedar tundra").split()


def unique_word(n: int) -> str:
    """A word no other file has, e.g. `zq17x`: what a search for file `n` looks for."""
    return f"zq{n}x"


def write_corpus(root: Path, files: int = 300, seed: int = 7) -> Path:
    """Write `files` Markdown files under `root` (in 10 folders); returns `root`."""
    rng = random.Random(seed)
    for n in range(files):
        sentences = 40 if n % 10 == 0 else 3
        body = " ".join(" ".join(rng.choice(WORDS) for _ in range(12)) + "." for _ in range(sentences))
        path = root / f"folder{n % 10}" / f"note{n:04d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\ntitle: Note {n}\n---\nThe note {unique_word(n)} says: {body}\n", encoding="utf-8")
    return root
