"""The scripts that build and check the installed app: a Vulkan build that cannot start says
what to install in one line (and that MEDEXAM_GPU=cpu builds without it), packaging/check.sh
runs every check, fails on a connection to another machine and exits 1 at the end, and
.ci/run fails when the installed app's check or the suite fails."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the build scripts' checks are Linux's"
)


def run(command: list[str], env: dict[str, str], timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def vulkan_env(include: Path) -> dict[str, str]:
    """No Vulkan headers (the include folder given), nothing installed even as root."""
    env = {k: v for k, v in os.environ.items() if k != "VULKAN_SDK"}
    return {
        **env,
        "MEDEXAM_GPU": "vulkan",
        "MEDEXAM_SYSTEM_LIBS": "check",
        "MEDEXAM_INCLUDE_DIR": str(include),
    }


@pytest.mark.parametrize(
    "command",
    [
        ["scripts/setup.sh", "--llama-wheel"],
        ["scripts/setup.sh", "--gpu-path"],
        ["packaging/build.sh"],
    ],  # fmt: skip
)
def test_a_vulkan_build_without_its_headers_says_what_to_install(
    tmp_path: Path, command: list[str]
) -> None:
    out = run([str(REPO / command[0]), *command[1:]], vulkan_env(tmp_path))
    assert out.returncode == 2, out.stderr
    line = out.stderr.strip()
    assert len(line.splitlines()) == 1, line
    assert "apt-get install -y libvulkan-dev" in line and "spirv-headers" in line, line
    assert ("glslc" in line) == (shutil.which("glslc") is None), line
    assert "MEDEXAM_GPU=cpu" in line, line


def test_only_what_is_missing_is_named(tmp_path: Path) -> None:
    (tmp_path / "vulkan").mkdir()
    (tmp_path / "vulkan" / "vulkan_core.h").write_text("#define VK_HEADER_VERSION 239\n")
    out = run([str(REPO / "scripts" / "system_libs.sh"), "--vulkan"], vulkan_env(tmp_path))
    assert out.returncode == 1
    assert "libvulkan-dev" not in out.stderr and "spirv-headers" in out.stderr, out.stderr


FAKE_APP = """#!/usr/bin/env bash
case $1 in
    --version) echo "medexam, version 0.1.0" ;;
    generate) (exec 3<>/dev/tcp/192.0.2.1/80) 2>/dev/null; echo '{"text": "hi"}' ;;
    *) exit 3 ;;
esac
"""


def test_the_check_runs_every_check_and_fails_at_the_end(tmp_path: Path) -> None:
    """An app that answers only its version and a generation (which tries to reach another
    machine): every check runs and says how it went, and the check exits 1 at the end."""
    app = tmp_path / "medexam" / "medexam"
    app.parent.mkdir()
    app.write_text(FAKE_APP)
    app.chmod(0o755)
    out = subprocess.run(
        [str(REPO / "packaging" / "check.sh"), str(app)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
    )
    said = out.stdout
    assert out.returncode == 1, said
    steps = [line for line in said.splitlines() if line.startswith("== ")]
    results = [line for line in said.splitlines() if line.startswith("-- ")]
    assert len(results) == len(steps) - 1 >= 20, said  # each check but the summary
    assert "-- passed" in said.split("== cold and warm start")[1].split("== ")[0]
    for name in ["exam: a model answers", "French: dense retrieval", "a small training"]:
        assert f"FAILED: {name}" in said, said
    assert out.stdout.rstrip().endswith("check failed")
    traced = "connections traced" in out.stdout and "empty network namespace" in out.stdout
    generate = said.split("== generate")[1].split("\n== ")[0]
    if traced:
        assert "the app tried to reach the network" in generate and "192.0.2.1" in generate
        assert "FAILED: generate" in said


CI_STUB = "#!/usr/bin/env bash\necho {said}\nexit {status}\n"


@pytest.mark.parametrize(("bundle", "suite", "status"), [(0, 0, 0), (1, 0, 1), (0, 2, 2)])
def test_ci_fails_when_the_installed_app_or_the_suite_fails(
    tmp_path: Path, bundle: int, suite: int, status: int
) -> None:
    """.ci/run with stand-ins for the bundle's build and check and for the suite: both run,
    the suite's closing line ends the output, and either failing fails the run."""
    for path, said, code in [
        ("packaging/ci.sh", "bundle checked", bundle),
        ("scripts/test", "3 passed in 1.00s", suite),
    ]:
        stub = tmp_path / path
        stub.parent.mkdir(parents=True, exist_ok=True)
        stub.write_text(CI_STUB.format(said=said, status=code))
        stub.chmod(0o755)
    (tmp_path / ".ci").mkdir()
    shutil.copy(REPO / ".ci" / "run", tmp_path / ".ci" / "run")
    out = run(["bash", str(tmp_path / ".ci" / "run")], dict(os.environ))
    assert out.returncode == status, out.stdout
    assert "bundle checked" in out.stdout
    assert out.stdout.rstrip().splitlines()[-1] == "3 passed in 1.00s"
