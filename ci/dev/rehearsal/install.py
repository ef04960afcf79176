"""Step 5: fresh installs from the local index. pytinytensor-cu12 and pytinytensor-cu12-libs from
that index only (pip --isolated, --no-deps, pinned to the uploaded files' sha256), then their other
dependencies from the normal index, while a decoy index with a higher-versioned pytinytensor-cu12 is
configured where pip would see it; `python -m tinytensor`; the install's weight and download; the
test suite against it (tests/tooling/release: the libraries of pytinytensor-cu12-libs, NVRTC,
another CUDA on LD_LIBRARY_PATH), also under preloaded allocators; an upgrade to a release that
keeps the CUDA pin. pytinytensor's CPU wheel the same way, in its own environment, with the CPU
suite."""

from __future__ import annotations

import base64
import concurrent.futures
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from buildsys.release_matrix import CUDA_RELEASES
from ci import pytest_summary
from ci.dev import torch_oracle
from ci.project_paths import CACHE
from ci.release import wheel_files
from ci.release.release_manifest import normalized, sha256

from . import publishing
from .common import HERE, LOCKS, NOTES, RELEASE, log, pip_install, python_tag, scratch, sh, step

DIST = CUDA_RELEASES[0].dist  # the CUDA variant the rehearsal installs

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

DECOY_VERSION = "99.0.0"

DECOY_MESSAGE = f"DECOY {DIST} from the second index was installed"


