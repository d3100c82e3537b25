"""Tests for decisions.energy.building."""
