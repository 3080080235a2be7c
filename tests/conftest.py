import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXP = Path(__file__).resolve().parent.parent / "experiments" / "15-attention-perf"
PERF = EXP / "perf.py"
sys.path.insert(0, str(EXP))
TINY = ["--quick", "--in-process", "--T", "64", "--samples", "2", "--workers", "1"]


def committed_results():
    """The committed run's results.json. A run that predates perf.OPS (an op added or removed
    since) fails the tests that read it, as it fails test_docs: it is remade by a measurement."""
    return json.loads((EXP / "results.json").read_text())


def run_perf(*args, **kw):
    """perf.py in a fresh process: its allocator settings must not leak into the test process."""
    return subprocess.run([sys.executable, str(PERF), *args], capture_output=True, text=True,
                          timeout=120, **kw)


@pytest.fixture
def reruns_restored():
    """After a test that hands the bindings other reruns, the committed ones back."""
    yield
    import bindings  # here, not at the top: it reads the committed run, which few tests need
    bindings.use_reruns(json.loads((EXP / "reruns.json").read_text())["runs"])


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory):
    """One --quick run shared by the end-to-end tests (a few seconds), made once: they share one
    xdist group (pytest.ini: --dist loadgroup)."""
    out = tmp_path_factory.mktemp("quick")
    proc = run_perf("--quick", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out, json.loads((out / "results.json").read_text()), \
        json.loads((out / "manifest.json").read_text()), proc.stdout


@pytest.fixture
def fake_mallopt(monkeypatch):
    """glibc's mallopt, accepted but not applied: an in-process run leaves the test process's
    allocator as it was."""
    import perf
    calls = []
    monkeypatch.setattr(perf, "glibc_malloc", lambda: lambda *a: calls.append(a) or 1)
    return calls


def copy_checkout(dest):
    """This checkout's files (tracked, and new ones git does not ignore) in a fresh repository at
    dest with one commit, and an environment whose `python` is this interpreter (unless it has
    NO_PYTHON_LINK: no symlink could be made); None outside a git checkout or without git."""
    root = EXP.parent.parent
    if shutil.which("git") is None:
        return None
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            cwd=root, capture_output=True, text=True)
    if listed.returncode != 0:
        return None
    for rel in listed.stdout.splitlines():
        if (root / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, dest / rel)
    bin_dir = dest.parent / (dest.name + "-bin")
    bin_dir.mkdir()
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    try:
        if os.name == "nt":
            (bin_dir / "python").symlink_to(sys.executable)
        else:  # a script, not a symlink: Python 3.10 run through a symlink to a venv's python
            # loses the venv, and with it the installed packages
            script = f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n'
            (bin_dir / "python").write_text(script)
            (bin_dir / "python").chmod(0o755)
    except OSError:  # Windows without the symlink privilege: `python` is not this interpreter
        env["NO_PYTHON_LINK"] = "1"
    for command in (["git", "init", "-q"], ["git", "add", "-A"],
                    ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "t"]):
        subprocess.run(command, cwd=dest, env=env, check=True, capture_output=True)
    return env
