"""``evalkit init [DIR]``: scaffold an evaluation into an existing repository.

Writes eval.py, datasets/<name>/, a Makefile and reports/, and adds the local store's lines
to .gitignore; ``--template agent`` writes the LangGraph agent of ``examples/agent`` instead
of the stub component. It never overwrites: when any file it would write exists, it writes
nothing and lists every conflict. In a folder that already has evalkit's eval.py, ``--dataset NAME``
adds only datasets/NAME/.
"""

from __future__ import annotations

import re
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path, PurePosixPath

from evalkit._errors import ConfigError
from evalkit.cli._exit import ExitStatus

GITIGNORE_LINES = (
    # the local store: sqlite's database, its lock and the files of an open transaction
    "mlflow.db", "mlflow.db.lock", "mlflow.db-journal", "mlflow.db-wal", "mlflow.db-shm",
    "mlruns/",  # the artifacts of runs logged to the local store
    "mlartifacts/",  # the artifacts of experiments created in `evalkit ui`
    ".evalkit/",  # run journals and bundles
    # generated reports; reports/replicates.lock.json stays, a rerun reads its seeds back
    "reports/*.md", "reports/*.svg", "reports/stability.json",
    "reports/runs/",  # past runs' reports rebuilt by `evalkit report RUN`
)
DATASETS_DIR = "datasets"
DEFAULT_DATASET = "golden"
DEFAULT_TEMPLATE = "default"
AGENT_TEMPLATE = "agent"
"""The LangGraph agent of ``examples/agent`` (packaged through the symlink
``templates/agent``, so that the example and the template are one copy)."""
TEMPLATES = (DEFAULT_TEMPLATE, AGENT_TEMPLATE)
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def init_command(target: Path, component: str | None, dataset: str | None,
                 template: str = DEFAULT_TEMPLATE) -> int:
    """``evalkit init``: the whole scaffold, or only a dataset beside an existing eval.py."""
    target = target.resolve()
    if template == AGENT_TEMPLATE:
        return _init_agent(target, component, dataset)
    if dataset is not None and _has_eval_script(target):
        for path in scaffold(target, component or target.name.lower(), dataset,
                             dataset_only=True):
            print(f"wrote: {path}")
        print(f'next: point eval.py at it: DATASET_PATH = "{DATASETS_DIR}/{dataset}"')
        return ExitStatus.OK
    for path in scaffold(target, component or target.name.lower(), dataset or DEFAULT_DATASET):
        print(f"wrote: {path}")
    print(f"next: cd {target} && make eval   (make help lists every target)")
    return ExitStatus.OK


def _init_agent(target: Path, component: str | None, dataset: str | None) -> int:
    if component is not None or dataset is not None:
        raise ConfigError("--template agent writes the example as it is (experiment "
                          "orders-agent/orders, datasets/orders): drop --component and "
                          "--dataset, and rename them in eval.py afterwards")
    for path in scaffold(target, "", "", template=AGENT_TEMPLATE):
        print(f"wrote: {path}")
    print("next: pip install 'evalkit-mlflow[agent]'; set OPENAI_BASE_URL (omit for "
          f"api.openai.com) and OPENAI_API_KEY; then cd {target} && make eval")
    return ExitStatus.OK


def _has_eval_script(target: Path) -> bool:
    """An eval.py of evalkit's (it sets DATASET_PATH), not any script of that name."""
    script = target / "eval.py"
    return script.is_file() and "DATASET_PATH" in script.read_text(encoding="utf-8",
                                                                   errors="replace")


def scaffold(target: Path, component: str, dataset: str, *,
             dataset_only: bool = False, template: str = DEFAULT_TEMPLATE) -> list[Path]:
    """Write the scaffold of ``template`` (or, ``dataset_only``, datasets/DATASET/ alone)
    into ``target`` (created if missing); return the paths written. The agent template is
    ``examples/agent`` as it is: ``component`` and ``dataset`` are not used.

    Raises :class:`ConfigError` listing every file that exists already, having written none;
    ``dataset_only`` refuses only an existing datasets/DATASET/.
    """
    if template == DEFAULT_TEMPLATE:
        _check_names(component, dataset)
    files = {path: text.replace("{{component}}", component).replace("{{dataset}}", dataset)
             for path, text in _templates(template, dataset)
             if not dataset_only or path.parts[:2] == (DATASETS_DIR, dataset)}
    if dataset_only:
        folder = target / DATASETS_DIR / dataset
        if folder.exists():
            raise ConfigError(f"{folder} exists: evalkit init writes nothing over it; choose "
                              "another --dataset name, or move the folder aside")
        return _write(target, files)
    conflicts = sorted(str(target / path) for path in files if (target / path).exists())
    if conflicts:
        raise ConfigError("evalkit init writes nothing over existing files; these exist:\n  "
                          + "\n  ".join(conflicts)
                          + "\nmove them aside, or scaffold into another folder")
    written = _write(target, files)
    (target / "reports").mkdir(exist_ok=True)
    gitignore = target / ".gitignore"
    before = gitignore.read_text(encoding="utf-8") if gitignore.exists() else ""
    missing = [line for line in GITIGNORE_LINES if line not in before.splitlines()]
    if missing:
        separator = "\n" if before and not before.endswith("\n") else ""
        gitignore.write_text(before + separator + "# evalkit: the local MLflow store, run "
                             "folders and generated reports\n"
                             + "".join(f"{line}\n" for line in missing), encoding="utf-8")
        written.append(gitignore)
    return written


def _check_names(component: str, dataset: str) -> None:
    for label, name in (("--component", component), ("--dataset", dataset)):
        if not _NAME.match(name):
            raise ConfigError(f"{label} {name!r}: use lower-case letters, digits, '.', '_' "
                              "and '-' (it names a folder and the MLflow experiment)")


def _write(target: Path, files: dict[PurePosixPath, str]) -> list[Path]:
    for path, text in files.items():
        (target / path).parent.mkdir(parents=True, exist_ok=True)
        (target / path).write_text(text, encoding="utf-8")
    return [target / path for path in files]


def _templates(template: str, dataset: str) -> list[tuple[PurePosixPath, str]]:
    """(path in the scaffold, template text) of the Makefile and every file of ``template``;
    the default template's dataset/ is written as datasets/DATASET/."""
    root = resources.files("evalkit").joinpath("cli", "templates")
    found = [(PurePosixPath("Makefile"), root.joinpath("Makefile.tmpl").read_text(
        encoding="utf-8"))]
    for relative, item in _walk(root.joinpath(template), PurePosixPath()):
        if relative.parts[0] == "dataset":
            relative = PurePosixPath(DATASETS_DIR, dataset, *relative.parts[1:])
        found.append((relative.with_name(relative.name.removesuffix(".tmpl")),
                      item.read_text(encoding="utf-8")))
    return found


def _walk(folder: Traversable, relative: PurePosixPath) -> list[tuple[PurePosixPath, Traversable]]:
    items = []
    for item in sorted(folder.iterdir(), key=lambda i: i.name):
        if item.name == "__pycache__":  # pip compiles the agent template's eval.py
            continue
        if item.is_dir():
            items += _walk(item, relative / item.name)
        else:
            items.append((relative / item.name, item))
    return items
