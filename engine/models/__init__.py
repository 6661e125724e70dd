"""Models: the loader with its device and dtype rules (:mod:`.loading`) and adapter names (folders, run ids,
``RUN_ID@STEP``: :mod:`.adapters`). The project's own tiny model lives in :mod:`engine.agents.tiny`."""
