"""The layering holds: every module imports only from its own layer or the ones below, and no
two modules import each other, however indirectly."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Lowest first. A module belongs to the first layer whose prefix names it.
LAYERS: list[tuple[str, ...]] = [
    ("beliefs.domain",),
    # The infrastructure below the services that use it: the transports (beliefs.net for HTTP,
    # beliefs.mail for SMTP), the receipts' signing keys (beliefs.signing) and the metrics the
    # services observe (beliefs.observed).
    (
        "beliefs.errors",
        "beliefs.models",
        "beliefs.apps",
        "beliefs.net",
        "beliefs.mail",
        "beliefs.signing",
        "beliefs.observed",
        "beliefs.tracing",
    ),
    # Who holds a role is read (`beliefs.roles`, from `selectors.permissions`): it sits with the
    # reads, below the services and the faces that check roles.
    ("beliefs.selectors", "beliefs.roles"),
    ("beliefs.services",),
    # The inputs both faces read: the API and the pages share them, so they sit below both.
    ("beliefs.schemas",),
    ("beliefs",),  # the API, the admin, commands
    ("console",),  # the pages: nothing in `beliefs` reaches up to them
    # Tooling, not product: the demo data and the development webhook receiver, then the
    # benchmark. Nothing in `beliefs` or `console` imports them.
    ("demo",),
    ("bench",),
]


def _layer(module: str) -> int:
    for level, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return level
    raise AssertionError(f"{module} is in no layer")


def _modules() -> dict[str, Path]:
    found = {}
    for root in ("beliefs", "console", "demo", "bench"):
        for path in (REPO / root).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _imports(path: Path, known: set[str]) -> set[str]:
    """The project modules `path` imports at module level or inside functions."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            candidates = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        names.update(c for c in candidates if c in known)
    return names


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(path, known) - {name} for name, path in modules.items()}


def test_it_imports_only_from_the_same_layer_or_below() -> None:
    graph = _graph()
    upward = [
        f"{importer} imports {imported}"
        for importer, imports in graph.items()
        for imported in imports
        if _layer(imported) > _layer(importer)
    ]
    assert upward == []
    # The walk sees the project's imports (planning reads the belief choice from a selector).
    assert "beliefs.selectors.beliefs" in graph["beliefs.services.planning"]


def _imported_names(path: Path) -> set[str]:
    """Every module name `path` imports, the project's or not, at any depth of the file."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _reaches_console(name: str) -> bool:
    return name == "console" or name.startswith("console.")


def test_no_product_module_imports_the_tooling() -> None:
    """The demo, the webhook receiver and the benchmark live beside the product, not in it."""
    graph = _graph()
    reaching = {
        module: sorted(n for n in imported if n.split(".")[0] in ("demo", "bench"))
        for module, imported in graph.items()
        if module.split(".")[0] in ("beliefs", "console")
    }
    assert {m: names for m, names in reaching.items() if names} == {}
    assert "demo.receiver" in graph["demo.management.commands.webhook_listen"]


def test_no_beliefs_module_imports_console() -> None:
    reaching = [
        f"{module} imports {name}"
        for module, path in _modules().items()
        if module.startswith("beliefs")
        for name in _imported_names(path)
        if _reaches_console(name)
    ]
    assert reaching == []
    # The layer order says so too: the pages sit above every `beliefs` module.
    assert _layer("beliefs.admin") < _layer("console.views")
    # What the admin shows of untrusted values comes from below the pages.
    assert "beliefs.shown" in _graph()["beliefs.admin"]


@pytest.mark.parametrize(
    ("source", "reaches"),
    [
        ("from console.templatetags.console_tags import shown", True),
        ("import console.views", True),
        ("import console", True),
        ("from console import settings", True),
        ("def f():\n    from console.presenters import words\n", True),
        ("import console_client", False),  # the Python client, another package
        ("from beliefs.shown import shown", False),
    ],
)
def test_the_check_catches_every_form_of_importing_console(
    source: str, reaches: bool, tmp_path: Path
) -> None:
    module = tmp_path / "module.py"
    module.write_text(source)
    assert any(_reaches_console(n) for n in _imported_names(module)) == reaches


def test_the_pages_never_import_the_api() -> None:
    graph = _graph()
    reaching = [
        f"{importer} imports {imported}"
        for importer, imports in graph.items()
        if importer.startswith("console")
        for imported in imports
        if imported == "beliefs.api" or imported.startswith("beliefs.api.")
    ]
    assert reaching == []
    # The pages and the API read their inputs from one module, below both of them.
    assert "beliefs.schemas" in graph["console.forms.respond"]
    assert "beliefs.schemas" in graph["beliefs.api.views"]
    assert _layer("beliefs.schemas") < min(_layer("beliefs.api.views"), _layer("console.forms"))
    assert not any(m.startswith(("beliefs.api", "console")) for m in graph["beliefs.schemas"])


def test_it_has_no_import_cycle() -> None:
    graph = _graph()
    # A package's __init__ re-exporting its own modules is not a cycle of meaning.
    edges = {
        module: {
            m for m in imports if not (m.startswith(module + ".") or module.startswith(m + "."))
        }
        for module, imports in graph.items()
    }
    cycles = []
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for nxt in sorted(edges.get(module, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*path[path.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert cycles == []


# Views and presenters stay small enough to read whole, and leave text patterns to the layers
# that own the text (forms, domain).
MAX_PAGE_MODULE_LINES = 500


def _page_modules() -> list[Path]:
    return sorted(
        path
        for folder in ("console/views", "console/presenters")
        for path in (REPO / folder).glob("*.py")
    )


def test_no_view_or_presenter_module_is_over_500_lines() -> None:
    long = {
        str(path.relative_to(REPO)): n
        for path in _page_modules()
        if (n := len(path.read_text().splitlines())) > MAX_PAGE_MODULE_LINES
    }
    assert long == {}


def test_no_view_or_presenter_uses_a_regular_expression() -> None:
    using = [
        str(path.relative_to(REPO)) for path in _page_modules() if _imports(path, {"re", "regex"})
    ]
    assert using == []
