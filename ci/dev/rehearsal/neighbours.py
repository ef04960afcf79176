"""Step 6: living next to PyTorch and CuPy. pytinytensor-cu12 (the built wheel and its library wheel)
is resolved by pip together with the NVIDIA requirements of PyTorch's CUDA 12 wheels and with
cupy-cuda12x[ctk] (neighbours.toml), each also alone, which names what a user of that stack
downloads in addition. One of them is installed: pytinytensor-cu12 at the versions that stack
pins, beside PyTorch's CPU build, and one process imports torch and tinytensor in each order; each
must find its own libraries, and CuPy its kernel headers in the environment."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

from buildsys.release_matrix import CUDA_RELEASES
from ci.dev import torch_oracle
from ci.project_paths import link_or_copy

from .common import HERE, NOTES, RELEASE, log, pip_install, python_tag, scratch, sh, step
from .install import DIST, download_sizes

NEIGHBOURS = HERE / "rehearsal" / "neighbours.toml"
LIBS = CUDA_RELEASES[0].libs

# One process, both stacks: torch (the CPU build, with NVIDIA's cudart loaded into the global scope
# as a CUDA build of torch loads it at import) and tinytensor, in the order argv[1] gives.
PROBE = r"""
import ctypes, json, sys, sysconfig
from pathlib import Path
site = Path(sysconfig.get_paths()["purelib"])
found = {}
def torch_side():
    import torch
    ctypes.CDLL(str(site / "nvidia" / "cuda_runtime" / "lib" / "libcudart.so.12"), mode=ctypes.RTLD_GLOBAL)
    found["torch"] = {"version": torch.__version__, "dot": float(torch.ones(3) @ torch.ones(3))}
def tinytensor_side():
    import tinytensor as tt
    from tinytensor.cuda.status import cuda_status
    status = cuda_status()
    found["tinytensor"] = {"dot": float((tt.ones(3) @ tt.ones(3)).item()), "extension_loaded": status.extension_loaded,
                           "extension_runtime": status.extension_runtime_version}
    import cupy
    found["cupy_nvrtc"] = list(cupy.cuda.nvrtc.getVersion())
for side in sys.argv[1].split(","):
    {"torch": torch_side, "tinytensor": tinytensor_side}[side]()
