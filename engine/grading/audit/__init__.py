"""The exploit audit: no environment can be won by reading a file (:mod:`.run`; the doors of imports: :mod:`.gate`)."""

from .gate import audit_env, require_clean
from .run import (STANDARD_FILES, AuditReport, Bar, Finding, audit, changed_files, declare_all, declared_files,
                  file_hashes)

__all__ = ["STANDARD_FILES", "AuditReport", "Bar", "Finding", "audit", "audit_env", "changed_files", "declare_all",
           "declared_files", "file_hashes", "require_clean"]
