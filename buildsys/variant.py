"""Which distribution this build produces, chosen by environment variables at build time.

TINYTENSOR_CUDA_VARIANT   ""      -> pytinytensor: forgiving; any CUDA toolkit found, else CPU-only
                          "cu12"  -> pytinytensor-cu12: needs CUDA 12, depends on cupy-cuda12x
                          "cu13"  -> pytinytensor-cu13: needs CUDA 13, depends on cupy-cuda13x
TINYTENSOR_BUILD_EXTENSION "auto" (default for pytinytensor): build it if possible, else warn once
                          "1"    (default for the -cuNN variants): build it or fail with the cause
                          "0"    never build it (the explicit CPU-only opt-out, for any variant)
TINYTENSOR_CUDA_LIBS      "toolkit" (default): the extension loads the libraries of the toolkit it
                                   was built against
                          "dist"   (release wheels of a -cuNN variant): it loads them from
                                   pytinytensor-cuNN-libs, a dependency (buildsys/cuda_libs.py);
                                   only for wheels that ci/release/repair_wheel.py repairs

An sdist of a -cuNN variant records it (buildsys/recorded_variant.json, written by the sdist
command), so that `pip install pytinytensor-cu12 --no-binary pytinytensor-cu12` builds the strict
variant with no variable set; asking such an sdist for another variant is an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from . import cuda_libs, settings
from .release_matrix import BASE_NAME

VARIANTS = {"": None, "cu12": 12, "cu13": 13}
MODES = ("auto", "1", "0")
LIBS_MODES = ("toolkit", "dist")
NUMPY = "numpy>=2.0"
RECORD = Path(__file__).with_name("recorded_variant.json")  # only inside a -cuNN sdist


class VariantError(settings.SettingError):
    """A variant this source cannot build."""


@dataclass(frozen=True)
class Variant:
    key: str  # "", "cu12", "cu13"
    cuda_major: int | None  # the CUDA major the strict variants require
    mode: str  # "auto", "1", "0"
    libs: str = "toolkit"  # "toolkit", "dist"

    @property
    def dist_name(self) -> str:
        return f"{BASE_NAME}-{self.key}" if self.key else BASE_NAME

    @property
    def strict(self) -> bool:
        return self.mode == "1"

    @property
    def skip(self) -> bool:
        return self.mode == "0"

    def extras_require(self) -> dict[str, list[str]]:
        extras = {"test": ["pytest>=8", "array-api-strict>=2.3"]}
        if not self.cuda_major:  # the plain package lets users pick their CuPy
            extras.update({f"cuda{m}": cuda_runtime_requires(m) for m in (12, 13)})
        return extras

    def sdist_dynamic(self) -> list[str]:
        """The metadata fields (PEP 643) that wheels built from this variant's sdist may not share:
        a -cuNN release wheel also requires pytinytensor-cuNN-libs (TINYTENSOR_CUDA_LIBS=dist), a
        source build of the same sdist does not. Every other field is the sdist's, in every wheel
        (ci/release/check_wheel.py holds each wheel to it)."""
        return ["Requires-Dist"] if self.cuda_major else []

    def install_requires(self) -> list[str]:
        reqs = [NUMPY, "tqdm>=4.66"]
        if self.cuda_major:
            reqs += cuda_runtime_requires(self.cuda_major)
        if self.libs == "dist":
            reqs.append(cuda_libs.for_major(self.cuda_major).requirement)
        return reqs


def cuda_runtime_requires(major: int) -> list[str]:
    """What the GPU path loads at run time besides the extension's cudart and cuBLAS (a release
    wheel's come from pytinytensor-cuNN-libs, a source build's from its toolkit).

    CuPy compiles its elementwise and reduction kernels at run time with NVRTC, against the CUDA
    runtime headers; cupy-cudaNNx ships neither, and a machine with only a driver has no toolkit to
    find them in, so both come from NVIDIA's wheels (CuPy finds them there through cuda-pathfinder).
    CuPy's own cuBLAS is not needed: GPU matmuls go through the extension's.
    """
    return [
        f"cupy-cuda{major}x>=14",  # CuPy 13 does not find NVRTC or the headers in pip's wheels
        cuda_libs.nvidia_requirement("cuda-nvrtc", major),
        cuda_libs.nvidia_requirement("cuda-runtime", major),
    ]


def recorded_key(record: Path = RECORD) -> str | None:
    """The variant an sdist was made for, or None (a source tree, or the plain package's sdist)."""
    if not record.exists():
        return None
    return json.loads(record.read_text())["variant"]


def from_env(env=None, record: Path = RECORD) -> Variant:
    asked = settings.value(env, "TINYTENSOR_CUDA_VARIANT") or ""
    made_for = recorded_key(record)
    if made_for is not None and asked not in ("", made_for):
        raise VariantError(
            f"this is the {BASE_NAME}-{made_for} sdist, which builds only {BASE_NAME}-{made_for}; "
            f"TINYTENSOR_CUDA_VARIANT={asked!r} asks for another distribution",
            f"unset TINYTENSOR_CUDA_VARIANT, or build {BASE_NAME}-{asked} from the {BASE_NAME} sdist or a source checkout",
        )
    if made_for:
        key = made_for
    else:  # empty: the plain pytinytensor
        key = settings.choice(env, "TINYTENSOR_CUDA_VARIANT", tuple(k for k in VARIANTS if k), "", BASE_NAME)
    mode = settings.choice(env, "TINYTENSOR_BUILD_EXTENSION", MODES, "1" if key else "auto")
    libs = settings.choice(env, "TINYTENSOR_CUDA_LIBS", LIBS_MODES, "toolkit")
    if libs == "dist":
        try:
            cuda_libs.for_major(VARIANTS[key])
        except ValueError as exc:
            raise VariantError(
                f"TINYTENSOR_CUDA_LIBS=dist: {exc}", "unset TINYTENSOR_CUDA_LIBS, or choose one of those variants"
            ) from None
    return Variant(key, VARIANTS[key], mode, libs)