from tinytensor.cuda.loaded_libraries import loaded_cuda_libraries
found["libraries"] = loaded_cuda_libraries()
found["site"] = str(site)
print(json.dumps(found))
"""


def _report(path: Path) -> list[dict]:
    return json.loads(path.read_text())["install"]


def resolve(py: str, requirements: list[str], ours: Path, report: Path) -> tuple[dict[str, dict] | None, str]:
    """pip's resolution of `requirements` (with our files beside the normal index): ({name: its
    install report entry}, "") or (None, pip's last words)."""
    command = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--dry-run", "--ignore-installed"]
    command += ["--only-binary=:all:", "--find-links", str(ours), "--report", str(report), *requirements]
    proc = sh(command, capture=True, check=False)
    if proc.returncode:
        return None, " ".join((proc.stdout + proc.stderr).split())[-1500:]
    return {i["metadata"]["name"].lower(): i for i in _report(report)}, ""


def resolutions(py: str, ours: Path, version: str, work: Path) -> dict:
    """Each neighbour resolved with pytinytensor-cu12 and alone."""
    config = tomllib.loads(NEIGHBOURS.read_text())
    results = {}
    for key, neighbour in config.items():
        if not isinstance(neighbour, dict):
            continue
        with_us, error = resolve(py, [f"{DIST}=={version}", *neighbour["requires"]], ours, work / f"resolve-{key}.json")
        entry: dict = {"what": neighbour["what"], "requires": neighbour["requires"], "resolved": with_us is not None}
        if with_us is None:
            entry["error"] = error
            log(f"{key}: pip cannot resolve {DIST} beside it: {error}")
        else:
            alone, _ = resolve(py, neighbour["requires"], ours, work / f"resolve-{key}-alone.json")
            ours_from = {n: with_us[n]["download_info"]["url"] for n in (DIST, LIBS.name) if n in with_us}
            if any(not url.startswith(ours.as_uri()) for url in ours_from.values()) or len(ours_from) != 2:
                raise RuntimeError(f"the {key} resolution took {DIST} from elsewhere: {ours_from}")
            entry["versions"] = {n: i["metadata"]["version"] for n, i in sorted(with_us.items())}
            entry["in_addition"] = sorted(set(with_us) - set(alone or {}))
            entry["items"] = with_us
        results[key] = entry
    return {"installed": config["installed"], **results}


def coexistence(py: str, ours: Path, version: str, pins: dict[str, str], work: Path) -> dict:
    """pytinytensor-cu12 at a neighbour's versions, PyTorch's CPU build beside it; one process per order."""
    constraints = work / "neighbour-constraints.txt"
    constraints.write_text("".join(f"{name}=={v}\n" for name, v in sorted(pins.items()) if name != DIST))
    pip_install(py, "--only-binary=:all:", "--find-links", str(ours), "-c", str(constraints), f"{DIST}=={version}")
    torch = torch_oracle.install_args(python_tag(py))
    if not torch:
        NOTES.append("no PyTorch CPU wheel here: torch and tinytensor were not imported into one process")
        return {"ran": False}
    pip_install(py, *torch)
    headers = sh([py, str(RELEASE / "cupy_headers.py")], capture=True, check=False, cwd=work)
    found: dict = {"ran": True, "cupy_headers": json.loads(headers.stdout.strip().splitlines()[-1]), "orders": {}}
    cudart = [int(x) for x in LIBS.sources[0].split("==")[1].split(".")[:2]]  # nvidia-cuda-runtime-cu12==12.9.79
    runtime = cudart[0] * 1000 + cudart[1] * 10
    for order in ("torch,tinytensor", "tinytensor,torch"):
        proc = sh(
            [py, "-c", PROBE, order], capture=True, check=False, cwd=work, env=dict(os.environ, LD_LIBRARY_PATH="")
        )
        if proc.returncode:
            found["orders"][order] = {"passed": False, "problems": [proc.stderr[-2000:]]}
            continue
        facts = json.loads(proc.stdout.strip().splitlines()[-1])
        found["orders"][order] = {**facts, "problems": order_problems(facts, runtime, pins)}
        found["orders"][order]["passed"] = not found["orders"][order]["problems"]
    found["passed"] = not found["cupy_headers"]["problems"] and all(o["passed"] for o in found["orders"].values())
    return found


def order_problems(facts: dict, runtime: int, pins: dict[str, str]) -> list[str]:
    """Each stack found its own: tinytensor's extension its cudart from the library wheel (its
    version), NVIDIA's cudart loaded from NVIDIA's wheel, NVRTC from its wheel at the pinned version."""
    site = Path(facts["site"])
    libs = facts["libraries"]
    problems = []
    tt = facts["tinytensor"]
    if not tt["extension_loaded"] or tt["extension_runtime"] != runtime:
        problems.append(f"tinytensor's extension runs on cudart {tt['extension_runtime']}, not its own {runtime}")
    ours = [p for p in libs.get("cudart", []) if Path(p).parent == site / LIBS.module / "lib"]
    nvidia = [p for p in libs.get("cudart", []) if Path(p).parent == site / "nvidia" / "cuda_runtime" / "lib"]
    if not ours or not nvidia or len(libs.get("cudart", [])) != 2:
        problems.append(f"cudart should be loaded once from each wheel: {libs.get('cudart')}")
    nvrtc = pins.get("nvidia-cuda-nvrtc-cu12", "")
    if facts["cupy_nvrtc"] != [int(x) for x in nvrtc.split(".")[:2]]:
        problems.append(f"CuPy's NVRTC is {facts['cupy_nvrtc']}, the stack pins {nvrtc}")
    if facts["torch"]["dot"] != 3.0 or tt["dot"] != 3.0:
        problems.append(f"a dot product gave torch {facts['torch']['dot']}, tinytensor {tt['dot']}")
    return problems


def rehearse(python: str, wheel: Path, libs_wheel: Path, version: str, work: Path) -> dict:
    ours = work / "ours"
    ours.mkdir(exist_ok=True)
    for f in (wheel, libs_wheel):
        link_or_copy(f, ours / f.name)
    venv = scratch(work / "neighbours-venv")
    sh([python, "-m", "venv", str(venv)])
    py = str(venv / "bin" / "python")
    with step("beside PyTorch and CuPy: pip's resolution"):
        found = resolutions(py, ours, version, work)
    for key, entry in found.items():
        items = entry.pop("items", None) if isinstance(entry, dict) else None
        if items:  # what a user of that stack downloads for pytinytensor-cu12, in bytes
            sizes = {DIST: wheel.stat().st_size, LIBS.name: libs_wheel.stat().st_size}
            others = [items[n] for n in entry["in_addition"] if n not in sizes]
            sizes.update(download_sizes(py, others, work / f"download-{key}"))
            entry["download_bytes"] = dict(sorted(sizes.items(), key=lambda kv: -kv[1]))
    installed = found[found["installed"]]
    if not installed.get("resolved"):
        found["coexistence"] = {"ran": False}
        return found
    with step(f"beside PyTorch and CuPy: installed at {found['installed']}'s versions, torch imported beside it"):
        found["coexistence"] = coexistence(py, ours, version, installed["versions"], work)
    return found


def passed(found: dict) -> bool:
    resolved = all(e["resolved"] for e in found.values() if isinstance(e, dict) and "resolved" in e)
    return resolved and found["coexistence"].get("passed", not found["coexistence"]["ran"])
