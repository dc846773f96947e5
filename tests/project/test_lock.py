"""requirements.lock pins every dependency the two pyproject files ask for, at a version their
ranges admit and with the hashes pip checks, so `make install` resolves nothing of its own."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


def _pins() -> dict[str, tuple[Version, int]]:
    """Each pinned name with its version and how many hashes follow it."""
    pins: dict[str, tuple[Version, int]] = {}
    current = None
    for line in (REPO / "requirements.lock").read_text().splitlines():
        if match := PIN.match(line):
            current = canonicalize_name(match[1])
            pins[current] = (Version(match[2]), 0)
        elif current and line.strip().startswith("--hash=sha256:"):
            version, hashes = pins[current]
            pins[current] = (version, hashes + 1)
    return pins


def _asked() -> list[Requirement]:
    asked = []
    for pyproject in (REPO / "pyproject.toml", REPO / "client" / "pyproject.toml"):
        project = tomllib.loads(pyproject.read_text())["project"]
        asked += [Requirement(r) for r in project["dependencies"]]
        for extra in project.get("optional-dependencies", {}).values():
            asked += [Requirement(r) for r in extra]
    return asked


def test_every_dependency_is_pinned_within_its_range_with_hashes() -> None:
    pins = _pins()
    problems = []
    for requirement in _asked():
        name = canonicalize_name(requirement.name)
        if name not in pins:
            problems.append(f"{requirement} is not in requirements.lock")
            continue
        version, hashes = pins[name]
        if not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement} does not admit the locked {version}")
        if hashes == 0:
            problems.append(f"{name}=={version} has no hash")
    assert problems == [], "run `make lock` (docs/dependencies.md):\n" + "\n".join(problems)


def test_the_lock_names_no_machine_of_its_own() -> None:
    text = (REPO / "requirements.lock").read_text()
    assert "--index-url" not in text and "--find-links" not in text and "file://" not in text
