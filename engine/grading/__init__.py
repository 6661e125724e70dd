"""Grading: metric library, submission validation, grade reports, medal thresholds, HumanRank, rewards."""

from .metrics import METRICS, Metric, get_metric
from .thresholds import Thresholds, human_rank, medal_ranks, thresholds

__all__ = ["METRICS", "Metric", "get_metric", "Thresholds", "thresholds", "human_rank", "medal_ranks"]
