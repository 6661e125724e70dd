"""Does a text column read like prose? A cheap, honest measure: the share of adjacent word pairs in which both
words are English function words (articles, pronouns, prepositions, auxiliaries, conjunctions). Real English text
has about one such pair in ten ("of the", "it was"); keyword salad built from a list of function words and topic
words has five or six in ten (measured on the procedural backend's sentences: 57-62%). A column reads as prose
here when its share is at most :data:`PROSE_MAX_PAIRS` and most of its characters are letters."""

from __future__ import annotations

import re
from typing import Iterable

FUNCTION_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both but
by can could did do does doing down during each few for from further had has have having he her here hers herself
him himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or
other our ours ourselves out over own same she should so some such than that the their theirs them themselves then
there these they this those through to too under until up upon very was we were what when where which while who whom
why will with would you your yours yourself yourselves also may might must shall whose whether though although yet
thus hence therefore moreover however wherein whereas even ever every many much one ones
""".split())
#: most function-word pairs a prose column may have (English prose: ~0.10; the procedural salad: 0.57-0.62)
PROSE_MAX_PAIRS = 0.25
_WORD = re.compile(r"[A-Za-z']+")


def function_pair_share(texts: Iterable[str]) -> float:
    """Share of adjacent word pairs (within a text) whose two words are both function words."""
    pairs = both = 0
    for text in texts:
        words = [w.lower().strip("'") for w in _WORD.findall(str(text))]
        for a, b in zip(words, words[1:]):
            pairs += 1
            both += a in FUNCTION_WORDS and b in FUNCTION_WORDS
    return both / pairs if pairs else 0.0


def reads_as_prose(texts: Iterable[str]) -> bool:
    values = [str(t) for t in texts]
    return bool(values) and function_pair_share(values) <= PROSE_MAX_PAIRS
