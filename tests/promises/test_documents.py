"""The README and the documentation site say what is true: their commands exist with the
options they show, their Python calls evalkit as it is, and the architecture page shows what
lint-imports enforces.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))
"""The README and every page of the documentation site: their commands are checked below."""
README_MAX_LINES = 200
"""The README is the front door (what evalkit is, the two commands, the install line, the
first run, links into the site); everything else lives in docs/."""


def test_the_readme_is_a_front_door_into_the_site() -> None:
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    assert "make eval" in readme and "make test" in readme
    # every page it links to exists (mkdocs build --strict checks the links inside docs/)
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", readme)
    assert links and [link for link in links if not (ROOT / link).is_file()] == []


def test_the_architecture_page_shows_what_lint_imports_enforces() -> None:
    import tomllib

    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    contracts = tomllib.loads(pyproject)["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers")["layers"]
    page = (ROOT / "docs" / "contributing" / "architecture.md").read_text(encoding="utf-8")
    # The page shows the layer list itself, included from pyproject.toml at build time.
    assert '--8<-- "pyproject.toml:layers"' in page
    shown = pyproject.split("# --8<-- [start:layers]", 1)[1].split("# --8<-- [end:layers]")[0]
    assert tomllib.loads(shown.split("\n", 1)[1])["layers"] == layers
    services = layers.index("reports | tracking | scorers")  # independent: no imports between
    assert layers[services - 2:services + 2] == [
        "evaluation", "calls | review", "reports | tracking | scorers", "stats"]
    pure = next(c for c in contracts if c.get("source_modules") == ["evalkit.stats"])
    assert set(pure["forbidden_modules"]) == {"evalkit.config", "evalkit.dataset",
                                              "evalkit._secrets"}
    engine = next(c for c in contracts if c.get("source_modules") == ["evalkit.calls"])
    assert set(engine["forbidden_modules"]) == {"evalkit.evaluation", "evalkit.review",
                                                "evalkit.tracking"}
    readers = next(c for c in contracts if c.get("source_modules") == ["evalkit.review"])
    assert readers["forbidden_modules"] == ["evalkit.calls"]
    prose = " ".join(page.split())
    assert ("the after-the-run readers (`review/`: compare, plan, labels; a mode labels the run "
            "it just made through them), which never import each other; those use scoring, "
            "tracking and reports, which never import each other either; those three use "
            "statistics, which imports nothing of evalkit but its records and errors;") in prose
    assert "The engine knows neither the modes, the readers nor tracking" in prose


def test_the_entries_on_writing_datasets_obey_the_rules_they_illustrate(tmp_path: Path) -> None:
    import re

    from evalkit import lint_dataset

    page = (ROOT / "docs" / "datasets.md").read_text(encoding="utf-8")
    entries = [json.loads(block) for block in re.findall(r"^```json\n(.*?)^```", page,
                                                         flags=re.M | re.S)
               if '"$schema"' in block]
    assert len(entries) >= 5
    for number, entry in enumerate(entries):
        root = tmp_path / f"dataset-{number}"
        folder = root / "data" / Path(*["x"] * (entry["$schema"].count("../") - 1))
        folder.mkdir(parents=True)
        (root / "README.md").write_text("# example\n", encoding="utf-8")
        (root / "dataset.schema.json").write_text('{"type": "object"}', encoding="utf-8")
        variants = ("a", "b") if "bias" in entry["test_types"] else ("a",)  # a group of two
        for variant in variants:
            (folder / f"{variant}.json").write_text(json.dumps(entry), encoding="utf-8")
        report = lint_dataset(root)
        assert report.ok, report.render()


# --- The commands of the README and the site, checked against the real parsers and Makefiles ---

class _ParserCaught(Exception):
    def __init__(self, parser: object) -> None:
        super().__init__("parser caught")
        self.parser = parser


def _parser_of(build: object) -> object:
    """The argparse parser a command line builds, caught at ``parse_args`` (nothing runs)."""
    import argparse

    def caught(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        raise _ParserCaught(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_args", caught)
        try:
            build()  # type: ignore[operator]
        except _ParserCaught as parsed:
            return parsed.parser
    raise AssertionError("the command line never parsed its arguments")


def _commands(parser: object, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], set[str]]:
    """Every (sub)command's path and its option strings."""
    import argparse

    assert isinstance(parser, argparse.ArgumentParser)
    options: set[str] = set()
    found: dict[tuple[str, ...], set[str]] = {path: options}
    for action in parser._actions:
        options.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(_commands(sub, (*path, name)))
    return found


