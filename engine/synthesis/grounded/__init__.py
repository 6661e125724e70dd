"""The grounded backend's parts (offline, no LLM): environments built from real datasets that installed packages
ship (``engine.realdata``).

- :mod:`.fit` — the Designer's search: the datasets that fit the seed's blueprint (never one held out for
  evaluation) and the order a batch tries them in;
- :mod:`.plan` — the plan that maps a chosen dataset onto the seed's structure, with its trial;
- ``templates/grounded.py`` — the generator template (package data, read as text: the ``generator.py`` of each
  grounded environment loads the dataset by name, samples it with its RNG seed, writes the files);
  :func:`template` gives its functions to the Designer, which runs the program's own preparation in-process;
- :mod:`.describe` — ``description.md`` from the dataset's own documentation;
- :func:`render` — the template with a plan written in as its CONFIG (what the Data engineer hands in).

The backend that plays the roles with them is :mod:`engine.synthesis.backends.grounded`.
"""

from __future__ import annotations

import functools
import json
import types
from pathlib import Path
from typing import Any

from ...errors import SynthesisError

#: the program every grounded environment runs, CONFIG left empty (a file shipped with the package, never imported)
TEMPLATE = Path(__file__).resolve().parent.parent / "templates" / "grounded.py"
MARKER = "CONFIG = None  # replaced by the grounded Data engineer with the environment's configuration"


@functools.lru_cache(maxsize=1)
def template() -> types.ModuleType:
    """The template's functions (its file executed into a fresh namespace, not run as ``__main__``): the Designer
    prepares and samples a dataset exactly as every environment's ``generator.py`` will."""
    namespace = types.ModuleType("grounded_generator_template")
    namespace.__file__ = str(TEMPLATE)
    exec(compile(TEMPLATE.read_text(encoding="utf-8"), str(TEMPLATE), "exec"), namespace.__dict__)  # noqa: S102
    return namespace


def render(config: dict[str, Any]) -> str:
    """``generator.py``: the template with ``config`` as its CONFIG (a JSON literal, keys sorted: the same plan
    gives the same program, byte for byte)."""
    source = TEMPLATE.read_text(encoding="utf-8")
    if MARKER not in source:
        raise SynthesisError("the grounded generator template lost its CONFIG marker")
    literal = json.dumps(config, indent=1, sort_keys=True, ensure_ascii=True)
    return source.replace(MARKER, "CONFIG = json.loads(r'''" + literal.replace("'", "\\u0027") + "''')")
