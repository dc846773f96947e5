"""Hand-written SQL and hand-built model objects live in the read layer only: no module outside
`beliefs.selectors` imports its row helpers (`selectors.rows`) or the ORM versions the parity
test holds them to (`tests.oracles`), builds a model object by hand (`__new__`,
`ModelState`, `from_db`), or sends SQL of its own: PostgreSQL's statements that read nothing
(NOTIFY, LISTEN, an advisory lock, a snapshot's isolation, the application's role) are
`beliefs.selectors.postgres`'s."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

READ_LAYER = "beliefs/selectors/"
ROW_HELPERS = {"beliefs.selectors.rows"}
HAND_BUILT = {"__new__", "from_db", "ModelState", "_state"}


def _modules() -> list[Path]:
    found = []
    for root in ("beliefs", "console"):
        for path in sorted((REPO / root).rglob("*.py")):
            relative = path.relative_to(REPO).as_posix()
            if "migrations" in path.parts or relative.startswith(READ_LAYER):
                continue
            found.append(path)
    return found


def _imported(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _names(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.alias):
            found.add(node.name.rpartition(".")[2])
    return found


SQL_CALLS = {"execute", "executemany", "raw", "extra", "RawSQL"}


def _calls(tree: ast.AST) -> set[str]:
    """The names of the functions and methods `tree` calls."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                found.add(func.attr)
            elif isinstance(func, ast.Name):
                found.add(func.id)
    return found


def test_only_the_read_layer_writes_sql_or_builds_model_objects() -> None:
    helpers, hand_built, own_sql = [], [], []
    for path in _modules():
        relative = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text())
        helpers += [f"{relative} imports {n}" for n in sorted(_imported(tree) & ROW_HELPERS)]
        hand_built += [f"{relative} uses {n}" for n in sorted(_names(tree) & HAND_BUILT)]
        if SQL_CALLS & _calls(tree):
            own_sql.append(relative)
    assert helpers == []
    assert hand_built == []
    assert own_sql == []


def test_the_walk_sees_what_it_looks_for() -> None:
    tree = ast.parse(
        "from beliefs.selectors import rows\nx = M.__new__(M)\nx._state = 1\nc.execute('')"
    )
    assert _imported(tree) & ROW_HELPERS == {"beliefs.selectors.rows"}
    assert _names(tree) >= {"__new__", "_state"}
    assert SQL_CALLS & _calls(tree) == {"execute"}


# The read layer's modules that write SQL, each named (with the figure that keeps it) in the
# read layer's docstring; every other module of the read layer reads through querysets.
FIXED_SQL = {
    "access.py",
    "answering.py",
    "attention.py",
    "beliefs.py",
    "events.py",
    "health.py",
    "insights.py",
    "instances.py",
    "outbox.py",
    "pages.py",
    "passkeys.py",
    "permissions.py",
    "postgres.py",
    "prompts.py",
    "rows.py",
    "runtimes.py",
}


def test_the_read_layer_writes_sql_only_in_the_modules_its_docstring_names() -> None:
    import beliefs.selectors

    writing = set()
    for path in sorted((REPO / READ_LAYER).glob("*.py")):
        tree = ast.parse(path.read_text())
        if SQL_CALLS & _calls(tree) or _imported(tree) & ROW_HELPERS:
            writing.add(path.name)
    assert writing == FIXED_SQL
    doc = beliefs.selectors.__doc__ or ""
    for name in FIXED_SQL - {"rows.py", "access.py", "prompts.py"}:
        assert f"`{name.removesuffix('.py')}" in doc, name