def _documents_code() -> list[str]:
    """The fenced code lines and inline code spans of the README and of every page of the
    site, each a piece of shell."""
    import re

    pieces = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        fenced = re.findall(r"^ *```[^\n]*\n(.*?)^ *```", text, flags=re.M | re.S)
        pieces += [line for block in fenced
                   for line in block.replace("\\\n", " ").splitlines()]
        prose = re.sub(r"^ *```[^\n]*\n.*?^ *```", "", text, flags=re.M | re.S)
        pieces += re.findall(r"`([^`\n]+)`", prose)
    return pieces


def _words_after(piece: str, command: str) -> list[list[str]]:
    """For each invocation of ``command`` in ``piece`` (``evalkit``, ``eval.py``, ``make``),
    the words that follow it up to the end of its shell command."""
    import re

    found = []
    for segment in re.split(r"[;|&]|\s#\s|^#\s", piece):
        words = segment.split()
        for i, word in enumerate(words):
            before = words[i - 1] if i else ""
            named = word == command or word.endswith(f"bin/{command}") or (
                command == "eval.py" and word.endswith("/eval.py"))
            if named and before not in {"import", "from", "pip", "install"}:
                found.append(words[i + 1:])
    return found


def _options_in(words: list[str]) -> list[str]:
    import re

    return [m.group(1) for word in words
            if (m := re.match(r"[\[(]?(--?[A-Za-z][\w-]*)", word))]


def _evalkit_commands() -> list[str]:
    from evalkit.cli import main

    commands = _commands(_parser_of(lambda: main([])))
    wrong = []
    for piece in _documents_code():
        for words in _words_after(piece, "evalkit"):
            path: tuple[str, ...] = ()
            rest = list(words)
            while rest and (*path, rest[0]) in commands:
                path = (*path, rest.pop(0))
            if words and not path and not words[0].startswith("-"):
                wrong.append(f"`{piece}`: no command {words[0]!r}")
                continue
            unknown = [o for o in _options_in(rest) if o not in commands[path]]
            wrong += [f"`{piece}`: evalkit {' '.join(path)} has no {o}" for o in unknown]
    return wrong


def _script_options() -> list[str]:
    from evalkit.cli import run_eval_script

    options = _commands(_parser_of(lambda: run_eval_script({}, lambda e, c: None, [])))[()]
    return [f"`{piece}`: eval.py has no {option}" for piece in _documents_code()
            for words in _words_after(piece, "eval.py")
            for option in _options_in(words) if option not in options]


def _make_targets() -> list[str]:
    """Targets and variables of ``make`` in the documents that neither evalkit's Makefile nor
    the scaffold's (evalkit init) defines; ``eval-%`` takes a test type or a placeholder."""
    import re

    from evalkit.dataset import TEST_TYPES

    makefiles = "\n".join(p.read_text(encoding="utf-8") for p in (
        ROOT / "Makefile", ROOT / "evalkit" / "cli" / "templates" / "Makefile.tmpl"))
    targets = set(re.findall(r"^([\w%-]+):", makefiles, flags=re.M))
    wrong = []
    for piece in _documents_code():
        for words in _words_after(piece, "make"):
            for word in (w.rstrip("'\"") for w in words):
                if word.startswith(("-", "'", '"', ".", "[")) or not re.match(r"[\w<]", word):
                    break  # past the make command (an option, a quote, prose)
                if "=" in word:
                    variable = word.split("=", 1)[0]
                    if not re.search(rf"\b{variable}\b", makefiles):
                        wrong.append(f"`{piece}`: no Makefile uses {variable}")
                    continue
                stem = word.split("-", 1)[1] if word.startswith("eval-") else None
                known = word in targets or (
                    stem is not None and "eval-%" in targets
                    and (stem in TEST_TYPES or stem.startswith("<")))
                if not known:
                    wrong.append(f"`{piece}`: no make target {word!r}")
    return wrong


