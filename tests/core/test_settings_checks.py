"""The shared checks a settings model's validators call (``decisions.core.settings``)."""

from __future__ import annotations

import pytest

from decisions.core.settings import one_per


def test_one_per_names_both_counts_and_passes_what_is_missing() -> None:
    one_per([0.01, 0.02], [1.0, 2.0], "rate per tenor")
    one_per(None, [1.0], "rate per tenor")
    one_per([0.01], None, "rate per tenor")
    with pytest.raises(ValueError, match=r"^needs one rate per tenor \(2\), got 1$"):
        one_per([0.01], [1.0, 2.0], "rate per tenor")