def decoy_wheel(dest: Path) -> Path:
    """A real, tiny wheel named pytinytensor-cu12, far above our version, whose import says what it is."""
    dest.mkdir(parents=True, exist_ok=True)
    dist_info = f"{normalized(DIST)}-{DECOY_VERSION}.dist-info"
    files = {
        "tinytensor/__init__.py": f"raise ImportError({DECOY_MESSAGE!r})\n",
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {DIST}\nVersion: {DECOY_VERSION}\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: release_rehearsal\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    files[f"{dist_info}/RECORD"] = "\n".join(record + [f"{dist_info}/RECORD,,"]) + "\n"
    wheel = dest / f"{normalized(DIST)}-{DECOY_VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in files.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), text)
    return wheel


def _installed(report: Path) -> list[dict]:
    return json.loads(report.read_text())["install"]


def fresh_install(python: str, index: str, decoy: str, version: str, wheel: Path, libs_wheel: Path, work: Path) -> dict:
    """Ours (the wheel and the library wheel) from the local index only, then the other dependencies
    from the normal index, while a decoy index with a higher-versioned pytinytensor-cu12 is
    configured where pip would see it."""
    venv = scratch(work / "fresh-venv")
    sh([python, "-m", "venv", str(venv)])
    py = str(venv / "bin" / "python")
    digest = sha256(wheel)
    env = dict(os.environ, PIP_EXTRA_INDEX_URL=f"{decoy}/simple/")

    # The decoy is live: where two indexes are merged (the old `--extra-index-url` install), pip takes it.
    probe = work / "pip-decoy-probe.json"
    pip_install(
        py,
        "--dry-run",
        "--no-deps",
        "--index-url",
        f"{index}/simple/",
        "--report",
        str(probe),
        DIST,
        env=env,
    )
    chosen = next(i for i in _installed(probe) if i["metadata"]["name"] == DIST)
    if chosen["metadata"]["version"] != DECOY_VERSION or not chosen["download_info"]["url"].startswith(decoy):
        raise RuntimeError(f"the decoy is not live: merged indexes chose {chosen['download_info']['url']}")

    # Ours: --isolated ignores PIP_* variables and pip.conf (so no extra index), one index, exactly
    # the uploaded file (--require-hashes), no dependencies (they are not ours to pin here).
    libs_name, libs_version = libs_wheel.name.split("-")[:2]
    libs_name = libs_name.replace("_", "-")
    ours_req = work / "ours.txt"
    ours_req.write_text(
        f"{DIST}=={version} --hash=sha256:{digest}\n{libs_name}=={libs_version} --hash=sha256:{sha256(libs_wheel)}\n"
    )
    report = work / "pip-install-report.json"
    sh(
        [
            py,
            "-m",
            "pip",
            "--isolated",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--index-url",
            f"{index}/simple/",
        ]
        + ["--no-deps", "--require-hashes", "--report", str(report), "-r", str(ours_req)],
        env=env,
    )
    for name, file in ((DIST, wheel), (libs_name, libs_wheel)):
        ours = next(i for i in _installed(report) if i["metadata"]["name"] == name)
        got_url = ours["download_info"]["url"]
        got = ours["download_info"].get("archive_info", {}).get("hashes", {}).get("sha256")
        if not got_url.startswith(index) or got != sha256(file) or not got_url.endswith(file.name):
            raise RuntimeError(f"pip installed {name} from {got_url} (sha256 {got}), not the uploaded {file.name}")
        if name == DIST:
            url = got_url

    # Its dependencies, as a user's install gets them: the normal index (the decoy still configured).
    requires = sh(
        [py, "-c", f"import importlib.metadata as m; print('\\n'.join(m.requires({DIST!r}) or []))"],
        capture=True,
        cwd=work,
    ).stdout
    deps_req = work / "dependencies.txt"
    deps_req.write_text(requires)
    deps_report = work / "pip-install-dependencies.json"
    pip_install(py, "--report", str(deps_report), "-r", str(deps_req), env=env)
    installed = _installed(report) + _installed(deps_report)
    replaced = [
        i["metadata"]["name"] for i in _installed(deps_report) if i["metadata"]["name"].startswith("pytinytensor")
    ]
    if replaced:
        raise RuntimeError(f"installing the dependencies replaced {replaced}")
    shown = sh(
        [py, "-c", f"import importlib.metadata as m; print(m.version({DIST!r}))"],
        capture=True,
        cwd=work,
    ).stdout.strip()
    if shown != version:
        raise RuntimeError(f"{DIST} {shown} is installed, not {version}")
    weights = json.loads(sh([py, "-c", WEIGHT], capture=True, cwd=work).stdout)
    downloads = {DIST: wheel.stat().st_size, libs_name: libs_wheel.stat().st_size}
    downloads.update(download_sizes(py, _installed(deps_report), work / "deps-download"))
    return {
        "download_bytes": dict(sorted(downloads.items(), key=lambda kv: -kv[1])),
        "first_install_download_bytes": sum(downloads.values()),
        "venv": str(venv),
        "python": py,
        "installed_from": url,
        "sha256": digest,
        "decoy": {
            "index": decoy,
            "version": DECOY_VERSION,
            "merged_indexes_chose": chosen["download_info"]["url"],
            "refused": True,
        },
        "packages": sorted(f"{i['metadata']['name']}=={i['metadata']['version']}" for i in installed),
        "weights": dict(sorted(weights.items(), key=lambda kv: -kv[1])),
        "total_bytes": sum(weights.values()),
    }


def download_sizes(py: str, items: list[dict], dest: Path) -> dict[str, int]:
    """{name: bytes} of the files pip downloads for these installed items (from pip's cache if warm):
    pip's install report names each file but not its size."""
    sizes = {}
    for item in items:
        name, version = item["metadata"]["name"], item["metadata"]["version"]
        folder = dest / name
        download = [py, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps"]
        sh(download + ["-d", str(folder), f"{name}=={version}"])
        sizes[name] = sum(f.stat().st_size for f in folder.iterdir())
        shutil.rmtree(folder)  # measured; torch alone is 0.2 GB
    return sizes


def next_patch(version: str) -> str:
    parts = version.split(".")
    return ".".join(parts[:-1] + [str(int(parts[-1]) + 1)])


def reversioned(wheel: Path, new_version: str, dest: Path) -> Path:
    """The same wheel as release `new_version` (its dist-info, METADATA and file name changed):
    what the next release that keeps the CUDA pin publishes for this Python, to measure an upgrade."""
    name, old_version = wheel.name.split("-")[:2]
    with tempfile.TemporaryDirectory(prefix="reversion-") as tmp:
        tree = wheel_files.unpack(wheel, Path(tmp))
        old_info = tree / f"{name}-{old_version}.dist-info"
        new_info = tree / f"{name}-{new_version}.dist-info"
        old_info.rename(new_info)
        metadata = (new_info / "METADATA").read_text()
        (new_info / "METADATA").write_text(
            metadata.replace(f"\nVersion: {old_version}\n", f"\nVersion: {new_version}\n", 1)
        )
        return wheel_files.pack(tree, dest)


def upgrade(py: str, index: str, next_wheel: Path, work: Path) -> dict:
    """`pip install --upgrade pytinytensor-cu12` to a release that keeps the CUDA pin, from the local
    index only: what it downloads (it must not download pytinytensor-cu12-libs again)."""
    report = work / "pip-upgrade-report.json"
    sh(
        [py, "-m", "pip", "--isolated", "install", "-q", "--disable-pip-version-check", "--upgrade"]
        + ["--index-url", f"{index}/simple/", "--report", str(report), DIST]
    )
    items = _installed(report)
    names = {i["metadata"]["name"]: i["metadata"]["version"] for i in items}
    next_version = next_wheel.name.split("-")[1]
    if names.get(DIST) != next_version:
        raise RuntimeError(f"the upgrade installed {names}, not {DIST} {next_version}")
    if len(names) != 1:
        raise RuntimeError(f"an upgrade that keeps the CUDA pin downloaded more than our wheel: {names}")
    return {"installed": names, "download_bytes": next_wheel.stat().st_size}


def allocator_checks(py: str, out: Path, name: str, library: str) -> dict[str, int]:
    """Exit status of import tinytensor, HAS_CUDA and the preflight with `library` preloaded
    (LD_PRELOAD), as on a serving machine that uses it; its test suite runs with the others."""
    env = dict(os.environ, LD_PRELOAD=library)
    checks = {}
    for label, command in (
        ("import tinytensor; HAS_CUDA", [py, "-c", "import tinytensor as tt; print(tt.HAS_CUDA)"]),
        ("python -m tinytensor", [py, "-m", "tinytensor"]),
    ):
        proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=out)
        checks[label] = proc.returncode
        if proc.returncode:
            log(f"{label} under {name} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return checks


def preflight(py: str, out: Path) -> dict:
    cwd = out  # away from the source tree
    text = sh([py, "-m", "tinytensor"], capture=True, cwd=cwd).stdout
    (out / "preflight.txt").write_text(text)
    print(text)
    return json.loads(sh([py, "-m", "tinytensor", "--json"], capture=True, cwd=cwd).stdout)


def cupy_headers(py: str, work: Path) -> dict:
    """Where CuPy's own lookup finds the CUDA runtime headers in the fresh install, as on a machine
    with only a driver (no CUDA_PATH, no CUDA_HOME), and whether its kernel headers compile there."""
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_PATH", "CUDA_HOME")}
    proc = sh([py, str(RELEASE / "cupy_headers.py")], capture=True, check=False, cwd=work, env=env)
    found = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {"problems": [proc.stderr]}
    log(f"CuPy's kernel headers: {found.get('runtime_headers')}; problems: {found['problems'] or 'none'}")
    return found


def install_test_tools(py: str, source: Path) -> None:
    pip_install(py, "--require-hashes", "-r", str(source / LOCKS / "wheel-test.txt"))
    torch = torch_oracle.install_args(python_tag(py))
    if torch:
        pip_install(py, *torch)
    else:
        NOTES.append("no PyTorch CPU wheel here (the test oracle): its comparisons were skipped")


def run_tests(
    py: str, source: Path, out: Path, name: str = "tests", env_extra: dict | None = None, expect: str = "full"
) -> dict:
    """The test suite against the installed wheel (tests/tooling/build aside); its summary, junit XML and
    output under `out` as <name>-<summary>.json, <name>.xml and <name>.log."""
    summary = out / f"{name}-{pytest_summary.FILE}"
    env = dict(
        os.environ,
        TINYTENSOR_EXPECT_BACKEND=expect,
        TT_INSTALLED_WHEEL="1" if expect == "full" else "",
        OPENBLAS_NUM_THREADS="1",
        PYTINYTENSOR_CACHE=str(CACHE),  # another CUDA 12 for the isolation tests: the build's toolchain
        **pytest_summary.env(summary),
        **(env_extra or {}),
    )
    command = [py, "-m", "pytest", str(source / "tests"), "--ignore", str(source / "tests" / "tooling" / "build"), "-q"]
    command += ["-p", "no:cacheprovider", "--junitxml", str(out / f"{name}.xml"), "--rootdir", str(source)]
    with open(out / f"{name}.log", "w") as output:
        sh(command, env=env, cwd=out, stdout=output, stderr=subprocess.STDOUT, check=False)
    result = pytest_summary.read(summary)
    log(f"{name}: {result['passed']} passed, {result['failed']} failed, {result['skipped']} skipped ({name}.log)")
    return result


def cpu_install(python: str, index: str, version: str, wheel: Path, source: Path, out: Path, work: Path) -> dict:
    """`pip install pytinytensor` as a CPU user gets it: the pure wheel from the local index only
    (exactly the uploaded file), its dependencies from the normal index; the preflight; the test tools."""
    venv = scratch(work / "cpu-venv")
    sh([python, "-m", "venv", str(venv)])
    py = str(venv / "bin" / "python")
    ours = work / "cpu-ours.txt"
    ours.write_text(f"pytinytensor=={version} --hash=sha256:{sha256(wheel)}\n")
    report = work / "pip-install-cpu.json"
    sh(
        [py, "-m", "pip", "--isolated", "install", "-q", "--disable-pip-version-check", "--only-binary", ":all:"]
        + ["--index-url", f"{index}/simple/", "--no-deps", "--require-hashes", "--report", str(report), "-r", str(ours)]
    )
    got = _installed(report)[0]["download_info"]
    if not got["url"].startswith(index) or got["archive_info"]["hashes"]["sha256"] != sha256(wheel):
        raise RuntimeError(f"pip installed pytinytensor from {got['url']}, not the uploaded {wheel.name}")
    requires = sh([py, "-c", "import importlib.metadata as m; print('\\n'.join(m.requires('pytinytensor') or []))"],
                  capture=True, cwd=work).stdout  # fmt: skip
    deps = work / "cpu-dependencies.txt"
    deps.write_text(requires)
    pip_install(py, "-r", str(deps))
    preflight = json.loads(sh([py, "-m", "tinytensor", "--json"], capture=True, cwd=out).stdout)
    pip_install(py, "--require-hashes", "-r", str(source / LOCKS / "wheel-test.txt"))
    return {"python": py, "installed_from": got["url"], "backend": preflight["backend"]}


def install_and_test(args, index, decoy, sources, checked, out: Path, work: Path) -> dict:
    """Step 5 against the published release on `index` (and the decoy on `decoy`)."""
    version, source = sources.version, sources.source
    final = next(w for w in checked.wheels if f"-{python_tag(args.python)}-" in w.name)
    facts: dict = {}
    with step("fresh install from the index"):
        facts["install"] = fresh_install(args.python, index, decoy, version, final, checked.libs_wheel, work)
    py = facts["install"]["python"]
    with step("preflight"):
        facts["preflight"] = preflight(py, out)
    with step("CuPy's kernel headers, with CUDA_PATH and CUDA_HOME unset"):
        facts["cupy_headers"] = cupy_headers(py, work)
    allocators = dict(line.split("=", 1) for line in sh([str(HERE / "allocators.sh")], capture=True).stdout.split())
    allocator_env = {f"TT_{name.upper()}": path for name, path in allocators.items()}
    with step("the CPU wheel: fresh install from the index, preflight"):
        cpu = cpu_install(args.python, index, version, checked.cpu_wheel, source, out, work)
    with step("import and the preflight under preloaded allocators"):
        install_test_tools(py, source)
        exits = {name: allocator_checks(py, out, name, path) for name, path in allocators.items()}
    # The suites, two at a time (two cores; each is one process): the installed cu12 wheel, the
    # same under each allocator, and the CPU wheel.
    suites = {"tests": (py, allocator_env, "full"), "tests-cpu-wheel": (cpu["python"], {}, "cpu-only")}
    for name, path in allocators.items():
        suites[f"tests-{name}"] = (py, {**allocator_env, "LD_PRELOAD": path}, "full")
    with step(f"test suites: {', '.join(suites)}"), concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = {
            name: pool.submit(run_tests, python, source, out, name, env, expect)
            for name, (python, env, expect) in suites.items()
        }
        results = {name: run.result() for name, run in runs.items()}
    facts["tests"] = results["tests"]
    counts = lambda r: {k: r[k] for k in ("passed", "failed", "skipped")}  # noqa: E731
    facts["allocators"] = {
        name: {
            "library": path,
            "exit_status": exits[name],
            "tests": counts(results[f"tests-{name}"]),
            "passed": not any(exits[name].values())
            and not results[f"tests-{name}"]["failed"]
            and results[f"tests-{name}"]["passed"] > 0,
        }
        for name, path in allocators.items()
    }
    cpu_tests = results["tests-cpu-wheel"]
    facts["cpu_install"] = {
        "installed_from": cpu["installed_from"],
        "backend": cpu["backend"],
        "tests": counts(cpu_tests),
        "passed": not cpu_tests["failed"] and cpu_tests["passed"] > 0 and cpu["backend"]["active"] == "cpu",
    }
    next_version = next_patch(version)
    next_wheel = reversioned(final, next_version, work / "next-release")
    with step(f"upgrade to {next_version}, which keeps the CUDA pin"):
        # The next release's files, as its publish job holds them: the library wheel (the same
        # bytes: same pin, reproducible build) and the new wheel. ci/release/publish.py plan must
        # skip the library wheel, which the index already has, and stage only the new wheel.
        upgrade_publish = publishing.publish(index, [checked.libs_wheel, next_wheel], work, "next-release")
        if upgrade_publish["uploaded"] != [next_wheel.name] or upgrade_publish["skipped"] != [checked.libs_wheel.name]:
            raise RuntimeError(
                f"the next release's publishing uploaded {upgrade_publish}, expected only {next_wheel.name}"
            )
        facts["upgrade"] = upgrade(py, index, next_wheel, work)
    return facts
