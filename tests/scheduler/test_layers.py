"""Dependencies point inward: the scheduler side never imports the webhook, and aiohttp stays in
the extender's HTTP adapter."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2] / "scheduler_plugins"


def imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_scheduler_plugins_never_import_the_webhook():
    offenders = [p.name for p in ROOT.rglob("*.py") if "webhook" in imports(p)]
    assert offenders == []


def test_aiohttp_only_in_the_extender_adapter():
    users = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py") if "aiohttp" in imports(p))
    assert users == ["extender/server.py"]
