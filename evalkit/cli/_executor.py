"""Where an eval script's calls run: ``--executor``, ``--ray-address``, ``--call-resources``."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from evalkit._distribution import RAY_EXTRA_COMMAND
from evalkit._errors import ConfigError
from evalkit.calls import (
    SETUP_HOOK,
    Component,
    Executor,
    InProcess,
    RayPool,
    RaySettings,
    require_ray,
)
from evalkit.config import EvalConfig, resource_amounts

logger = logging.getLogger("evalkit")

IN_PROCESS, RAY = "in-process", "ray"


def add_executor_options(parser: argparse.ArgumentParser) -> None:
    where = parser.add_argument_group(
        "where the calls run", f"Ray needs the extra: {RAY_EXTRA_COMMAND}. The script's "
        "folder is shipped to the workers; each loads the script once and runs "
        f"{SETUP_HOOK}() once, if the script defines it.")
    where.add_argument("--executor", choices=[IN_PROCESS, RAY], default=None,
                       help="in-process (the default: threads, or the event loop of an async "
                            "component) or ray: the calls fan out over a Ray cluster, the run "
                            "(its raw results, MLflow, scoring, reports) stays here")
    where.add_argument("--ray-address", metavar="HOST:PORT",
                       help="the Ray cluster to run on (implies --executor=ray); default: "
                            "RAY_ADDRESS, else a local Ray started for this run")
    where.add_argument("--call-resources", metavar="NAME=N,...",
                       help="what one call asks of Ray, e.g. CPU=2,GPU=1 (default: the "
                            "script's CALL_RESOURCES, else CPU=1); each worker slot holds "
                            "that and makes one call at a time; a call asking for nothing "
                            "(CPU=0, for a component that mostly waits): one worker makes "
                            "MAX_CONCURRENCY calls at once")


@contextlib.contextmanager
def executor_for(args: argparse.Namespace, config: EvalConfig, constants: Mapping[str, Any],
                 component: Component) -> Iterator[Executor]:
    """The executor the options ask for, open for the whole command (a replicate series
    keeps one pool of workers)."""
    ray = args.executor == RAY or (args.executor is None and args.ray_address is not None)
    if not ray:
        if args.ray_address or args.call_resources:
            raise ConfigError("--ray-address and --call-resources apply to --executor=ray")
        setup = constants.get(SETUP_HOOK)
        yield InProcess(setup if callable(setup) else None)
        return
    require_ray()
    resources = (resource_amounts(_amounts(args.call_resources), "--call-resources")
                 if args.call_resources else config.call_resources)
    name = getattr(component, "__name__", None)
    if not isinstance(name, str) or constants.get(name) is not component:
        raise ConfigError(f"--executor=ray: every worker loads {config.script} and calls the "
                          "component by its name, so it must be a function defined at the top "
                          "level of the script (def invoke_component(entry, call): ...)")
    script = Path(config.source_file or config.script).resolve()
    settings = RaySettings(args.ray_address or os.environ.get("RAY_ADDRESS") or None,
                           str(script.parent), script.name, name, resources,
                           config.max_concurrency)
    logger.info("starting the workers on Ray (%s); each loads the script before the run "
                "begins", settings.address or "a local Ray for this run")
    with RayPool(settings) as pool:
        logger.info("calls run on %s", pool.where)
        yield pool


def _amounts(text: str) -> dict[str, Any]:
    amounts: dict[str, Any] = {}
    for part in text.split(","):
        name, _, amount = part.partition("=")
        try:
            amounts[name.strip()] = float(amount)
        except ValueError:
            raise ConfigError(f"--call-resources {text!r}: {part!r} must read NAME=AMOUNT, "
                              "e.g. CPU=2,GPU=1") from None
    return amounts
