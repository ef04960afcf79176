"""What a release publishes, declared once: the distributions, the CPythons and architectures of
their wheels, the manylinux floor, each CUDA variant with its library distribution, and the
project's URLs (docs/maintainers/release.md). setup.py, the noxfile, the release's file table, the
wheel contract, the placeholders and the rehearsal read it; tests/tooling/test_release_matrix.py
holds the workflows to it. Standard library only, importable from a checkout or an sdist.
"""

from __future__ import annotations

from dataclasses import dataclass

from .cuda_libs import LIBS, LibsDist

BASE_NAME = "pytinytensor"
PYTHONS = ("3.11", "3.12", "3.13", "3.14")
ARCHS = ("x86_64", "aarch64")
MANYLINUX = "manylinux_2_28"  # every binary wheel's floor (the build image; auditwheel's --plat)

# Where the project lives: the package page (README.md, setup.py's long_description) links only
# to these, absolutely, since relative links break there (tests/tooling/test_readme_links.py).
REPOSITORY = "https://github.com/IbrokhimN/tinytensor"
DOCUMENTATION = "https://ibrokhimn.github.io/tinytensor/"  # published to GitHub Pages on release
PROJECT_URLS = {
    "Documentation": DOCUMENTATION,
    "Source": REPOSITORY,
    "Changelog": f"{REPOSITORY}/blob/main/CHANGELOG.md",
    "Issues": f"{REPOSITORY}/issues",
}


@dataclass(frozen=True)
class CudaRelease:
    key: str  # TINYTENSOR_CUDA_VARIANT
    libs: LibsDist
    toolchain_pins: str  # the build toolchain's pinned versions, relative to the repository

    @property
    def dist(self) -> str:
        return f"{BASE_NAME}-{self.key}"

    @property
    def cuda_major(self) -> int:
        return self.libs.cuda_major


CUDA_RELEASES = (CudaRelease("cu12", LIBS[12], "ci/release/cuda12-versions.env"),)


def python_tag(version: str) -> str:
    """3.11 -> cp311"""
    major, minor = version.split(".")
    return f"cp{major}{minor}"


PYTHON_TAGS = tuple(python_tag(v) for v in PYTHONS)
CPU_DIST = BASE_NAME  # the plain name: sdist and py3-none-any wheel
SDISTS = (CPU_DIST, *(r.dist for r in CUDA_RELEASES))


def platform(arch: str) -> str:
    """manylinux_2_28_x86_64"""
    return f"{MANYLINUX}_{arch}"


def requires_python() -> str:
    return f">={PYTHONS[0]}"


def cuda_release(key: str) -> CudaRelease:
    for release in CUDA_RELEASES:
        if release.key == key:
            return release
    raise ValueError(f"{key!r} is not a released CUDA variant ({', '.join(r.key for r in CUDA_RELEASES)})")


def cibuildwheel_build() -> list[str]:
    """[tool.cibuildwheel] build: one selector per CPython."""
    return [f"{tag}-*" for tag in PYTHON_TAGS]
