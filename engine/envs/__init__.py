"""Environments: the on-disk layout and its typed spec (:mod:`.layout`), and their files in the store —
hashes, export, delete, regenerate (:mod:`.storage`)."""
