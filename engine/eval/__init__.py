"""Evaluation: environment selectors (:mod:`.select`) and many episodes of one policy over them (:mod:`.run`)."""
