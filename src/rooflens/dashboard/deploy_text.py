"""Launch settings as text to copy: `model.deploy.launch_settings` written as a shell command
(and, for TensorRT-LLM, the extra-options YAML it reads), with the engine's docs page and what it
cannot express."""

from __future__ import annotations

import json
import shlex
from typing import Any

from rooflens.model.analysis.launch import ENGINES, LaunchSettings


def command_text(settings: LaunchSettings) -> str:
    engine = ENGINES[settings.engine]
    lines = [engine.command.replace("MODEL", shlex.quote(settings.model))]
    for flag, value in settings.args:
        lines.append(flag if value is True else f"{flag} {shlex.quote(str(value))}")
    return " \\\n    ".join(lines)


def yaml_text(config: dict[str, Any]) -> str:
    """Dotted keys as nested YAML (JSON scalars are valid YAML)."""
    tree: dict[str, Any] = {}
    for key, value in config.items():
        *parents, leaf = key.split(".")
        node = tree
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return "\n".join(_lines(tree, 0))


def _lines(tree: dict[str, Any], depth: int) -> list[str]:
    out = []
    for key, value in tree.items():
        if isinstance(value, dict):
            out += [f"{'  ' * depth}{key}:", *_lines(value, depth + 1)]
        else:
            text = value if value in ("true", "false") or isinstance(value, int) else None
            out.append(f"{'  ' * depth}{key}: {text if text is not None else json.dumps(value)}")
    return out
