"""Import layers and import cycles of ``onboard/``, ``boards/`` and ``harness/`` (read with ``ast``).

Layer rules (every ``import X`` / ``from X import Y``, at module level *and* inside functions,
classes and ``try`` blocks; relative imports are resolved against the importing module):

- ``onboard`` (the runtime) imports neither ``harness`` (the simulation) nor ``boards``
  (the hardware bindings): it runs on every board and in every simulation.
- ``boards`` never imports ``harness``: a board runs without the simulation installed. A
  simulated device is handed to a board's code by its caller (e.g. ``harness.sim.rpi_bench``
  passes the simulated I2C bus to ``boards.rpi.service``).
- ``onboard.core`` (the pure foundation: units, angles, rotations, linalg, samples, settings)
  imports no ``onboard`` package except ``onboard.core`` itself -- not ``onboard.impl``
  either, which selects *implementations of algorithms* above core and would make core
  depend on the layers it serves. Standard-library imports are free.

The MicroPython board files (``boards/mp_common``, ``boards/pico_rp2040``,
``boards/nano_esp32``) import bare names such as ``machine`` or ``mp_drivers``: those are
neither ``harness`` nor ``boards`` and pass.

Cycles: the graph of *module-level* imports (those that run when the module is imported:
anything outside a function body) between the project's own modules must have no
strongly-connected component of more than one module. ``from P import name`` is an edge to
``P.name`` when that is a project module, else to ``P``; the parent packages a dotted import
also executes are not edges (an ``__init__`` re-exporting its submodules is not a cycle).
Imports inside functions are deferred, so they are not edges here.
"""
import ast
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TREES = ("onboard", "boards", "harness")
# (importing package prefix, forbidden imported package prefix, reason)
LAYER_RULES = (
    ("onboard", "harness", "onboard (runtime) must not import harness (simulation)"),
    ("onboard", "boards", "onboard (runtime) must not import boards (hardware bindings)"),
    ("boards", "harness", "boards must not import harness: take the simulated device from the caller"),
)
CORE = "onboard.core"


def _module_name(rel_path):
    parts = rel_path[:-3].split(os.sep)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def project_modules(root, trees=TREES):
    """{module name: path} of every ``.py`` under ``root/<tree>`` (``__init__`` -> its package)."""
    out = {}
    for tree in trees:
        base = os.path.join(root, tree)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            for fn in sorted(filenames):
                if fn.endswith(".py"):
                    path = os.path.join(dirpath, fn)
                    out[_module_name(os.path.relpath(path, root))] = path
    return out


def _is_package(path):
    return os.path.basename(path) == "__init__.py"


