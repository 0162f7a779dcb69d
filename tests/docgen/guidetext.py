"""How the guide tests read a page: its prose split into sentences, its fenced blocks, its figures.

Prose is what a reader reads as sentences: paragraphs and list items outside fenced blocks and tables,
headings left out; a code span counts as one word (a command is read as one thing)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE_PAGES = sorted([ROOT / "README.md", *(ROOT / "docs" / "guide").glob("*.md"),
                      ROOT / "docs" / "gpu-onebox.md", ROOT / "docs" / "onebox-verdict.md"])

FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.S | re.M)
ABBREVIATIONS = {"e.g.": "eg", "i.e.": "ie", "etc.": "etc", "vs.": "vs"}
# A sentence ends at . ! or ? followed by a space and a capital, a digit, a code span or a bracket.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`(\[\"*])")


@dataclass(frozen=True)
class Block:
    info: str  # the fence's info string: "sh", "sh run", "yaml", ...
    text: str
    line: int  # where the block starts in its page, 1-based

    @property
    def language(self) -> str:
        return self.info.split()[0] if self.info.split() else ""

    @property
    def runs(self) -> bool:
        """Tagged `run`: the docs test executes it as written."""
        return "run" in self.info.split()[1:]


def blocks(text: str) -> list[Block]:
    return [Block(m.group(1).strip(), m.group(2), text.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(text)]


def paragraphs(text: str) -> list[str]:
    """The prose of a page: each paragraph or list item as one string."""
    text = FENCE.sub("", text)
    out: list[str] = []
    current: list[str] = []
    for line in text.splitlines() + [""]:
        stripped = line.strip()
        starts_item = bool(re.match(r"^([-*]|\d+\.)\s", stripped))
        if not stripped or stripped.startswith(("#", "|", "<!--")) or starts_item:
            if current:
                out.append(" ".join(current))
            current = []
            if starts_item:
                current = [re.sub(r"^([-*]|\d+\.)\s+", "", stripped)]
            continue
        current.append(stripped)
    return [p for p in out if p]


def sentences(text: str) -> list[str]:
    found: list[str] = []
    for para in paragraphs(text):
        para = re.sub(r"`[^`]*`", "CODE", para)
        para = re.sub(r"\]\([^)]*\)", "]", para)
        for short, plain in ABBREVIATIONS.items():
            para = para.replace(short, plain)
        found += [s for s in SENTENCE_END.split(para) if s.strip()]
    return found


def words(sentence: str) -> int:
    return len(sentence.split())
