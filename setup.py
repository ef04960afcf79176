"""Build pytinytensor (forgiving) or pytinytensor-cu12/-cu13 (strict) from one source tree.

The variant is chosen at build time by TINYTENSOR_CUDA_VARIANT; see buildsys/variant.py and
docs/maintainers/building.md. Metadata lives here, not in pyproject.toml,
because the distribution's name and dependencies depend on the variant.
"""

import sys
from pathlib import Path

from setuptools import Extension, find_packages, setup

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from buildsys import release_matrix  # noqa: E402
from buildsys.build_ext import CpuOnlyBuildPy, CudaBuildExt  # noqa: E402
from buildsys.sdist import ReproducibleSdist  # noqa: E402
from buildsys.settings import SettingError, check  # noqa: E402
from buildsys.variant import from_env  # noqa: E402

# A build variable set to a value it does not accept stops every variant here, before anything is
# built; CUDA_HOME and the compilers are checked by the extension's build (buildsys/settings.py).
try:
    VARIANT = from_env()
    check()
except SettingError as exc:
    raise SystemExit(f"pytinytensor: ERROR: {exc.cause}\npytinytensor: fix: {exc.fix}") from None

VERSION = {}
exec((HERE / "tinytensor" / "_version.py").read_text(), VERSION)

setup(
    name=VARIANT.dist_name,
    version=VERSION["__version__"],
    description="A small tensor library with reverse-mode autograd on numpy and CuPy, with a CUDA extension",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="MIT",
    project_urls=release_matrix.PROJECT_URLS,
    python_requires=release_matrix.requires_python(),
    packages=find_packages(include=["tinytensor", "tinytensor.*"]),
    include_package_data=False,
    install_requires=VARIANT.install_requires(),
    extras_require=VARIANT.extras_require(),
    # Built by CudaBuildExt: nvcc compiles the .cu, the C++ compiler the binding (buildsys/extension.py).
    # A CPU-only build (TINYTENSOR_BUILD_EXTENSION=0) declares none: its wheel is py3-none-any.
    ext_modules=[]
    if VARIANT.skip
    else [
        Extension(
            "tinytensor.cuda_ops",
            sources=["csrc/cuda_gpu.cu", "csrc/cuda_binding.cpp"],
            depends=["csrc/c_api.h"],
            include_dirs=["csrc"],
        )
    ],
    cmdclass={"build_py": CpuOnlyBuildPy, "build_ext": CudaBuildExt, "sdist": ReproducibleSdist},
    classifiers=[
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3 :: Only",
        *(f"Programming Language :: Python :: {v}" for v in release_matrix.PYTHONS),
        *([f"Environment :: GPU :: NVIDIA CUDA :: {VARIANT.cuda_major}"] if VARIANT.cuda_major else []),
        "Operating System :: POSIX :: Linux",
    ],
)