def _resolve_from(module, is_package, node):
    """Absolute module named by ``from <node.module> import ...`` (relative levels resolved)."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if node.level > 1:
        base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(tree, module, is_package):
    """[(lineno, imported module, names, at_module_level)] of every import statement in ``tree``."""
    found = []

    def visit(node, top):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append((child.lineno, alias.name, (), top))
            elif isinstance(child, ast.ImportFrom):
                found.append((child.lineno, _resolve_from(module, is_package, child),
                              tuple(a.name for a in child.names), top))
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, inner)

    visit(tree, True)
    return found


def _parse(path):
    with open(path, "rb") as fh:
        return ast.parse(fh.read(), filename=path)


def _under(name, prefix):
    return name == prefix or name.startswith(prefix + ".")


def layer_violations(root, trees=TREES):
    """Sorted ["<file>:<line>: <module> imports <target> (<rule>)"] for every broken layer rule."""
    out = []
    for module, path in sorted(project_modules(root, trees).items()):
        rel = os.path.relpath(path, root)
        for lineno, target, names, _top in _imports(_parse(path), module, _is_package(path)):
            # ``from onboard import impl`` names the package it imports: onboard.impl
            targets = [target + "." + n for n in names] if names and target in TREES else [target]
            for tgt in targets:
                for src_prefix, bad_prefix, why in LAYER_RULES:
                    if _under(module, src_prefix) and _under(tgt, bad_prefix):
                        out.append("%s:%d: %s imports %s (%s)" % (rel, lineno, module, tgt, why))
                if _under(module, CORE) and _under(tgt, "onboard") and not _under(tgt, CORE):
                    out.append("%s:%d: %s imports %s (onboard.core imports only onboard.core)"
                               % (rel, lineno, module, tgt))
    return sorted(set(out))


def import_graph(root, trees=TREES, deferred=False):
    """{module: {(imported project module, line)}} of module-level imports between project modules
    (``deferred``: imports inside functions too)."""
    modules = project_modules(root, trees)
    graph = {}
    for module, path in modules.items():
        edges = set()
        for lineno, target, names, top in _imports(_parse(path), module, _is_package(path)):
            if not top and not deferred:
                continue
            candidates = [target + "." + n for n in names if target + "." + n in modules] if names else []
            if not candidates and target in modules:
                candidates = [target]
            if not candidates and not names:
                # ``import a.b.c`` of a non-module tail: the deepest project module named
                parts = target.split(".")
                while parts and ".".join(parts) not in modules:
                    parts.pop()
                candidates = [".".join(parts)] if parts else []
            for c in candidates:
                if c != module:
                    edges.add((c, lineno))
        graph[module] = edges
    return graph


def import_cycles(root, trees=TREES, deferred=False):
    """Strongly-connected components of more than one module in the module-level import graph
    (``deferred``: counting imports inside functions too), each as a sorted list of
    "module (-> imported module at line N, ...)" descriptions, sorted."""
    graph = import_graph(root, trees, deferred)
    succ = {m: sorted({t for t, _ in edges}) for m, edges in graph.items()}
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = [0]

    def strongconnect(v):            # Tarjan, iterative over each node's successor list
        work = [(v, 0)]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, i = work[-1]
            if i < len(succ[node]):
                work[-1] = (node, i + 1)
                w = succ[node][i]
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, 0))
                elif w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        comps.append(sorted(comp))

    for v in sorted(succ):
        if v not in index:
            strongconnect(v)
    out = []
    for comp in sorted(comps):
        members = set(comp)
        out.append(["%s (-> %s)" % (m, ", ".join("%s at line %d" % (t, ln) for t, ln in sorted(graph[m])
                                                 if t in members)) for m in comp])
    return out


def _report(title, lines):
    return "%s:\n  %s" % (title, "\n  ".join(lines))


# -- the repository ------------------------------------------------------------------------------

def test_the_trees_are_there():
    modules = project_modules(REPO)
    for tree in TREES:
        assert sum(1 for m in modules if _under(m, tree)) > 5, "no modules found under %s/" % tree
    assert "onboard.core.rotations" in modules and "boards.rpi.service" in modules


def test_no_layer_is_imported_upwards():
    violations = layer_violations(REPO)
    assert not violations, _report("imports that break the layers (see this test's docstring)", violations)


def _cycles_report(title, cycles):
    return _report(title, ["cycle %d:\n    %s" % (i + 1, "\n    ".join(c)) for i, c in enumerate(cycles)])


def test_no_import_cycles():
    cycles = import_cycles(REPO)
    assert not cycles, _cycles_report("module-level import cycles", cycles)


def test_no_import_cycles_even_through_deferred_imports():
    """Stricter: no cycle even counting imports inside functions (issue 41: policy.policy <-> litert
    and uwb.node <-> token_ring/broadcast were such cycles; a shared base class now sits below both)."""
    cycles = import_cycles(REPO, deferred=True)
    assert not cycles, _cycles_report("import cycles (imports inside functions included)", cycles)


# -- the checker itself fails where it should (so the tests above cannot pass vacuously) --------

def _write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_checker_reports_upward_imports(tmp_path):
    _write(tmp_path, "onboard/__init__.py", "")
    _write(tmp_path, "onboard/x.py", "import math\nimport harness.y\n")
    _write(tmp_path, "boards/__init__.py", "")
    _write(tmp_path, "boards/z.py", '"""doc"""\n\ndef f():\n    from harness import q\n    return q\n')
    _write(tmp_path, "boards/mp.py", "import machine\nfrom mp_drivers import Led\n")
    _write(tmp_path, "harness/__init__.py", "")
    _write(tmp_path, "harness/y.py", "import onboard.x\nimport boards.z\n")      # downwards: fine
    violations = layer_violations(str(tmp_path))
    assert violations == [
        "boards/z.py:4: boards.z imports harness.q (boards must not import harness: take the simulated "
        "device from the caller)",
        "onboard/x.py:2: onboard.x imports harness.y (onboard (runtime) must not import harness (simulation))",
    ], violations


def test_checker_reports_core_importing_upper_layers_and_relative_imports(tmp_path):
    _write(tmp_path, "onboard/__init__.py", "")
    _write(tmp_path, "onboard/impl.py", "")
    _write(tmp_path, "onboard/core/__init__.py", "")
    _write(tmp_path, "onboard/core/a.py", "from onboard.core import b\nfrom onboard import impl\n")
    _write(tmp_path, "onboard/core/b.py", "class K:\n    from .. import policy\n")
    _write(tmp_path, "onboard/policy/__init__.py", "from ...boards import rpi\n")
    violations = layer_violations(str(tmp_path))
    assert violations == [
        "onboard/core/a.py:2: onboard.core.a imports onboard.impl (onboard.core imports only onboard.core)",
        "onboard/core/b.py:2: onboard.core.b imports onboard.policy (onboard.core imports only onboard.core)",
        "onboard/policy/__init__.py:1: onboard.policy imports boards.rpi (onboard (runtime) must not "
        "import boards (hardware bindings))",
    ], violations


def test_checker_reports_module_level_cycles_only(tmp_path):
    _write(tmp_path, "onboard/__init__.py", "")
    _write(tmp_path, "onboard/p/__init__.py", "from onboard.p import a\n")        # package re-export
    _write(tmp_path, "onboard/p/a.py", "from onboard.p import b\n")
    _write(tmp_path, "onboard/p/b.py", "try:\n    from onboard.p.c import C\nexcept ImportError:\n    C = None\n")
    _write(tmp_path, "onboard/p/c.py", "import onboard.p.a as a\n")
    _write(tmp_path, "onboard/q.py", "def f():\n    import onboard.r\n")         # deferred: no edge
    _write(tmp_path, "onboard/r.py", "from onboard import q\n")
    cycles = import_cycles(str(tmp_path))
    p_cycle = ["onboard.p.a (-> onboard.p.b at line 1)",
               "onboard.p.b (-> onboard.p.c at line 2)",
               "onboard.p.c (-> onboard.p.a at line 1)"]
    assert cycles == [p_cycle], cycles
    assert import_cycles(str(tmp_path), deferred=True) == [
        p_cycle, ["onboard.q (-> onboard.r at line 2)", "onboard.r (-> onboard.q at line 1)"]]
