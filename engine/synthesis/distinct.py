"""When two solutions are one: the key of a submission's predictions, so that a board counts distinct solutions.

Two submissions are copies when their predictions are the same, row by row -- not when their scores tie (two
different prediction files can score alike, and stay two entries). :func:`prediction_key` hashes the prediction
columns of a submission in id order, numbers to 30 bits of mantissa (about nine significant digits: the same model
fitted through another code path may differ in the last bits of a float, and is still the same solution), labels
as text. The population program (:mod:`.population`) runs this very function in the sandbox -- its source is
part of the program -- to know when the board has enough distinct entries; the host runs it again on the files
that came back, and keeps one entry per key.
"""

from __future__ import annotations

import hashlib
import inspect
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd


def prediction_key(frame: Any, id_column: str, columns: Sequence[str]) -> str:
    """A hash of ``frame``'s ``columns`` in the order of ``id_column`` (read as text): equal for submissions that
    predict the same for every row."""
    rows = frame.sort_values(id_column, key=lambda s: s.astype(str), kind="stable")
    digest = hashlib.sha256(",".join(map(str, rows[id_column])).encode())
    for column in columns:
        values = pd.to_numeric(rows[column], errors="coerce")
        if values.notna().all():
            mantissa, exponent = np.frexp(values.to_numpy(dtype=float) + 0.0)  # + 0.0: -0.0 is 0.0
            digest.update(np.round(mantissa * 2.0 ** 30).astype(np.int64).tobytes())
            digest.update(exponent.astype(np.int64).tobytes())
        else:
            digest.update("\x00".join(rows[column].astype(str)).encode())
        digest.update(b"\x01")
    return digest.hexdigest()


def first_of_each(keys: Iterable[tuple[int, str]]) -> dict[int, int]:
    """``(index, key)`` pairs in board order → for every index whose key came before, the index it copies."""
    seen: dict[str, int] = {}
    copies: dict[int, int] = {}
    for index, key in keys:
        if key in seen:
            copies[index] = seen[key]
        else:
            seen[key] = index
    return copies


def distinct_count(frames: Iterable[Any], id_column: str, columns: Sequence[str]) -> int:
    """How many different solutions ``frames`` (submissions of one environment) are."""
    return len({prediction_key(f, id_column, columns) for f in frames})


def program_source() -> str:
    """:func:`prediction_key` as program text, with the imports it reads (for the population program, which has no
    access to this package)."""
    return ("import hashlib\nfrom typing import Any, Sequence\n\nimport numpy as np\nimport pandas as pd\n\n\n"
            + inspect.getsource(prediction_key))
