"""The CUDA library distribution of the release wheels (pytinytensor-cuNN-libs) as the build
defines it, without building it: its one definition (buildsys/cuda_libs.py), its lock, and what a
build asks for (TINYTENSOR_CUDA_LIBS). What tinytensor does with it installed is tested in
tests/library/test_cuda_libs.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from checkout import ROOT, from_checkout

cuda_libs = from_checkout("buildsys.cuda_libs")
variant = from_checkout("buildsys.variant")
settings = from_checkout("buildsys.settings")

LIBS = cuda_libs.LIBS[12]


def test_one_definition_names_the_distribution_and_its_libraries():
    assert LIBS.name == "pytinytensor-cu12-libs" and LIBS.module == "tinytensor_cu12_libs"
    assert LIBS.requirement == f"pytinytensor-cu12-libs=={LIBS.version}"
    # its version is the bundled cuBLAS's (the lock and the wheel's metadata follow from it)
    assert f"nvidia-cublas-cu12=={LIBS.version.split('.post')[0]}" in LIBS.sources
    order = [ours for _, _, ours in LIBS.libraries()]
    assert order == ["libcudart-tinytensor.so.12", "libcublasLt-tinytensor.so.12", "libcublas-tinytensor.so.12"]
    assert cuda_libs.renamed("libcublasLt.so.12") == "libcublasLt-tinytensor.so.12"


def test_symbol_versions_are_renamed_to_names_no_longer_than_nvidias():
    renames = cuda_libs.version_renames(12)
    assert renames == {
        "libcudart.so.12": "TT_CUDART_12",
        "libcublasLt.so.12": "TT_CUBLASLT_12",
        "libcublas.so.12": "TT_CUBLAS_12",
    }
    assert all(len(new) <= len(old) for old, new in renames.items())  # written over NVIDIA's in place


def test_nvidias_wheels_are_required_within_the_cuda_major_never_at_a_minor():
    """PyTorch and cupy-cuda12x[ctk] pin NVIDIA's wheels exactly: ours must admit any minor of CUDA 12."""
    cu12 = variant.Variant("cu12", 12, "1", "dist").install_requires()
    nvidia = [r for r in (*cu12, *LIBS.requires) if r.startswith("nvidia-")]
    assert nvidia and all(re.fullmatch(r"nvidia-[a-z-]+-cu12>=12\.0,<13", r) for r in nvidia), nvidia
    # CuPy compiles its kernels with NVRTC against the runtime headers: both come with the install
    assert {"nvidia-cuda-nvrtc-cu12>=12.0,<13", "nvidia-cuda-runtime-cu12>=12.0,<13"} <= set(cu12)
    assert LIBS.requires == (LIBS.nvrtc_requirement,) == ("nvidia-cuda-nvrtc-cu12>=12.0,<13",)
    assert LIBS.nvrtc == ("nvidia.cuda_nvrtc", "lib/libnvrtc.so.12")
    assert cuda_libs.nvidia_requirement("cuda-runtime", 13) == "nvidia-cuda-runtime>=13.0,<14"  # no suffix


def test_the_lock_pins_exactly_the_sources():
    lock = (ROOT / "ci" / "release" / "locks" / "cuda-libs-cu12.txt").read_text()
    pinned = sorted(line.split()[0] for line in lock.splitlines() if "==" in line and not line.startswith("#"))
    assert pinned == sorted(LIBS.sources), "run ci/release/locks/update.sh"


def test_a_release_build_depends_on_the_exact_library_distribution():
    chosen = variant.from_env({"TINYTENSOR_CUDA_VARIANT": "cu12", "TINYTENSOR_CUDA_LIBS": "dist"}, record=Path("/none"))
    assert LIBS.requirement in chosen.install_requires()
    plain = variant.from_env({"TINYTENSOR_CUDA_VARIANT": "cu12"}, record=Path("/none"))
    assert not any(r.startswith(LIBS.name) for r in plain.install_requires())


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"TINYTENSOR_CUDA_LIBS": "dist"}, "no CUDA library distribution for CUDA None"),
        ({"TINYTENSOR_CUDA_VARIANT": "cu13", "TINYTENSOR_CUDA_LIBS": "dist"}, "for CUDA 13"),
        ({"TINYTENSOR_CUDA_VARIANT": "cu12", "TINYTENSOR_CUDA_LIBS": "wheel"}, "TINYTENSOR_CUDA_LIBS='wheel'"),
    ],
)
def test_a_library_distribution_that_does_not_exist_is_refused(env, message):
    with pytest.raises(settings.SettingError, match=message.replace("(", r"\(").replace(")", r"\)")):
        variant.from_env(env, record=Path("/none"))
