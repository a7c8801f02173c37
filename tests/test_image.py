"""The container image: what Containerfile promises, and its steps run as written.

There is no container engine on a test machine, so the image is not built here. Instead its two
RUN steps and its ENTRYPOINT are run, as written in Containerfile, on a copy of the build context
(`.dockerignore` applied) with the image's paths (`/src`, `/wheels`, `/opt/colocate`) mapped to
temporary directories: the wheels are built from the context, installed into a new virtualenv from
those wheels only (`--no-index`), and `colocate` is run from outside the source tree with the
image's environment. What a package forgot to ship, or a dependency the wheel does not declare,
fails here as it would in the image.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

import colocate
from tests.support.containerfile import Stage, build_context, ignored, parse
from tests.support.paths import REPO

CONTAINERFILE = REPO / "Containerfile"
INSTALLED_PACKAGES = ("colocate", "webhook", "policies", "scheduler_plugins", "certs")


def stages() -> list[Stage]:
    return parse(CONTAINERFILE.read_text())


def test_the_final_stage_is_a_slim_python_running_colocate_as_a_non_root_user() -> None:
    build, final = stages()
    version = re.search(r"python:(3\.\d+)-slim-(\w+)$", final.image)
    assert version and build.name
    # the build stage: the same Python and Debian release, with a compiler (for the mypyc hot path)
    assert build.image == final.image.replace(f"{version[1]}-slim-", f"{version[1]}-")
    assert final.entrypoint == ["colocate"]
    uid, _, gid = final.user.partition(":")
    assert uid.isdigit() and int(uid) != 0 and gid.isdigit() and int(gid) != 0
    # the manifests run the pods as that user
    for path in (REPO / "manifests/deploy/deployment.yaml", REPO / "manifests/koord-scheduler/deployment.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc["kind"] == "Deployment":
                context = doc["spec"]["template"]["spec"]["securityContext"]
                assert (context["runAsUser"], context["runAsGroup"]) == (int(uid), int(gid)), path


def test_the_final_stage_has_no_compiler_and_writes_nothing_at_run_time() -> None:
    _, final = stages()
    (install,) = final.runs
    assert "apt-get" not in install and "--no-index" in install and "--no-cache-dir" in install
    assert final.copies == []  # nothing from the build context: only what the wheels install
    assert final.env["PYTHONDONTWRITEBYTECODE"] == "1"


def test_the_build_context_leaves_out_local_state() -> None:
    patterns = [p for p in (REPO / ".dockerignore").read_text().splitlines() if p and not p.startswith("#")]
    for local in (".venv", ".git", "certs-local", "certs/__pycache__", "colocate.egg-info"):
        assert ignored(Path(local), patterns), local
    for shipped in ("pyproject.toml", "README.md", "policies/admission/profiles.py", "manifests/cluster/profiles.yaml"):
        assert not ignored(Path(shipped), patterns), shipped


def in_image_paths(command: str, paths: dict[str, Path]) -> list[list[str]]:
    """A RUN line's commands (split on `&&`) with the image's absolute paths mapped to `paths`."""
    commands: list[list[str]] = [[]]
    for word in shlex.split(command):
        if word == "&&":
            commands.append([])
            continue
        for image_path, local in paths.items():
            if word == image_path or word.startswith(image_path + "/"):
                word = str(local) + word[len(image_path) :]
        commands[-1].append(word)
    # `python` is the base image's interpreter; here, the one running the tests (a new venv made
    # from it starts empty all the same)
    return [[sys.executable, *argv[1:]] if argv[0] == "python" else argv for argv in commands]


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{shlex.join(argv)}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def test_the_image_steps_build_an_installable_colocate(tmp_path: Path) -> None:
    build, final = stages()
    paths = {"/src": tmp_path / "src", "/wheels": tmp_path / "wheels", "/opt/colocate": tmp_path / "opt-colocate"}
    build_context(REPO, paths["/src"])
    (build_step,) = build.runs
    for argv in in_image_paths(build_step, paths):
        run(argv, cwd=paths["/src"])
    assert list(paths["/wheels"].glob("colocate-*.whl"))
    (install_step,) = final.runs
    for argv in in_image_paths(install_step, paths):
        run(argv, cwd=tmp_path)

    env = {
        "HOME": str(tmp_path),
        **{
            k: v.replace("/opt/colocate", str(paths["/opt/colocate"])).replace("$PATH", os.environ.get("PATH", ""))
            for k, v in final.env.items()
        },
    }
    elsewhere = tmp_path / "workdir"
    elsewhere.mkdir()
    version = run([*final.entrypoint, "--version"], cwd=elsewhere, env=env)
    assert version.stdout.split() == ["colocate", colocate.__version__]
    # imported from the installed wheel, not from a source tree
    where = run(
        [
            str(paths["/opt/colocate"] / "bin/python"),
            "-c",
            "import colocate, policies; print(colocate.__file__); print(policies.__file__)",
        ],
        cwd=elsewhere,
        env=env,
    )
    assert all(line.startswith(str(paths["/opt/colocate"])) for line in where.stdout.split())
    # every installed package is marked typed (PEP 561), and the wheel carries the license
    site = Path(where.stdout.split()[0]).parents[1]
    assert all((site / package / "py.typed").is_file() for package in INSTALLED_PACKAGES)
    assert list(site.glob(f"colocate-{colocate.__version__}.dist-info/**/LICENSE"))
    # every module of the default groups compiled (this machine, like the build image, has a compiler)
    compiled = run(
        [
            str(paths["/opt/colocate"] / "bin/python"),
            "-c",
            "from colocate.cluster.compiled import DEFAULT_GROUPS, compiled_modules, modules_of;"
            " print(len(compiled_modules(modules_of(DEFAULT_GROUPS))), len(modules_of(DEFAULT_GROUPS)))",
        ],
        cwd=elsewhere,
        env=env,
    )
    done, wanted = compiled.stdout.split()
    assert done == wanted, compiled.stdout
    # every command group loads (each imports its own packages lazily)
    for group in ("serve", "apply", "certs", "scheduler", "manifests"):
        run([*final.entrypoint, group, "--help"], cwd=elsewhere, env=env)
    admitted = run(
        [
            *final.entrypoint,
            "apply",
            "--cluster",
            str(REPO / "manifests/cluster"),
            "-f",
            str(REPO / "manifests/samples/batch-pod.yaml"),
        ],
        cwd=elsewhere,
        env=env,
    )
    assert '"koordinator.sh/qosClass": "BE"' in admitted.stdout


def test_the_documented_build_command_is_the_containerfiles() -> None:
    header = [line for line in CONTAINERFILE.read_text().splitlines() if "build -f Containerfile" in line]
    documented = (REPO / "docs/deploy.md").read_text()
    assert header and all(line.lstrip("# ").strip() in documented for line in header[:1])
    assert "kustomize edit set image colocate=" in documented
