"""The workbench's widgets: one per file."""
