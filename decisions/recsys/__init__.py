"""Recommender decision problems (issue 21): per-request utility-weight tuning with Pareto sweeping."""
