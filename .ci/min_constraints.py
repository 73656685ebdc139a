"""Print a pip constraints file that pins every dependency to its declared minimum, read from pyproject.toml.

The run with the declared minimums (.ci/run) installs with ``-c`` this output, so the pins cannot drift from
pyproject.toml's lower bounds: every requirement of ``project.dependencies`` and of the extras named on the command
line (default: test) must have a ``>=`` lower bound, which becomes ``name==version``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import tomllib

_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*([^;]*)")


def minimums(pyproject: Path, extras: list[str]) -> dict[str, str]:
    project = tomllib.loads(pyproject.read_text())["project"]
    requirements = list(project.get("dependencies", []))
    for extra in extras:
        requirements += project.get("optional-dependencies", {}).get(extra, [])
    pins: dict[str, str] = {}
    for requirement in requirements:
        match = _REQUIREMENT.match(requirement)
        if match is None:
            raise SystemExit(f"cannot parse requirement {requirement!r}")
        name, specifiers = match.group(1), match.group(3)
        lower = [s.strip()[2:].strip() for s in specifiers.split(",") if s.strip().startswith(">=")]
        if len(lower) != 1:
            raise SystemExit(f"{requirement!r}: every dependency needs exactly one '>=' lower bound to be tested")
        key = re.sub(r"[-_.]+", "-", name).lower()
        if pins.get(key, lower[0]) != lower[0]:
            raise SystemExit(f"{name}: two different lower bounds ({pins[key]}, {lower[0]})")
        pins[key] = lower[0]
    return pins


def main() -> None:
    extras = sys.argv[1:] or ["test"]
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    for name, version in sorted(minimums(pyproject, extras).items()):
        print(f"{name}=={version}")


if __name__ == "__main__":
    main()
