"""Tests for decisions.energy.gas_storage."""
