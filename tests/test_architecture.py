"""The package's shape, held: imports go one way, and code asks stores what they can do.

A module that imports another (type-only imports included) sits above it: a cycle
means two modules that can only be read together. Stores are asked for capabilities
(`caching.stores.Replayable`, `IdentityCopies`, ``blocking``), never sorted by class.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "sitemap_middleware"
CONCRETE_STORES = {"MemoryStore": "caching/stores.py", "RedisStore": "redis/store.py"}


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imported(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The package's modules ``name`` imports, wherever the import sits (under TYPE_CHECKING too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in known:
                    yield f"{target}.{alias.name}"  # a module imported from its package
                elif target in known:
                    yield target
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield alias.name


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_two_modules_import_each_other_even_for_types() -> None:
    known = modules()
    # A package's __init__ re-exports its modules: it sits above them, and nothing below imports it.
    graph = {
        name: {target for target in imported(name, path, known) if target != name}
        for name, path in known.items()
    }
    assert len(graph) > 40  # the whole package was read
    assert cycles(graph) == []


def test_no_code_sorts_stores_by_their_class() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("isinstance", "issubclass"):
                names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                for store in names & CONCRETE_STORES.keys():
                    if path.relative_to(PACKAGE).as_posix() != CONCRETE_STORES[store]:
                        offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {store}")
    assert offenders == []


def test_modules_stay_small_and_the_adapters_translate_only() -> None:
    """STYLE: modules of 50-300 lines, split by job past ~400; adapters ~170 lines at most."""
    sizes = {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text().splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    assert {name: n for name, n in sizes.items() if n > 420} == {}
    adapters = ("asgi.py", "wsgi.py", "django/middleware.py")
    assert {name: sizes[name] for name in adapters if sizes[name] > 175} == {}
