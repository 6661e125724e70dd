"""SandMLE Workbench: the Textual app and the ``sandmle`` command line. Imports ``engine`` and ``store``."""
