"""The user's documents stand alone: no reference leaves the repository, every link resolves.

A user who clones the project has README.md, docs/ and the `--help` texts, nothing beside them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from elk_opt.cli import COMMAND_MODULES, build_parser, main

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").glob("*.md"))]
OUTSIDE = re.compile(r"\.\./shared|/work/|DESIGN\.md")


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_documents_point_inside_the_repository(path):
    text = path.read_text(encoding="utf-8")
    assert not OUTSIDE.findall(text)
    prose = re.sub(r"```.*?```|`[^`]*`", "", text, flags=re.S)  # code is not a link
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", prose):  # markdown links
        if not re.match(r"[a-z]+:", target):
            assert (path.parent / target).exists(), f"{path.name} links to missing {target}"


SOURCES = sorted(p for folder in ("elk_opt", "formulations", "heuristics", "verify", "benchmarks")
                 for p in (ROOT / folder).rglob("*.py"))


def test_the_code_points_inside_the_repository():
    """Docstrings and comments are documents too (`help()`, `--help`, a reader of the code)."""
    outside = [f"{p.relative_to(ROOT)}: {hit}" for p in SOURCES
               for hit in OUTSIDE.findall(p.read_text(encoding="utf-8"))]
    assert not outside


def _helps() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.choices and "solve" in a.choices)
    return [parser.format_help()] + [sub.choices[name].format_help() for name in COMMAND_MODULES]


def test_help_texts_point_inside_the_repository():
    for text in _helps():
        assert not OUTSIDE.findall(text), text[:200]


def test_top_level_help_says_what_the_tool_does_and_where_the_docs_are(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    description = out.split("\n\n")[1]
    assert description.startswith("Schedule deep-learning models")
    assert "docs/spec.md" in out and "docs/glossary.md" in out and "elk-opt demo" in out


def test_verify_help_points_inside_the_repository(capsys):
    from verify.cli import main as verify_main

    with pytest.raises(SystemExit):
        verify_main(["--help"])
    out = capsys.readouterr().out
    assert "docs/spec.md" in out and not OUTSIDE.findall(out)
