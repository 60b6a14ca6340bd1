"""The wheel carries everything: built from a copy of the clone, installed into a fresh virtual environment and run
from a folder outside the clone, it plays the shipped policies (``pretrained``, ``search:policy``), trains from a
shipped config given by name (``pedro-train smoke``) and serves the table's page.

The fresh environment takes its dependencies (numpy, numba, torch, the web stack) from this one's site folders
through a ``.pth`` file of plain paths, so nothing is installed twice. A plain path runs none of the ``.pth`` files in
that folder, so this environment's own install of the project (an editable finder) does not reach the fresh one; the
test checks that every package and data folder is the fresh install's. One test runs the whole story: under xdist a
module's tests may go to two workers, and each would build, install and compile the kernels again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pedro_env", "agents", "arena", "train", "table")
SHIPPED_DATA = {
    "models": ("agents/models", "*.pt"),
    "configs": ("train/configs", "*.yaml"),
    "table/static": ("table/static", "*"),
}
"""Folder in the clone -> (its folder in the wheel, the files shipped)."""
NOT_SOURCES = (".git", ".venv", "venv", "runs", "eval", "build", "dist", "*.egg-info", "__pycache__", ".*_cache")
COMMAND_SECONDS = 180

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform == "win32", reason="the venv's bin/ layout")]


@dataclass(frozen=True)
class Install:
    """A fresh virtual environment holding the wheel: its ``bin`` folder, its site folder and a working folder
    outside the clone, and the environment its commands run with."""

    bin: Path
    site_packages: Path
    work: Path
    env: dict[str, str]

    def run(self, command: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / command), *args],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=COMMAND_SECONDS,
            stdin=subprocess.DEVNULL,
        )


def build_wheel(tmp_path: Path) -> Path:
    """The wheel of a copy of the clone (a build in place could carry stale files of an old ``build/`` folder)."""
    source = tmp_path / "source"
    shutil.copytree(REPO_ROOT, source, ignore=shutil.ignore_patterns(*NOT_SOURCES))
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    built = subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--no-cache-dir", "-w", wheels, source],
        capture_output=True,
        text=True,
        timeout=COMMAND_SECONDS,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = wheels.glob("pedro_rl-*.whl")
    return wheel


def install(wheel: Path, tmp_path: Path) -> Install:
    """A fresh venv (no pip of its own) with ``wheel`` installed and this environment's site folders on its path."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, timeout=COMMAND_SECONDS)
    python = venv / "bin" / "python"
    site_packages = Path(
        subprocess.check_output(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    dependencies = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    (site_packages / "pedro_test_dependencies.pth").write_text("\n".join(dependencies) + "\n")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "--python", str(python)]
    installed = subprocess.run(
        [*pip, "install", "--no-deps", "--no-index", "--no-cache-dir", wheel],
        capture_output=True,
        text=True,
        timeout=COMMAND_SECONDS,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return Install(venv / "bin", site_packages, work, env)


def check_contents(wheel: Path) -> None:
    """Every package of the clone, the models, configs and the table's page under their package folders, and
    nothing else (no tests/, no second models/ or configs/ at the top)."""
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in PACKAGES:
        for init in sorted((REPO_ROOT / package).rglob("__init__.py")):
            assert init.relative_to(REPO_ROOT).as_posix() in names, f"{init} is not in the wheel"
    for folder, (packaged, pattern) in SHIPPED_DATA.items():
        files = sorted(path.name for path in (REPO_ROOT / folder).glob(pattern) if path.is_file())
        assert files, f"nothing to ship in {folder}/"
        assert {f"{packaged}/{name}" for name in files} <= names, f"{folder}/ is not all in {packaged}/"
    top = {name.split("/")[0] for name in names}
    assert top == {*PACKAGES, f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}, sorted(top)


def check_imports(installed: Install) -> None:
    """The packages and the shipped data come from the fresh install, and the clone is nowhere on the path."""
    program = (
        "import json, sys, agents, arena, pedro_env, table, train, train.config_yaml\n"
        "print(json.dumps({'files': [m.__file__ for m in (agents, arena, pedro_env, table, train)],\n"
        "    'data': [str(agents.MODELS_DIR), str(train.config_yaml.CONFIGS_DIR)], 'path': sys.path}))"
    )
    answer = installed.run("python", "-c", program)
    assert answer.returncode == 0, answer.stderr
    found = json.loads(answer.stdout)
    site_packages = str(installed.site_packages.resolve())
    for file in found["files"]:
        assert Path(file).resolve().is_relative_to(site_packages), f"{file} is not the fresh install's"
    assert found["data"] == [f"{site_packages}/agents/models", f"{site_packages}/train/configs"]
    assert str(REPO_ROOT) not in found["path"]


def check_eval(installed: Install) -> None:
    """The shipped policies play: ``pretrained``, and ``search:policy`` with its default model (small settings)."""
    short = ["--workers", "1", "--set", "target_score=11"]
    for spec, sizes in (
        ("pretrained", ["--pairs", "2"]),
        ("search:policy,samples=2,play_samples=2", ["--pairs", "1", "--batch-size", "2"]),
    ):
        played = installed.run("pedro-eval", spec, "random", *sizes, *short)
        assert played.returncode == 0, played.stderr
        assert re.search(r"^wrote eval/", played.stdout, re.MULTILINE), played.stdout


def check_train(installed: Install) -> None:
    """``pedro-train smoke`` (a shipped config by name, at a few seconds' size) writes its run here; an unknown name
    is one line listing the shipped ones, which ``--help`` lists too."""
    tiny = ["total_decisions=512", "num_envs=8", "eval_interval=0", "final_eval_pairs=0", "final_partner_pairs=0"]
    tiny += ["baseline_opponents=[random]", "eval_opponents=[random]"]  # no rule agent's kernels to compile
    trained = installed.run("pedro-train", "smoke", "--no-progress", "--run-name", "wheel", "--set", *tiny)
    assert trained.returncode == 0, trained.stderr
    run_dir = installed.work / "runs" / "wheel"
    assert (run_dir / "latest.pt").is_file() and (run_dir / "config.yaml").is_file(), trained.stderr
    refused = installed.run("pedro-train", "smoky")
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "smoke" in refused.stderr and "ppo_selfplay" in refused.stderr
    helped = installed.run("pedro-train", "--help")
    assert helped.returncode == 0 and "ppo_selfplay" in helped.stdout, helped.stderr


def check_table(installed: Install) -> None:
    """``pedro-table`` on a free port of 127.0.0.1 serves its page and offers the shipped policies."""
    process = subprocess.Popen(
        [str(installed.bin / "pedro-table"), "--host", "127.0.0.1"],
        cwd=installed.work,
        env=installed.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = process.stdout.readline()  # the address, printed once the port is bound (listening follows)
        address = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert address, line + (process.stderr.read() if process.poll() is not None else "")
        page = get_when_listening(address.group(0), process)
        assert "<html" in page.lower(), page[:200]
        offered = {
            agent["name"]
            for agent in json.loads(get_when_listening(address.group(0) + "api/options", process))["agents"]
        }
        assert {"pretrained", "search:policy"} <= offered, offered
    finally:
        process.terminate()
        process.communicate(timeout=COMMAND_SECONDS)


def get_when_listening(url: str, server: subprocess.Popen, seconds: float = 60.0) -> str:
    """The body of a GET of ``url`` (status 200), tried until ``server`` listens, for at most ``seconds``."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1 directly, whatever the proxy
    deadline = time.monotonic() + seconds
    while True:
        try:
            with opener.open(url, timeout=seconds) as answer:
                assert answer.status == 200, answer.status
                return answer.read().decode()
        except urllib.error.URLError:
            assert server.poll() is None, f"pedro-table ended: {server.stderr.read()}"
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_the_wheel_installs_and_runs_from_outside_the_clone(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("uvicorn")
    wheel = build_wheel(tmp_path)
    check_contents(wheel)
    installed = install(wheel, tmp_path)
    check_imports(installed)
    check_eval(installed)
    check_train(installed)
    check_table(installed)
