"""A CUDA 13 toolkit and cuBLAS 13 for builds without a GPU: the offline GPU check builds the
extension against a GPU machine's own CUDA 13, so the build must work with CUDA 13 too.

    python -m ci.dev.cuda13 toolkit [--from-pip]   # prints a CUDA_HOME whose nvcc is release 13
    python -m ci.dev.cuda13 cublas                 # prints a folder holding nvidia/cu13 (cuBLAS 13)

The toolkit is the first of $CUDA_HOME, /usr/local/cuda-13.0 and /usr/local/cuda whose nvcc is
CUDA 13, else (or with --from-pip) one assembled in the cache from PyPI's CUDA 13.0 wheels, whose
nvidia-cuda-nvcc does ship nvcc (the CUDA 12 one does not). cuBLAS 13 comes from PyPI's wheel,
unpacked in the cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ci.project_paths import CACHE

CUBLAS13 = "nvidia-cublas==13.0.2.14"  # matches the CUDA 13.0 toolkits
WHEELS = [  # PyPI's CUDA 13.0 compiler and what it needs: the parts of a toolkit the build uses
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-nvvm==13.0.88",
    "nvidia-cuda-runtime==13.0.96",
    "nvidia-cuda-cccl==13.0.85",
]


def nvcc_major(home: Path) -> int | None:
    """The CUDA major of ``home/bin/nvcc``, or None when it does not run."""
    try:
        out = subprocess.run([str(home / "bin" / "nvcc"), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = [line for line in out.stdout.splitlines() if "release " in line]
    return int(found[0].split("release ")[1].split(".")[0]) if found else None


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], check=True)


def toolkit(from_pip: bool = False) -> Path:
    if not from_pip:
        for candidate in filter(None, [os.environ.get("CUDA_HOME"), "/usr/local/cuda-13.0", "/usr/local/cuda"]):
            if nvcc_major(Path(candidate)) == 13:
                return Path(candidate)
    root = CACHE / "cuda-13.0-pip"
    home = root / "nvidia" / "cu13"
    stamp = root / (".done-" + "-".join(w.split("==")[1] for w in WHEELS))
    if not stamp.exists():
        shutil.rmtree(root, ignore_errors=True)
        _pip("install", "-q", "--no-deps", "--only-binary", ":all:", "--target", str(root), *WHEELS)
        # the layout of a CUDA install: lib64, and targets/<arch>/ (nvcc.profile's include/cccl)
        (home / "lib64").symlink_to("lib")
        target = home / "targets" / f"{os.uname().machine}-linux"
        target.mkdir(parents=True)
        (target / "include").symlink_to("../../include")
        (target / "lib").symlink_to("../../lib")
        stamp.touch()
    if nvcc_major(home) != 13:
        raise SystemExit(f"the CUDA 13 toolkit assembled from PyPI in {home} has no working nvcc 13")
    return home


def cublas() -> Path:
    """A folder holding nvidia/cu13 from PyPI's cuBLAS 13 wheel (downloaded once, then reused)."""
    root = CACHE / "cublas13"
    if not (root / "nvidia" / "cu13" / "lib" / "libcublas.so.13").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CACHE) as download:  # the 0.4 GB wheel is read once
            _pip("download", "-q", "--no-deps", "-d", download, CUBLAS13)
            wheel = next(Path(download).glob("nvidia_cublas-*.whl"))
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(root)
        for lib in (root / "nvidia" / "cu13" / "lib").iterdir():
            lib.chmod(0o755)
    return root


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "toolkit":
        print(toolkit(from_pip="--from-pip" in sys.argv[2:]))
    elif what == "cublas":
        print(cublas())
    else:
        raise SystemExit("usage: python -m ci.dev.cuda13 toolkit [--from-pip] | cublas")
