"""Telecom decision problems (issue 6): CoMP cell selection on a JAX multi-cell network simulator."""
