"""``decisions new-domain AREA/NAME``: a working domain skeleton in the one inner shape, registered.

It writes ``decisions/<area>/<name>/`` (settings -> model -> training -> study -> spec/job/report/bench,
from ``templates/domain``), its example spec, app page and first test, then adds the domain to the
registry and to the import contracts' list of independent domains. The skeleton passes the
conformance test and the contracts as written; filling it in is replacing its problem.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from string import Template

from decisions.errors import InputError

TEMPLATES = Path(__file__).resolve().parent / "templates" / "domain"
AREAS = ("energy", "finance", "health", "telecom", "recsys", "mobility")
"""The areas a domain belongs to (the domains' layer of the import contracts)."""
PACKAGE_FILES = ("__init__", "entry", "settings", "model", "training", "study", "spec", "job", "report", "bench")
_NAME = re.compile(r"^[a-z][a-z0-9_]{1,30}$")
_REGISTRY_TUPLE = re.compile(r"^(DOMAINS: tuple\[Domain, \.\.\.\] = \()(.*)(\))$", re.M)
_FROM_DECISIONS = re.compile(r"^from decisions[.\w]* import ")
_CONTRACT_ANCHOR = "[importlinter:contract:domains-independent]"


class _Template(Template):
    delimiter = "@@"


@dataclass(frozen=True)
class NewDomain:
    """Where a new domain goes and the names it is written with."""

    area: str
    name: str
    root: Path

    @property
    def package(self) -> str:
        return f"decisions.{self.area}.{self.name}"

    @property
    def camel(self) -> str:
        return "".join(part.title() for part in self.name.split("_"))

    @property
    def title(self) -> str:
        return self.name.replace("_", " ").capitalize()

    @property
    def folder(self) -> Path:
        return self.root / "decisions" / self.area / self.name

    def page(self) -> str:
        """The app page's file name: the next free number, then the title."""
        taken = [int(m.group(1)) for p in (self.root / "apps" / "pages").glob("*.py")
                 if (m := re.match(r"^(\d+)_", p.name))]
        return f"{max(taken, default=0) + 1}_{self.camel}.py"


def parse_target(target: str, root: Path) -> NewDomain:
    """``AREA/NAME`` checked: two lower-case identifiers, and no such package yet.

    Raises:
        InputError: on field ``domain``.
    """
    parts = target.split("/")
    if len(parts) != 2 or not all(_NAME.match(part) for part in parts):
        raise InputError("domain", f"{target!r} is not AREA/NAME (lower-case letters, digits and _, e.g. energy/heat_pump)")
    if parts[0] not in AREAS:
        raise InputError("domain", f"area {parts[0]!r} is not one of {', '.join(AREAS)}")
    new = NewDomain(parts[0], parts[1], root)
    if new.folder.exists():
        raise InputError("domain", f"{new.folder} exists already")
    if not (root / "decisions" / "platform" / "registry.py").is_file():
        raise InputError("root", f"{root} is not a source checkout of decisions (no decisions/platform/registry.py)")
    return new


def create_domain(target: str, root: Path) -> list[Path]:
    """Write the skeleton of domain ``target`` (``AREA/NAME``) into the checkout at ``root`` and register it.

    Returns:
        The files written or changed.

    Raises:
        InputError: a bad target, an existing domain, or a checkout whose registry or contracts differ
            from the shape this writes into (nothing is written then).
    """
    new = parse_target(target, root)
    page = new.page()
    values = {"name": new.name, "Name": new.camel, "title": new.title, "area": new.area,
              "package": new.package, "page": page}
    registry, contracts = _registered(new, root)
    outputs = {new.folder / f"{part}.py": f"{part}.py.tmpl" for part in PACKAGE_FILES}
    outputs |= {new.folder / "domain.toml": "domain.toml.tmpl",
                root / "examples" / f"{new.name}.toml": "example.toml.tmpl",
                root / "apps" / "pages" / page: "page.py.tmpl",
                root / "tests" / new.area / new.name / f"test_{new.name}.py": "test.py.tmpl"}
    rendered = {path: _sorted_imports(_Template((TEMPLATES / template).read_text()).substitute(values))
                for path, template in outputs.items()}
    for path, text in rendered.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for package in (new.folder.parent, root / "tests" / new.area, root / "tests" / new.area / new.name):
        if not (package / "__init__.py").exists():
            (package / "__init__.py").write_text("")
            outputs[package / "__init__.py"] = ""
    (root / "decisions" / "platform" / "registry.py").write_text(registry)
    (root / ".importlinter").write_text(contracts)
    return [*outputs, root / "decisions" / "platform" / "registry.py", root / ".importlinter"]


def _sorted_imports(source: str) -> str:
    """``source`` with each run of ``from decisions...`` import lines in module order (as the linter wants)."""
    lines = source.split("\n")
    start = 0
    while start < len(lines):
        end = start
        while end < len(lines) and _FROM_DECISIONS.match(lines[end]):
            end += 1
        lines[start:end] = sorted(lines[start:end], key=lambda text: text.split()[1])
        start = max(end, start + 1)
    return "\n".join(lines)


def _with_import(source: str, line: str) -> str:
    """``source`` with ``line`` added to its block of ``from decisions...`` imports, kept in module order."""
    lines = source.split("\n")
    block = [i for i, text in enumerate(lines) if _FROM_DECISIONS.match(text)]
    if not block or block != list(range(block[0], block[-1] + 1)):
        raise InputError("root", "decisions/platform/registry.py has no single block of `from decisions` imports")
    lines.insert(block[-1] + 1, line)
    return _sorted_imports("\n".join(lines))


def _registered(new: NewDomain, root: Path) -> tuple[str, str]:
    """The registry and contracts files with the new domain added (computed before anything is written)."""
    registry = (root / "decisions" / "platform" / "registry.py").read_text()
    constant = new.name.upper()
    found = _REGISTRY_TUPLE.search(registry)
    if found is None:
        raise InputError("root", "decisions/platform/registry.py has no one-line DOMAINS tuple to add the domain to")
    registry = _REGISTRY_TUPLE.sub(lambda m: f"{m.group(1)}{m.group(2)}, {constant}{m.group(3)}", registry, count=1)
    registry = _with_import(registry, f"from {new.package}.entry import DOMAIN as {constant}")
    contracts = (root / ".importlinter").read_text()
    anchor = contracts.find(_CONTRACT_ANCHOR)
    modules = contracts.find("modules =\n", anchor)
    if anchor < 0 or modules < 0:
        raise InputError("root", f".importlinter has no {_CONTRACT_ANCHOR} with a modules list")
    at = modules + len("modules =\n")
    return registry, f"{contracts[:at]}    {new.package}\n{contracts[at:]}"
