"""Grading: metric library, submission validation, grade reports, medal thresholds, HumanRank, rewards."""

from .metrics import METRICS, Metric, get_metric
from .thresholds import Thresholds, human_rank, medal_ranks, thresholds
from .grade import GradeReport, grade, oversize_report, submission_limit, too_large
from .rewards import compute_reward

__all__ = ["METRICS", "Metric", "get_metric", "Thresholds", "thresholds", "human_rank", "medal_ranks",
           "GradeReport", "grade", "oversize_report", "submission_limit", "too_large", "compute_reward"]
