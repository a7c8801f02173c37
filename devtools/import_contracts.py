"""An import-linter contract type the built-in ones lack: an allowlist of what a package imports.

`forbidden` contracts list what may not be imported, so a new I/O library slips through until
someone adds it to the list. `allowed_imports` names what a package may import beyond itself;
anything else breaks the contract. It keeps `policies` pure: parsing and arithmetic, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


class AllowedImportsContract(Contract):
    """Configuration: `source_package` (a root package) and `allowed` (top-level module names)."""

    type_name = "allowed_imports"
    source_package = fields.StringField()
    allowed = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        package = str(self.source_package)
        allowed = {package, *(str(a) for a in self.allowed)}  # type: ignore[attr-defined]
        offenders = _direct_imports(graph, package, lambda imported: imported.split(".")[0] not in allowed)
        return ContractCheck(kept=not offenders, metadata={"offenders": offenders})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for module, imported, line in check.metadata["offenders"]:
            output.print_error(f"{module} imports {imported} (l.{line}), which is not on the allowlist")
            output.new_line()


class ForbiddenSubmodulesContract(Contract):
    """Configuration: `source_packages` (root packages) and `forbidden` (dotted names inside an
    external package, e.g. `asyncio.sslproto`).

    import-linter sees an external package only as a whole (`asyncio`), so its `forbidden`
    contract cannot name one of its modules; this one reads each import of the package's top-level
    name and refuses those that reach the forbidden module (`import asyncio.sslproto`, `from
    asyncio.sslproto import ...`, `from asyncio import sslproto`)."""

    type_name = "forbidden_submodules"
    source_packages = fields.ListField(subfield=fields.StringField())
    forbidden = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        forbidden = [str(name) for name in self.forbidden]  # type: ignore[attr-defined]
        offenders: list[tuple[str, str, int]] = []
        for package in (str(p) for p in self.source_packages):  # type: ignore[attr-defined]
            for module in sorted({package, *graph.find_descendants(package)}):
                for imported in sorted(graph.find_modules_directly_imported_by(module)):
                    for name in forbidden:
                        top, _, rest = name.partition(".")
                        if imported.split(".")[0] != top:
                            continue
                        for detail in graph.get_import_details(importer=module, imported=imported):
                            if _reaches(str(detail["line_contents"]), top, rest):
                                offenders.append((module, name, int(detail["line_number"])))
        return ContractCheck(kept=not offenders, metadata={"offenders": offenders})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for module, name, line in check.metadata["offenders"]:
            output.print_error(f"{module} imports {name} (l.{line}), which is forbidden")
            output.new_line()


def _direct_imports(graph: ImportGraph, package: str, refused: Callable[[str], bool]) -> list[tuple[str, str, int]]:
    """(importer, imported, line) of each module of `package` that directly imports a `refused` one."""
    offenders: list[tuple[str, str, int]] = []
    for module in sorted({package, *graph.find_descendants(package)}):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if refused(imported):
                details = graph.get_import_details(importer=module, imported=imported)
                offenders.append((module, imported, details[0]["line_number"] if details else 0))
    return offenders


def _reaches(line: str, top: str, rest: str) -> bool:
    words = line.replace(",", " ").replace("(", " ").replace(")", " ").split()
    dotted = f"{top}.{rest}"
    if any(word == dotted or word.startswith(dotted + ".") for word in words):
        return True
    return len(words) >= 3 and words[0] == "from" and words[1] == top and rest.split(".")[0] in words[3:]


class FacadesOnlyContract(Contract):
    """Configuration: `source_package` (a package), `target_package` (a package it composes) and
    `facades` (the modules of the target it may import).

    `colocate.whatif` composes the components through one "round in memory" module each (and the
    shared clock): an import of any other module of `scheduler_plugins` reaches into a
    component's internals and breaks the contract, naming the importer, the module and the line.
    import-linter's `forbidden` contract cannot say "all of a package but these modules"."""

    type_name = "facades_only"
    source_package = fields.StringField()
    target_package = fields.StringField()
    facades = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        package, target = str(self.source_package), str(self.target_package)
        facades = {str(f) for f in self.facades}  # type: ignore[attr-defined]

        def refused(imported: str) -> bool:
            return imported not in facades and (imported == target or imported.startswith(target + "."))

        offenders = _direct_imports(graph, package, refused)
        return ContractCheck(kept=not offenders, metadata={"offenders": offenders})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for module, imported, line in check.metadata["offenders"]:
            output.print_error(f"{module} imports {imported} (l.{line}), which is not one of the façades")
            output.new_line()
