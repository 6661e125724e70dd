"""Models: the loader with its device and dtype rules (:mod:`.loading`) and tiny local causal LMs for tests and
CPU runs (:mod:`.tiny`)."""
