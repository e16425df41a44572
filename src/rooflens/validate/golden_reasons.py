"""Why the golden snapshot moved: the rule that every number `python -m rooflens.validate.golden
--update`
changes is named by an entry of validate/golden_reasons.yaml, with the reason and the test that
proves the new number (issue 14).

An entry is bound to the snapshot it changes (`from_snapshot`: the digest of
tests/validate/golden/predictions.json before the update, which a refused update prints), so an
old entry never waves a later change through; the entries together are the snapshot's change
log. Scenario and field names may be fnmatch patterns (`ops.decode.*`, `*`); a scenario added or
removed moves its field `scenario`.
"""

from __future__ import annotations

import ast
import fnmatch
import hashlib
from pathlib import Path
from typing import NamedTuple

import yaml
from pydantic import Field

from rooflens.hardware.errors import RooflensError, validated
from rooflens.hardware.presets import read_data_file
from rooflens.hardware.spec import Spec

ROOT = Path(__file__).resolve().parents[3]  # the repository (src/rooflens/validate/..)
REASONS_FILE = Path(__file__).with_name("golden_reasons.yaml")
DIGEST_CHARS = 12


class Move(NamedTuple):
    """One number of the snapshot that moved (old or new None: the scenario or field is new or
    gone)."""

    scenario: str
    field: str
    old: float | None
    new: float | None

    def line(self) -> str:
        if self.field == "scenario":
            return f"{self.scenario}: scenario {'added' if self.old is None else 'removed'}"
        return f"{self.scenario}: {self.field} {self.old!r} -> {self.new!r}"


class Reason(Spec):
    """One justified change of the snapshot."""

    from_snapshot: str = Field(
        pattern=rf"^[0-9a-f]{{{DIGEST_CHARS}}}$",
        description="digest of the snapshot file this change starts from (printed by --update)",
    )
    scenarios: tuple[str, ...] = Field(
        min_length=1, description="scenario keys of validate/golden.py, or fnmatch patterns"
    )
    fields: tuple[str, ...] = Field(
        min_length=1, description="snapshot fields ('tpot_s', 'ops.decode.*', '*'): patterns"
    )
    reason: str = Field(min_length=20, description="why the new numbers are right")
    tests: tuple[str, ...] = Field(
        min_length=1,
        description="pytest node ids (tests/…/test_x.py::test_name) whose assertions prove the "
        "new numbers against an independent expectation",
    )

    def covers(self, move: Move) -> bool:
        return any(fnmatch.fnmatchcase(move.scenario, s) for s in self.scenarios) and any(
            fnmatch.fnmatchcase(move.field, f) for f in self.fields
        )


def snapshot_digest(text: str) -> str:
    """The digest an entry's `from_snapshot` names: sha256 of the snapshot file, shortened."""
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]


def load_reasons(path: Path = REASONS_FILE) -> list[Reason]:
    data = read_data_file(path) if path.is_file() else {"changes": []}
    entries = (data.get("changes") or []) if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise RooflensError(f"{path}: expected a top-level 'changes:' list of entries")
    return [validated(Reason, e, f"{path.name} entry {i + 1}") for i, e in enumerate(entries)]


def names_a_test(node_id: str, root: Path = ROOT) -> bool:
    """Whether a pytest node id (file::function, file::Class::method, [params] ignored) names a
    test function defined in that file."""
    path, _, names = node_id.partition("::")
    file = root / path
    if not names or not path.startswith("tests/") or not file.is_file():
        return False
    *classes, function = names.split("[", 1)[0].split("::")
    body = ast.parse(file.read_text()).body
    for name in classes:
        found = [n for n in body if isinstance(n, ast.ClassDef) and n.name == name]
        if not found:
            return False
        body = found[0].body
    return any(
        isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == function for n in body
    )


def problems(moves: list[Move], reasons: list[Reason], digest: str) -> list[str]:
    """Why an update from the snapshot with `digest` may not go ahead (empty when it may): a
    moved number no entry for this snapshot names, an entry that names a test that does not
    exist, or one that explains nothing that moved (a typo in its patterns)."""
    pending = [r for r in reasons if r.from_snapshot == digest]
    out = [f"unexplained: {m.line()}" for m in moves if not any(r.covers(m) for r in pending)]
    for r in pending:
        out += [f"no such test: {t}" for t in r.tests if not names_a_test(t)]
        if not any(r.covers(m) for m in moves):
            out.append(f"explains nothing that moved: {', '.join(r.scenarios)} / {r.fields}")
    return out


def template(moves: list[Move], digest: str) -> str:
    """A YAML entry to fill in for these moves."""
    entry = {
        "from_snapshot": digest,
        "scenarios": sorted({m.scenario for m in moves}),
        "fields": ["*"],
        "reason": "WHY the new numbers are right",
        "tests": ["tests/PACKAGE/test_FILE.py::test_THAT_PROVES_IT"],
    }
    return yaml.safe_dump({"changes": [entry]}, sort_keys=False, allow_unicode=True)
