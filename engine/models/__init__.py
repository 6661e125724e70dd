"""Models: the loader with its device and dtype rules (:mod:`.loading`), tiny local causal LMs for tests and
CPU runs (:mod:`.tiny`), and adapter names (folders, run ids, ``RUN_ID@STEP``: :mod:`.adapters`)."""
