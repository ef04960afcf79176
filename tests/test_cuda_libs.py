"""The CUDA library distribution of the release wheels (pytinytensor-cuNN-libs), without building
it: its one definition (buildsys/cuda_libs.py), what a build asks for (TINYTENSOR_CUDA_LIBS), and
what tinytensor says when it is missing, of another version, or broken. The real package file
(buildsys/libs_package_init.py) is installed into a temporary folder for the last ones; the built
and installed wheels are tested by tests/release in the release rehearsal.
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
from pathlib import Path

import pytest

from tinytensor import cuda_extension

ROOT = Path(__file__).resolve().parent.parent
# The checkout is on sys.path only while buildsys is imported: left there, importlib.metadata would
# also read the checkout's *.egg-info (tests/release checks an installed wheel's metadata).
_saved_path = list(sys.path)
sys.path.insert(0, str(ROOT))
try:
    from buildsys import cuda_libs, variant
finally:
    sys.path[:] = _saved_path

LIBS = cuda_libs.LIBS[12]


def test_one_definition_names_the_distribution_and_its_libraries():
    assert LIBS.name == "pytinytensor-cu12-libs" and LIBS.module == "tinytensor_cu12_libs"
    assert LIBS.requirement == f"pytinytensor-cu12-libs=={LIBS.version}"
    # its version is the bundled cuBLAS's (the lock and the wheel's metadata follow from it)
    assert f"nvidia-cublas-cu12=={LIBS.version.split('.post')[0]}" in LIBS.sources
    order = [ours for _, _, ours in LIBS.libraries()]
    assert order == ["libcudart-tinytensor.so.12", "libcublasLt-tinytensor.so.12", "libcublas-tinytensor.so.12"]
    assert cuda_libs.renamed("libcublasLt.so.12") == "libcublasLt-tinytensor.so.12"


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
    with pytest.raises(variant.VariantError, match=message.replace("(", r"\(").replace(")", r"\)")):
        variant.from_env(env, record=Path("/none"))


def _config(module: str, version: str = LIBS.version) -> dict:
    return {
        "distribution": "pytinytensor-cu12",
        "extension": "built",
        "cuda_libs": {"distribution": LIBS.name, "module": module, "version": version, "libraries": []},
    }


def _install(tmp_path: Path, module: str, version: str, libraries: list[dict]) -> None:
    """The library distribution's real package file, with a manifest, importable from tmp_path."""
    package = tmp_path / module
    (package / "lib").mkdir(parents=True)
    shutil.copyfile(ROOT / "buildsys" / "libs_package_init.py", package / "__init__.py")
    manifest = {"distribution": LIBS.name, "version": version, "libraries": libraries, "cublas_archs": {}}
    (package / "manifest.json").write_text(json.dumps(manifest))
    importlib.invalidate_caches()


def test_a_build_that_links_its_toolkit_needs_nothing():
    assert cuda_extension._load_cuda_libs({"distribution": "pytinytensor", "extension": "built"}) == (None, None)


def test_missing_library_distribution_names_it_and_the_version():
    manifest, error = cuda_extension._load_cuda_libs(_config("tinytensor_cu12_libs_not_installed_here"))
    assert manifest is None
    assert f"pytinytensor-cu12 needs {LIBS.requirement}" in error and "not installed" in error


def test_another_version_names_both(tmp_path, monkeypatch):
    _install(tmp_path, "tt_libs_other_version", "12.0.0.1", [])
    monkeypatch.syspath_prepend(str(tmp_path))
    manifest, error = cuda_extension._load_cuda_libs(_config("tt_libs_other_version"))
    assert manifest is None
    assert LIBS.version in error and f"{LIBS.name} 12.0.0.1 is installed" in error


def test_a_library_that_does_not_load_is_named(tmp_path, monkeypatch):
    entry = {"file": "libcublas-tinytensor.so.12", "soname": "libcublas-tinytensor.so.12"}
    _install(tmp_path, "tt_libs_broken", LIBS.version, [entry])
    (tmp_path / "tt_libs_broken" / "lib" / entry["file"]).write_bytes(b"not an ELF file")
    monkeypatch.syspath_prepend(str(tmp_path))
    manifest, error = cuda_extension._load_cuda_libs(_config("tt_libs_broken"))
    assert manifest is None
    assert "libcublas-tinytensor.so.12 does not load" in error and LIBS.version in error


def test_the_matching_version_loads_and_gives_its_manifest(tmp_path, monkeypatch):
    _install(tmp_path, "tt_libs_matching", LIBS.version, [])
    monkeypatch.syspath_prepend(str(tmp_path))
    manifest, error = cuda_extension._load_cuda_libs(_config("tt_libs_matching"))
    assert error is None and manifest["version"] == LIBS.version
