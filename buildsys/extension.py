"""Compile and link tinytensor.cuda_ops: nvcc for the kernels, a C++ compiler for the binding.

TINYTENSOR_LINKER=zig compiles the binding and links with zig's clang against glibc 2.28
(TINYTENSOR_ZIG_TARGET), so a wheel built on a newer distribution still reaches manylinux_2_28;
zig is $TINYTENSOR_ZIG (a command line, e.g. "python -m ziglang"), else `zig` on PATH. The
default is $CXX (else Python's own C++ compiler, else c++); nvcc's host compiler is $CUDAHOSTCXX,
else nvcc's own default, gcc on PATH. TINYTENSOR_RPATH=0 leaves the toolkit's library folders out
of the RPATH (release builds: ci/release/repair_wheel.py then sets an $ORIGIN-relative RUNPATH to
pytinytensor-cuNN-libs' lib/ folder).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

from . import commands, settings
from .archs import gencode_flags
from .toolkit import Toolkit

NVCC_FLAGS = ["-O3", "-std=c++17", "-Xcompiler=-fPIC,-fvisibility=hidden,-fno-exceptions", "-Xfatbin=-compress-all"]
CXX_FLAGS = ["-O2", "-std=c++17", "-fPIC", "-fvisibility=hidden"]


class BuildError(Exception):
    """Why the extension cannot be built: ``cause`` (one line), ``fix``, and any ``output`` to show."""

    def __init__(self, cause: str, fix: str, output: str = ""):
        super().__init__(cause)
        self.cause, self.fix, self.output = cause, fix, output


class CompileError(BuildError):
    """A failed compiler or linker run: the cause is its first error line, the output its tail."""

    def __init__(self, step: str, command: list[str], output: str, fix: str = ""):
        lines = output.strip().splitlines()
        first_error = next((ln.strip() for ln in lines if "error" in ln.lower()), lines[-1].strip() if lines else "")
        super().__init__(
            f"{step} failed: {first_error}",
            fix or "see the compiler output above; point CUDA_HOME at another toolkit, or set CXX / CUDAHOSTCXX",
            f"$ {shlex.join(map(str, command))}\n" + "\n".join(lines[-25:]),
        )


@dataclass
class BuildReport:
    seconds: float
    size_bytes: int
    sass: list[int]
    ptx: list[int]
    nvcc_flags: list[str]
    binding_compiler: str
    linker: str


def _run(step: str, command: list[str], env=None) -> str:
    try:
        proc = commands.run(command, env)
    except commands.CommandTimeout as exc:
        fix = f"raise {commands.TIMEOUT_VAR}, or point CUDA_HOME at another toolkit"
        raise CompileError(step, command, str(exc), fix) from None
    except OSError as exc:
        raise CompileError(step, command, f"{command[0]} cannot run: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        raise CompileError(step, command, proc.stdout + proc.stderr)
    return proc.stdout


def _cxx(env) -> tuple[list[str], str]:
    """The C++ compiler for the binding (and the link), and how to describe it."""
    if settings.linker(env) == "zig":
        target, zig = settings.zig_target(env), settings.zig(env)
        if not shutil.which(zig[0]):
            raise CompileError("finding zig", zig, "TINYTENSOR_LINKER=zig but zig is not found: set TINYTENSOR_ZIG")
        return zig + ["c++", "-target", target], f"zig c++ -target {target}"
    command = settings.cxx(env) or shlex.split(sysconfig.get_config_var("CXX") or "c++")
    return command, command[0]


def _check_compilers(env, cxx: list[str], host_cxx: str) -> None:
    """Both compilers must exist before anything runs, so that a missing one is named as such."""
    path = env.get("PATH", os.defpath)
    missing = [f"{cxx[0]} (the binding's C++ compiler: $CXX)"] if not shutil.which(cxx[0], path=path) else []
    if not shutil.which(host_cxx, path=path):
        missing.append(f"{host_cxx} (nvcc's host compiler: $CUDAHOSTCXX)")
    if missing:
        raise BuildError(
            f"no C/C++ compiler: {' and '.join(missing)} not found",
            "install g++ (Debian: build-essential), or set CXX and CUDAHOSTCXX to a compiler",
        )


def _require_pybind11():
    """pybind11 is a build requirement: build isolation installs it, --no-build-isolation needs it present."""
    try:
        import pybind11
    except ImportError as exc:
        raise BuildError(
            f"pybind11 is not importable by the building Python ({sys.executable}): {exc}",
            "pip install pybind11 into the build environment, or build without --no-build-isolation",
        ) from None
    return pybind11


def _c_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def host_compiler_version(host_cxx: str) -> str:
    """The first line of ``host_cxx --version`` (e.g. "g++ (GCC) 14.2.1 20250110 (Red Hat 14.2.1-7)")."""
    lines = _run("asking the host compiler its version", [host_cxx, "--version"]).splitlines()
    return lines[0].strip() if lines else "unknown"


def _nvcc(toolkit: Toolkit, command: list[str], host_cxx: str, host_version: str) -> None:
    """Run nvcc; a host compiler it does not support is named as such (nvcc's own check in
    crt/host_config.h stops at the first line that includes a CUDA header)."""
    try:
        _run("nvcc", command)
    except CompileError as exc:
        refused = re.search(r"unsupported (GNU|clang) version[^\n]*", exc.output)
        if not refused:
            raise
        raise BuildError(
            f"nvcc {toolkit.release} does not support the host compiler {host_cxx} ({host_version}): "
            f"{refused.group(0).strip()}",
            "set CUDAHOSTCXX to a C++ compiler this nvcc supports (CUDA 12.4 to 12.7 refuse GCC newer than 13): "
            "e.g. g++-13, or gcc-toolset-13's g++ on a manylinux_2_28 image (ci/release/install-cuda12.sh "
            "installs one for the release build)",
            exc.output,
        ) from None


def write_build_info(
    path: Path, toolkit: Toolkit, sass, ptx, nvcc_flags, host_cxx: str, host: str, binding: str, variant: str
):
    values = {
        "TT_CUDA_VERSION": _c_string(toolkit.release),
        "TT_CUDART_VERSION": str(toolkit.cudart_version),
        "TT_CUBLAS_HEADER_VERSION": _c_string(toolkit.cublas_header_version),
        "TT_SASS_ARCHS": _c_string(";".join(map(str, sass))),
        "TT_PTX_ARCHS": _c_string(";".join(map(str, ptx))),
        # no path of the building machine: one commit builds into the same bytes anywhere
        "TT_NVCC_VERSION": _c_string(f"nvcc (release {toolkit.release})"),
        "TT_NVCC_FLAGS": _c_string(" ".join(Path(f).name if f == host_cxx else f for f in nvcc_flags)),
        "TT_HOST_COMPILER": _c_string(host),
        "TT_BINDING_COMPILER": _c_string(binding),
        "TT_LINKER": _c_string(binding),
        "TT_VARIANT": _c_string(variant),
    }
    lines = ["/* Generated by setup.py (buildsys/extension.py); do not edit. */"]
    lines += [f"#define {k} {v}" for k, v in values.items()]
    path.write_text("\n".join(lines) + "\n")


def build(
    toolkit: Toolkit,
    sass,
    ptx,
    sources: list[Path],
    include_dirs: list[Path],
    temp: Path,
    output: Path,
    variant: str,
    env=None,
) -> BuildReport:
    """Compile the extension's sources (nvcc the .cu files, the C++ compiler the .cpp ones, as
    setup.py's Extension lists them) and link ``output``; raises BuildError."""
    pybind11 = _require_pybind11()
    env = dict(os.environ if env is None else env)
    started = time.monotonic()
    cxx, cxx_name = _cxx(env)
    chosen_host = settings.host_cxx(env)
    host_cxx = chosen_host or "gcc"  # nvcc's host compiler for the .cu file (gcc: nvcc's default)
    _check_compilers(env, cxx, host_cxx)
    # Export only the module's init function; everything else stays inside the extension. Writing
    # this first names an unwritable build folder as such, not through a compiler's failure.
    script = temp / "exports.map"
    try:
        temp.mkdir(parents=True, exist_ok=True)
        script.write_text("{ global: PyInit_cuda_ops; local: *; };\n")
    except OSError as exc:
        raise BuildError(
            f"cannot write to the build folder {temp.absolute()}: {exc.strerror or exc}",
            "make it writable, or remove it",
        ) from None
    output.parent.mkdir(parents=True, exist_ok=True)
    # --threads: compile the architectures in parallel (TINYTENSOR_NVCC_THREADS, 0 = one per core)
    threads = ["--threads", str(settings.nvcc_threads(env))]
    nvcc_flags = NVCC_FLAGS + threads + gencode_flags(sass, ptx) + (["-ccbin", host_cxx] if chosen_host else [])
    host_version = host_compiler_version(host_cxx)
    write_build_info(
        temp / "tt_build_info.h", toolkit, sass, ptx, nvcc_flags, host_cxx, host_version, cxx_name, variant
    )
    includes = [f"-I{d}" for d in toolkit.include_dirs] + [f"-I{d}" for d in include_dirs] + [f"-I{temp}"]

    objects = []
    for source in (s for s in sources if s.suffix == ".cu"):
        objects.append(temp / f"{source.stem}.o")
        command = [str(toolkit.nvcc), "-c", str(source), "-o", str(objects[-1])] + nvcc_flags + includes
        _nvcc(toolkit, command, host_cxx, host_version)

    python_include = sysconfig.get_paths()["include"]
    py_includes = [f"-I{python_include}", f"-I{pybind11.get_include()}"]
    if cxx_name.startswith("zig") and python_include.startswith("/usr/include/"):
        # A distribution's Python (Debian's) splits pyconfig.h into /usr/include/<multiarch>/; zig
        # searches no system folder, so add /usr/include after its own libc headers.
        py_includes += ["-idirafter", "/usr/include"]
    for source in (s for s in sources if s.suffix == ".cpp"):
        objects.append(temp / f"{source.stem}.o")
        _run(
            "compiling the binding",
            cxx + CXX_FLAGS + py_includes + includes + ["-c", str(source), "-o", str(objects[-1])],
        )
    others = [s.name for s in sources if s.suffix not in (".cu", ".cpp")]
    if others:
        raise BuildError(f"the extension lists sources that are neither .cu nor .cpp: {others}", "fix setup.py")

    link = cxx + [
        "-shared",
        "-o",
        str(output),
        *map(str, objects),
        str(toolkit.cudart),
        str(toolkit.cublas),
        f"-Wl,--version-script={script}",
        "-Wl,-s",
    ]
    zig = cxx_name.startswith("zig")
    for d in toolkit.lib_dirs():
        if not zig:  # zig's lld resolves the libraries' own dependencies without it (and rejects it)
            link.append(f"-Wl,-rpath-link,{d}")
        if settings.rpath(env):
            link.append(f"-Wl,-rpath,{d}")
    link += ["-lpthread", "-ldl"]
    _run("linking", link, env)
    return BuildReport(
        seconds=time.monotonic() - started,
        size_bytes=output.stat().st_size,
        sass=sass,
        ptx=ptx,
        nvcc_flags=nvcc_flags,
        binding_compiler=cxx_name,
        linker=cxx_name,
    )