def test_every_command_and_option_the_readme_and_the_site_name_exists() -> None:
    assert _evalkit_commands() == []
    assert _script_options() == []
    assert _make_targets() == []


def test_the_documents_check_reads_the_site() -> None:
    # commands shown only on pages of the site, not in the README
    pieces = _documents_code()
    assert ".venv/bin/evalkit plan A --against B --half-width 0.02   # plus intervals for A - B" \
        in pieces
    assert "make docs-build    # build it into .cache/site with --strict, as CI does" in pieces


def test_the_documents_check_notices_a_made_up_option(monkeypatch: pytest.MonkeyPatch) -> None:
    import tests.promises.test_documents as this

    invented = ["evalkit compare A B --noise-floor 3", "python eval.py --type=all --fast",
                "evalkit frobnicate X", "make eval-everything", "make eval NOSUCHVAR=1",
                "make deploy"]
    monkeypatch.setattr(this, "_documents_code", lambda: invented)
    assert _evalkit_commands() == [
        "`evalkit compare A B --noise-floor 3`: evalkit compare has no --noise-floor",
        "`evalkit frobnicate X`: no command 'frobnicate'"]
    assert _script_options() == [
        "`python eval.py --type=all --fast`: eval.py has no --fast"]
    assert _make_targets() == [
        "`make eval-everything`: no make target 'eval-everything'",
        "`make eval NOSUCHVAR=1`: no Makefile uses NOSUCHVAR",
        "`make deploy`: no make target 'deploy'"]


def _python_blocks() -> list[tuple[str, str]]:
    """Every fenced ``python`` block of the README and the site: (page, code)."""
    import re

    return [(document.name, block) for document in DOCUMENTS
            for block in re.findall(r"^```py(?:thon)?\n(.*?)^```", document.read_text(
                encoding="utf-8"), flags=re.M | re.S)]


def test_the_python_the_documents_show_calls_evalkit_as_it_is() -> None:
    """Each block parses, and every ``evalkit.NAME(...)`` it calls (or ``evalkit.NAME.ATTR``)
    is in evalkit's face and takes the keywords the block passes: a renamed argument breaks
    the page, not only code."""
    import ast
    import inspect

    import evalkit

    blocks = _python_blocks()
    assert blocks  # docs/python.md shows the library from Python
    for page, code in blocks:
        for call in (n for n in ast.walk(ast.parse(code, page)) if isinstance(n, ast.Call)):
            path, root = [], call.func
            while isinstance(root, ast.Attribute):
                path.insert(0, root.attr)
                root = root.value
            if not (isinstance(root, ast.Name) and root.id == "evalkit" and path):
                continue
            assert path[0] in evalkit.__all__, (page, path)
            function: Any = evalkit
            for part in path:
                function = getattr(function, part)
            taken = inspect.signature(function).parameters
            assert {k.arg for k in call.keywords} <= set(taken), (page, path, list(taken))


def test_the_python_check_notices_a_renamed_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    import tests.promises.test_documents as this

    stale = "import evalkit\nevalkit.evaluate(config, component, selection, stop=stop)\n"
    monkeypatch.setattr(this, "_python_blocks", lambda: [("stale.md", stale)])
    with pytest.raises(AssertionError, match="evaluate"):
        this.test_the_python_the_documents_show_calls_evalkit_as_it_is()
