"""The package's layers, as its own imports draw them: no loop, few imports inside functions.

An import made inside a function to dodge a circular import hides a loop from Python, not from
a reader: it means a function sits on the wrong floor. So this walks every module of
``scheduler_app`` (migrations aside) and collects its imports of the package, at module level
and inside functions alike, and asserts that they form no loop and that at most
``LOCAL_IMPORT_LIMIT`` of them are made inside a function, each with a comment saying why.
Imports under ``if TYPE_CHECKING:`` (never run) and in ``AppConfig.ready()`` (where Django
wants the modules that register things imported) are not counted.

Self-contained on purpose: it runs from a clean clone, with nothing outside the repository.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PACKAGE = "scheduler_app"
ROOT = Path(__file__).resolve().parents[2] / PACKAGE
LOCAL_IMPORT_LIMIT = 3


@dataclass(frozen=True)
class LocalImport:
    """An import of the package made inside a function."""

    path: Path
    line: int
    target: str
    commented: bool

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT.parent)}:{self.line} -> {self.target}"


@dataclass
class Graph:
    modules: dict[str, Path]
    edges: dict[str, set[str]] = field(default_factory=dict)
    local: list[LocalImport] = field(default_factory=list)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """Dotted names an import statement asks for (``from a import b`` asks for ``a.b``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = module.split(".")
        if not is_package:
            parts.pop()
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    return [f"{base}.{alias.name}" for alias in node.names]


def skipped_nodes(tree: ast.Module) -> set[int]:
    """Nodes under ``if TYPE_CHECKING:`` and inside a method named ``ready`` (AppConfig)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(child) for child in ast.walk(node)}
        if isinstance(node, ast.FunctionDef) and node.name == "ready":
            skipped |= {id(child) for child in ast.walk(node)}
    return skipped


def inside_functions(tree: ast.Module) -> set[int]:
    functions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    return {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, functions)
        for child in ast.walk(node)
        if child is not node
    }


def has_comment(lines: list[str], node: ast.stmt) -> bool:
    """A ``#`` comment on the import's own lines or on the line just above it."""
    first = max(node.lineno - 2, 0)
    last = node.end_lineno or node.lineno
    return any("#" in line for line in lines[first:last])


def build_graph() -> Graph:
    modules = {
        module_name(path): path
        for path in sorted(ROOT.rglob("*.py"))
        if "migrations" not in path.relative_to(ROOT).parts
    }
    graph = Graph(modules, {name: set() for name in modules})

    def owning_module(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    for module, path in modules.items():
        source = path.read_text()
        tree = ast.parse(source)
        skipped, local = skipped_nodes(tree), inside_functions(tree)
        lines = source.splitlines()
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in skipped:
                continue
            for name in imported_names(node, module, path.name == "__init__.py"):
                target = owning_module(name) if name.startswith(PACKAGE) else None
                if target is None or target == module:
                    continue
                graph.edges[module].add(target)
                if id(node) in local:
                    graph.local.append(
                        LocalImport(path, node.lineno, target, has_comment(lines, node))
                    )
    return graph


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one module (iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def is_one_room(component: list[str], modules: dict[str, Path]) -> bool:
    """A package ``__init__`` re-exporting its own submodules, which import siblings through
    it: one room, not a loop between floors."""
    packages = [name for name in component if modules[name].name == "__init__.py"]
    if len(packages) != 1:
        return False
    return all(name.startswith(packages[0] + ".") for name in component if name != packages[0])


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build_graph()


def test_the_walker_sees_the_package(graph: Graph) -> None:
    """Guards the test itself: a walker that found nothing would pass everything."""
    assert len(graph.modules) > 50
    assert "scheduler_app.models" in graph.edges["scheduler_app.services.schedules"]


def test_no_import_loop_when_imports_inside_functions_count(graph: Graph) -> None:
    loops = [c for c in strongly_connected(graph.edges) if not is_one_room(c, graph.modules)]
    assert not loops, "import loops (move the function imported upward to the lower layer):\n" + (
        "\n".join(f"{len(c)} modules: {', '.join(c)}" for c in loops)
    )


def test_at_most_three_imports_inside_functions_each_saying_why(graph: Graph) -> None:
    listing = "\n".join(str(item) for item in graph.local)
    assert len(graph.local) <= LOCAL_IMPORT_LIMIT, (
        f"{len(graph.local)} imports of {PACKAGE} inside functions (at most "
        f"{LOCAL_IMPORT_LIMIT}); move the code to the layer it belongs to:\n{listing}"
    )
    silent = [str(item) for item in graph.local if not item.commented]
    assert not silent, "imports inside functions without a comment saying why:\n" + (
        "\n".join(silent)
    )


def test_the_models_connect_no_receivers(graph: Graph) -> None:
    """The store sits at the bottom: it imports nothing of the monitoring above it (the
    receivers of the scheduler's signals are connected by ``AppConfig.ready()``)."""
    models = [name for name in graph.modules if name.startswith("scheduler_app.models")]
    upward = {
        f"{name} -> {target}"
        for name in models
        for target in graph.edges[name]
        if target.startswith("scheduler_app.monitoring")
    }
    assert not upward


def test_the_walker_finds_a_loop_hidden_inside_a_function() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(edges) == [["a", "b", "c"]]


# -- the layer order ----------------------------------------------------------------------------

FLOORS: list[tuple[str, tuple[str, ...]]] = [
    ("Django's entry", ("apps", "urls", "templatetags", "management")),
    ("people's pages", ("admin", "contract")),
    (
        "the processes' entries",
        ("checks", "beat", "loop", "webhooks.loop", "signals", "ticker"),
    ),
    ("public re-exports", ("declarations", "api")),
    ("authoring", ("authoring",)),
    ("operations", ("monitoring", "forecast")),
    ("services", ("services",)),
    ("the worker's adapters", ("djtasks", "tasks", "webhooks")),
    ("the beat side and the worker side", ("dispatch", "worker")),
    ("the definition", ("definition",)),
    ("the task's context", ("context",)),
    ("handoff", ("publishing", "handoff")),
    ("observability", ("observability",)),
    ("access and safety", ("safety",)),
    ("storage", ("partitions", "db", "models")),
    ("settings and time", ("conf", "clock")),
    ("pure policies and engine", ("policies", "timing")),
    ("the floor", ("events", "compat", "errors")),
]
"""From the top down: a module may import its own floor or any floor below it, never above.
Each entry names a subpackage, a root module, or (where a package's modules sit on two floors)
one module: ``webhooks.loop`` is the event target's delivery process, beside ``beat`` and
``loop`` (django.tasks' own beat loop)."""


def floor_of(module: str) -> int:
    """The index in ``FLOORS`` of the most specific entry naming ``module`` (0 is the top)."""
    parts = module.split(".")[1:]
    for length in range(len(parts), 0, -1):
        name = ".".join(parts[:length])
        for index, (_, members) in enumerate(FLOORS):
            if name in members:
                return index
    if not parts:  # the package's own __init__
        return len(FLOORS) - 1
    raise AssertionError(f"{module} is on no floor: add its subpackage or module to FLOORS")


def test_every_import_points_to_its_own_floor_or_below(graph: Graph) -> None:
    upward = [
        f"{module} ({FLOORS[floor_of(module)][0]}) -> {target} ({FLOORS[floor_of(target)][0]})"
        for module, targets in graph.edges.items()
        for target in targets
        if floor_of(target) < floor_of(module)
    ]
    assert not upward, "imports that point up a floor (move the code down):\n" + "\n".join(
        sorted(upward)
    )


def room_of(module: str) -> str:
    """The subpackage a module is in (``scheduler_app.dispatch.outbox``: ``dispatch``), or
    the root module itself (``scheduler_app.beat``: ``beat``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_no_loop_between_subpackages(graph: Graph) -> None:
    """Read as rooms (a subpackage is one room, a root module another), the imports still
    form no loop: no subpackage holds modules both above and below another one, so a
    reader who looks at the package's folders sees its layers (``handoff`` holds the
    django.tasks registry the allowlist reads; ``djtasks`` the adapters above the worker;
    ``loop``, django.tasks' beat loop, sits beside ``beat``)."""
    edges: dict[str, set[str]] = {room_of(name): set() for name in graph.modules}
    why: dict[tuple[str, str], str] = {}
    for module, targets in graph.edges.items():
        for target in targets:
            pair = (room_of(module), room_of(target))
            if pair[0] != pair[1]:
                edges[pair[0]].add(pair[1])
                why.setdefault(pair, f"{module} -> {target}")
    loops = strongly_connected(edges)
    assert not loops, "subpackages in a loop (one of them holds modules on two floors):\n" + (
        "\n".join(
            f"{', '.join(c)}: " + "; ".join(why[(a, b)] for a in c for b in c if (a, b) in why)
            for c in loops
        )
    )
