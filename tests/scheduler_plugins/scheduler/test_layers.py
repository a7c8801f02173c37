"""Dependencies point inward: the scheduler side imports nothing of the webhook but its generic
list/watch machinery (the extender's API-server source reuses it), and aiohttp stays in the
extender's HTTP adapter."""
import ast
import pathlib

from tests.support.paths import REPO

ROOT = REPO / "scheduler_plugins"


def imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


#: the webhook modules (and names) the scheduler side may use: its reflector, not its policies
WATCH_MACHINERY = {"cluster.reflector": None, "cluster.kinds": {"WatchedKind"}}


def webhook_imports(path: pathlib.Path) -> list[tuple[str, set[str] | None]]:
    found: list[tuple[str, set[str] | None]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names if alias.name.split(".")[0] == "webhook"]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level and node.module.split(".")[0] == "webhook":
            found.append((node.module, {alias.name for alias in node.names}))
    return found


def allowed(module: str, names: set[str] | None) -> bool:
    if module not in WATCH_MACHINERY:
        return False
    permitted = WATCH_MACHINERY[module]
    return permitted is None or (names is not None and names <= permitted)


def test_scheduler_plugins_import_only_the_webhook_watch_machinery():
    offenders = [(p.name, module) for p in ROOT.rglob("*.py") for module, names in webhook_imports(p)
                 if not allowed(module, names)]
    assert offenders == []


def test_aiohttp_only_in_the_extender_adapter():
    users = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py") if "aiohttp" in imports(p))
    assert users == ["scheduler/extender/server.py"]
