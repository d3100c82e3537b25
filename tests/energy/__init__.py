"""Tests for decisions.energy."""
