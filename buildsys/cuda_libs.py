"""The one definition of pytinytensor-cuNN-libs, the CUDA runtime libraries of the release wheels
published once per architecture: its name, version, sources, the renamed names of its libraries and
their symbol versions, and the NVRTC it requires (docs/maintainers/wheel-contract.md).
ci/release/build_cuda_libs.py builds it, setup.py makes a release wheel depend on it, and
ci/release/repair_wheel.py points the extension at it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LibsDist:
    cuda_major: int
    # Its version is the bundled cuBLAS's; a repackaging of the same libraries adds .postN.
    version: str
    # NVIDIA's PyPI wheels the libraries are taken from (ci/release/locks/cuda-libs-cuNN.txt pins their hashes).
    sources: tuple[str, ...]
    # What the libraries load at run time that is not bundled: cuBLASLt opens NVRTC for some kernels
    # (NVIDIA's cuBLAS wheel requires it without a version; a range within the CUDA major, as
    # nvidia_requirement says why). The build fails if the source wheels require anything this does not name.
    requires: tuple[str, ...] = ()
    # NVRTC's library inside its distribution (package, file), which tinytensor loads by path before
    # cuBLAS, so that cuBLASLt's dlopen of libnvrtc.so.N finds that one, of the CUDA major N.
    nvrtc: tuple[str, str] = ("", "")

    @property
    def name(self) -> str:
        return f"pytinytensor-cu{self.cuda_major}-libs"

    @property
    def module(self) -> str:
        return f"tinytensor_cu{self.cuda_major}_libs"

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"

    @property
    def nvrtc_requirement(self) -> str:
        return next(r for r in self.requires if r.startswith("nvidia-cuda-nvrtc"))

    @property
    def nvrtc_manifest(self) -> dict[str, str]:
        """Where tinytensor finds NVRTC, as manifest.json records it."""
        return {"requirement": self.nvrtc_requirement, "package": self.nvrtc[0], "file": self.nvrtc[1]}

    def libraries(self) -> list[tuple[str, str, str]]:
        """(path inside the source wheels, NVIDIA's soname, our name), in load order: each library
        is loaded after the ones it needs (cuBLAS needs cuBLASLt)."""
        m = self.cuda_major
        return [
            (f"nvidia/cuda_runtime/lib/libcudart.so.{m}", f"libcudart.so.{m}", renamed(f"libcudart.so.{m}")),
            (f"nvidia/cublas/lib/libcublasLt.so.{m}", f"libcublasLt.so.{m}", renamed(f"libcublasLt.so.{m}")),
            (f"nvidia/cublas/lib/libcublas.so.{m}", f"libcublas.so.{m}", renamed(f"libcublas.so.{m}")),
        ]


def nvidia_requirement(component: str, major: int) -> str:
    """A requirement on one of NVIDIA's wheels ("cuda-nvrtc", "cuda-runtime") of CUDA `major`: any
    release within the major, never an exact minor. PyTorch and `cupy-cuda12x[ctk]` pin NVIDIA's
    wheels exactly (PyTorch's cu126 wheels NVRTC 12.6, its cu128 ones 12.8), so an exact minor of
    ours could never be installed beside them; CUDA's minor-version compatibility makes any minor work.
    CUDA 12's wheels carry a -cu12 suffix, CUDA 13's none."""
    name = f"nvidia-{component}-cu{major}" if major == 12 else f"nvidia-{component}"
    return f"{name}>={major}.0,<{major + 1}"


def renamed(soname: str) -> str:
    """libcublas.so.12 -> libcublas-tinytensor.so.12"""
    stem, _, major = soname.partition(".so.")
    return f"{stem}-tinytensor.so.{major}"


def version_node(soname: str) -> str:
    """The symbol version our copy of a library defines in place of NVIDIA's (which is its
    soname): libcublasLt.so.12 -> TT_CUBLASLT_12. No longer than the soname, since it is written
    over it (ci/release/elf_versions.py)."""
    stem, _, major = soname.partition(".so.")
    return f"TT_{stem.removeprefix('lib').upper()}_{major}"


def version_renames(major: int) -> dict[str, str]:
    """NVIDIA's version name -> ours, for every library of the distribution of CUDA `major`."""
    return {upstream: version_node(upstream) for _, upstream, _ in for_major(major).libraries()}


LIBS = {
    12: LibsDist(
        cuda_major=12,
        # cuBLAS 12.9: native kernels for every Blackwell GPU (sm_100, 103, 120, 121), which 12.4
        # lacks; the price is 218 MB more per architecture (docs/cublas-versions.md). The compiler
        # stays at 12.4: the extension runs on any newer CUDA 12 runtime.
        version="12.9.3.13",
        sources=("nvidia-cuda-runtime-cu12==12.9.79", "nvidia-cublas-cu12==12.9.3.13"),
        requires=(nvidia_requirement("cuda-nvrtc", 12),),
        nvrtc=("nvidia.cuda_nvrtc", "lib/libnvrtc.so.12"),
    ),
}


def for_major(major: int | None) -> LibsDist:
    if major not in LIBS:
        raise ValueError(
            f"there is no CUDA library distribution for CUDA {major}: TINYTENSOR_CUDA_LIBS=dist needs one of "
            f"the variants {', '.join(f'cu{m}' for m in sorted(LIBS))}"
        )
    return LIBS[major]
