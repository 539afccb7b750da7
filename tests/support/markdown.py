"""Markdown as a renderer reads it: the tables of a document, parsed by markdown-it-py (installed
with rich) as CommonMark with GitHub's pipe tables, the dialect GitHub renders job summaries and
pull request comments in. A cell that breaks (an unescaped ``|``) shows as a row of the wrong
width or a table that never forms."""

from __future__ import annotations

from dataclasses import dataclass

from markdown_it import MarkdownIt

_PARSER = MarkdownIt("commonmark").enable("table")


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    """Each row's cells as text (inline Markdown resolved: ``a\\|b`` reads ``a|b``)."""


def tables(markdown: str) -> list[Table]:
    """Every table of ``markdown``, in order."""
    found: list[Table] = []
    header: list[str] = []
    rows: list[list[str]] = []
    row: list[str] = []
    cell: list[str] | None = None
    for token in _PARSER.parse(markdown):
        if token.type == "tr_open":
            row = []
        elif token.type in ("th_open", "td_open"):
            cell = []
        elif token.type == "inline" and cell is not None:
            cell.append("".join(child.content for child in token.children or ()
                                if child.type in ("text", "code_inline")))
        elif token.type in ("th_close", "td_close") and cell is not None:
            row.append("".join(cell))
            cell = None
        elif token.type == "tr_close":
            if header:
                rows.append(row)
            else:
                header = row
        elif token.type == "table_close":
            found.append(Table(tuple(header), tuple(tuple(r) for r in rows)))
            header, rows = [], []
    return found


def html(markdown: str) -> str:
    """``markdown`` rendered to HTML."""
    return _PARSER.render(markdown)
