"""Grading: metric library, submission validation, grade reports, medal thresholds, ranks on a board, rewards."""

from .metrics import METRICS, Metric, get_metric
from .thresholds import BOARDS, Thresholds, board_rank, medal_ranks, rank_name, thresholds
from .grade import GradeReport, grade, oversize_report, submission_limit, too_large
from .rewards import compute_reward

__all__ = ["METRICS", "Metric", "get_metric", "BOARDS", "Thresholds", "thresholds", "board_rank", "rank_name", "medal_ranks",
           "GradeReport", "grade", "oversize_report", "submission_limit", "too_large", "compute_reward"]
