"""A domain's ``domain.toml``: every registered domain's facts load, and a bad file is one line naming the fact."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from decisions.errors import InputError
from decisions.kit.domain import FACTS_FILE, read_facts
from decisions.platform.registry import DOMAINS

GOOD = """name = "stock"
title = "Stock"
summary = "Buy stock."
headline = ["profit"]
example = "stock.toml"
"""


def _facts(tmp_path: Path, text: str) -> dict:
    path = tmp_path / FACTS_FILE
    path.write_text(text)
    return read_facts(path)


def test_every_registered_domain_reads_its_facts_from_its_package() -> None:
    for domain in DOMAINS:
        folder = Path(sys.modules[domain.package].__file__ or "").parent  # imported by the registry
        facts = read_facts(folder / FACTS_FILE)
        assert facts["name"] == domain.name and facts["headline"] == domain.headline
        assert dict(facts.get("smoke_spec") or {}) == dict(domain.smoke_spec)


def test_a_minimal_file_gives_the_defaults(tmp_path: Path) -> None:
    facts = _facts(tmp_path, GOOD)
    assert facts["headline"] == ("profit",) and facts["page"] is None and "smoke_spec" not in facts


@pytest.mark.parametrize(("text", "field", "problem"), [
    (GOOD.replace('title = "Stock"\n', ""), "title", "is required"),
    (GOOD + "colour = 1\n", "colour", "is not a domain fact"),
    (GOOD.replace('["profit"]', "[]"), "headline", "non-empty list"),
    (GOOD.replace('["profit"]', '"profit"'), "headline", "non-empty list"),
    (GOOD + "page = 3\n", "page", "must be a string"),
    (GOOD + "smoke_spec = 1\n", "smoke_spec", "must be a table"),
    (GOOD + "name = \n", FACTS_FILE, "cannot read"),
    (GOOD + '[headline_figure]\nlabel = "x"\n', "headline_figure", "label and value"),
])
def test_a_bad_fact_is_one_line_naming_it(tmp_path: Path, text: str, field: str, problem: str) -> None:
    with pytest.raises(InputError) as caught:
        _facts(tmp_path, text)
    message = str(caught.value)
    assert field in message and problem in message and "\n" not in message


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the domain's facts"):
        read_facts(tmp_path / FACTS_FILE)
