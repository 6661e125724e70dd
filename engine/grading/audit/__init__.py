"""The exploit audit: no environment can be won by reading a file.

:mod:`.run` runs it (:func:`audit`); what it reads: :mod:`.sources`, off the agent's view (:mod:`.view`: the public
files, the test ids, a candidate column); how it reads answers off a file: :mod:`.decode`; what it scores attempts
on: :mod:`.grid`; the training rows' mirror: :mod:`.trainside`; its report: :mod:`.report`; the declared public
files and their hashes: :mod:`.files`; the doors of imports: :mod:`.gate`."""

from .files import STANDARD_FILES, changed_files, declare_all, declared_files, file_hashes
from .gate import audit_env, require_clean
from .report import AuditReport, Bar, Finding
from .run import audit

__all__ = ["STANDARD_FILES", "AuditReport", "Bar", "Finding", "audit", "audit_env", "changed_files", "declare_all",
           "declared_files", "file_hashes", "require_clean"]
