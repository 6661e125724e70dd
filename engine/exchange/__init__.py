"""Environments leave and arrive: export as MLE-bench competition folders, Harbor task folders or the SandMLE
paper's layout (:mod:`.export`), and import of the paper's layout (:mod:`.paper_import`). One environment, three
layouts, one grade: every exported grader is sandmle's own grading code (:mod:`.grader_source`)."""
