"""The workbench's screens: one per file."""
