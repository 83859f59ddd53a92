"""The import rules of ARCHITECTURE.md, read from the code: every import of every module (ast, at any depth of a
function), no cycle, no forbidden direction. The checker is tested on a planted violation too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "ingest", "storage", "model", "kernels")

# (importer prefix, imported prefix, why): a module under the first may not import a module under the second.
FORBIDDEN = [
    ("kernels", "app", "kernels import nothing of the project"),
    ("kernels", "ingest", "kernels import nothing of the project"),
    ("kernels", "storage", "kernels import nothing of the project"),
    ("kernels", "model", "kernels import nothing of the project"),
    ("ingest", "model", "ingest must not import model"),
    ("ingest", "storage", "ingest is below storage"),
    ("ingest", "app", "ingest is below the app"),
    ("storage", "model", "storage must not import model"),
    ("storage", "app", "storage is below the app"),
    ("model", "storage", "model must not import storage"),
    ("model", "app", "model is below the app"),
    ("model.network", "model.inference", "the network is below inference"),
    ("model.network", "model.bench", "the network is below the benchmark"),
    ("model.inference", "model.bench", "inference does not run the benchmark"),
    ("app.services", "app.ui", "services are below the UI"),
    ("app.services", "app.cli", "services are below the CLI"),
    ("app.ui", "storage", "the UI builds from services only"),
    ("app.ui", "model", "the UI builds from services only"),
    ("app.ui", "ingest", "the UI builds from services only"),
    ("app.ui", "app.cli", "the UI builds from services only"),
    ("app.ui", "app.batch", "the UI builds from services only"),
    ("app.ui", "app.generators", "the UI builds from services only"),
    ("app.ui", "app.bench_ingest", "the UI builds from services only"),
]
RESEARCH = "model.research"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Each module of ``packages`` under ``root`` → the project modules it imports (anywhere in its code)."""
    files = {_module_name(p, root): p for package in packages for p in (root / package).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                candidates = [f"{base}.{alias.name}" for alias in node.names] + [base]
            else:
                continue
            for candidate in candidates:
                while candidate and candidate not in files:
                    candidate = candidate.rpartition(".")[0]
                if candidate and candidate != name:
                    targets.add(candidate)
                    break
        graph[name] = targets
    return graph


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def violations(graph: dict[str, set[str]]) -> list[str]:
    """Every broken rule, one line each."""
    problems = [f"import cycle: {' ↔ '.join(cycle)}" for cycle in cycles(graph)]
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            if _under(target, RESEARCH) and not _under(module, RESEARCH):
                problems.append(f"{module} imports {target}: the product never imports research code")
            for importer, imported, why in FORBIDDEN:
                if _under(module, importer) and _under(target, imported) and not _under(module, RESEARCH):
                    problems.append(f"{module} imports {target}: {why}")
    return problems


def test_the_project_keeps_its_import_rules() -> None:
    graph = module_graph(ROOT)
    assert len(graph) > 80 and "app.services.ask" in graph["app.ui.ask"]
    assert violations(graph) == []


def test_the_checker_reports_a_planted_cycle_and_forbidden_imports(tmp_path: Path) -> None:
    for package, code in {
        "ingest/reader.py": "from model.network import net\n",  # ingest → model
        "model/network/net.py": "def load():\n    from storage import db\n",  # model → storage, inside a function
        "model/inference/qa.py": "from . import summary\n",
        "model/inference/summary.py": "from model.inference.qa import answer\n",  # a cycle
        "app/ui/tab.py": "import model.research.evaluation.cli\n",  # product → research
        "storage/db.py": "",
        "model/research/evaluation/cli.py": "from storage import db\n",  # research may import the product
    }.items():
        path = tmp_path / package
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)
    problems = violations(module_graph(tmp_path))
    assert problems == [
        "import cycle: model.inference.qa ↔ model.inference.summary",
        "app.ui.tab imports model.research.evaluation.cli: the product never imports research code",
        "app.ui.tab imports model.research.evaluation.cli: the UI builds from services only",
        "ingest.reader imports model.network.net: ingest must not import model",
        "model.network.net imports storage.db: model must not import storage",
    ]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_is_read(package: str) -> None:
    assert any(_under(module, package) for module in module_graph(ROOT))
