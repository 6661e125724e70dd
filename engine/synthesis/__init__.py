"""Synthesis: the multi-agent pipeline that turns seeds into verified micro-scale MLE environments."""
