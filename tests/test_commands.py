"""Every command that README.md, the lab README and the solution print runs as printed, from the
repository's root (the folder the three documents name), in a copy of this checkout: each exits
0, and afterwards git sees nothing changed but the learner's own ignored folder. A command that
measures runs with --quick added and nothing else changed; a command that needs root, the
installs (.ci/run makes them first) and the test command that runs this very suite are left out. The --compare command a run prints for
itself runs too."""
import re
import shutil
import subprocess

import pytest

from conftest import EXP, copy_checkout

ROOT = EXP.parent.parent
DOCS = ("README.md", "experiments/15-attention-perf/README.md",
        "solutions/03-attention-perf-ref.md")
SKIPPED = {"sudo": "needs root", "python -m pytest": "the suite this test belongs to",
           "python -m pip install": ".ci/run installs requirements-dev.txt (and with it "
                                    "requirements.txt) before the tests"}


def printed_commands(name):
    """The lines of the document's indented blocks, each a shell command; comments dropped."""
    text = re.sub(r"```.*?```", "", (ROOT / name).read_text(), flags=re.S)
    return [re.sub(r"\s+#.*$", "", ln[4:]).strip() for ln in text.splitlines()
            if ln.startswith("    ") and ln.strip()]


def test_every_document_says_where_its_commands_run():
    for name in DOCS:
        assert printed_commands(name), name
        text = " ".join((ROOT / name).read_text().split()).lower()
        assert "from the repository's root" in text, name


def as_run(command):
    """The command as the test runs it: --quick added where perf.py measures."""
    measures = "perf.py" in command and not re.search(r"--(compare|replot)\b", command)
    return command + " --quick" * measures


def sh(command, cwd, env):
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """This checkout in a fresh repository with one commit, where `python` is this interpreter."""
    if shutil.which("bash") is None:
        pytest.skip("the documents' commands are run by bash, which this machine lacks")
    dest = tmp_path_factory.mktemp("clone") / "repo"
    env = copy_checkout(dest)
    if env is None:
        pytest.skip("not a git checkout, or no git")
    if "NO_PYTHON_LINK" in env:
        pytest.skip("no symlink here to make `python` this interpreter")
    return dest, env


def test_the_printed_commands_run_as_printed_and_leave_the_checkout_clean(clone):
    dest, env = clone
    commands = list(dict.fromkeys(c for name in DOCS for c in printed_commands(name)))
    ran, printed_compare = [], []
    for command in commands:
        if any(command.startswith(prefix) for prefix in SKIPPED):
            continue
        proc = sh(as_run(command), dest, env)
        assert proc.returncode == 0, (command, proc.stderr[-2000:])
        ran.append(command)
        printed_compare += re.findall(r"^  (python \S+ --compare \S+ \S+)$", proc.stdout, re.M)
    assert any("--compare" in c for c in ran) and any("--replot" in c for c in ran)
    assert printed_compare, "a run outside the committed run's folder prints its --compare"
    for command in printed_compare:
        assert sh(command, dest, env).returncode == 0, command
    status = sh("git status --porcelain", dest, env)
    assert status.stdout == "", status.stdout
    assert (dest / "runs" / "mine" / "results.json").is_file()
    assert "runs/" in sh("git status --porcelain --ignored", dest, env).stdout
