"""SandMLE engine: the headless core (synthesis, sandbox, agents, grading, RL, eval, benchmarks).

Importing ``engine`` or any submodule never imports the TUI (``textual``).
"""

__version__ = "0.1.0"
