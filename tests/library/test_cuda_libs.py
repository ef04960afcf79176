"""Loading the CUDA library distribution of the release wheels (pytinytensor-cuNN-libs): what
tinytensor says when it is missing, of another version, broken, or its NVRTC missing, and that the
matching one loads. A folder laid out as the distribution installs (data only: manifest.json and
lib/) stands on sys.path; the distribution's definition is tested in
tests/tooling/test_cuda_libs_distribution.py, the built and installed wheels by tests/tooling/release
in the release rehearsal.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from checkout import from_checkout

from tinytensor.cuda import extension

LIBS = from_checkout("buildsys.cuda_libs").LIBS[12]


def _config(module: str, version: str = LIBS.version) -> dict:
    return {
        "distribution": "pytinytensor-cu12",
        "extension": "built",
        "cuda_libs": {"distribution": LIBS.name, "module": module, "version": version, "libraries": []},
    }


def _install(tmp_path: Path, module: str, version: str, libraries: list[dict], nvrtc: dict | None = None) -> None:
    """The library distribution as it installs: a folder of data (no Python), importable from tmp_path."""
    package = tmp_path / module
    (package / "lib").mkdir(parents=True)
    manifest = {"distribution": LIBS.name, "version": version, "libraries": libraries}
    manifest["cublas_archs"] = {"sass": [], "ptx": []}
    if nvrtc:
        manifest["nvrtc"] = nvrtc
    (package / "manifest.json").write_text(json.dumps(manifest))
    importlib.invalidate_caches()


def test_a_build_that_links_its_toolkit_needs_nothing():
    assert extension._load_cuda_libs({"distribution": "pytinytensor", "extension": "built"}) == (None, None, None)


def test_missing_library_distribution_names_it_and_the_version():
    manifest, error, fix = extension._load_cuda_libs(_config("tinytensor_cu12_libs_not_installed_here"))
    assert manifest is None
    assert f"pytinytensor-cu12 needs {LIBS.requirement}" in error and "not installed" in error
    assert f'pip install "{LIBS.requirement}"' in fix


def test_another_version_names_both(tmp_path, monkeypatch):
    _install(tmp_path, "tt_libs_other_version", "12.0.0.1", [])
    monkeypatch.syspath_prepend(str(tmp_path))
    manifest, error, _ = extension._load_cuda_libs(_config("tt_libs_other_version"))
    assert manifest is None
    assert LIBS.version in error and f"{LIBS.name} 12.0.0.1 is installed" in error


def test_a_manifest_that_does_not_read_is_named(tmp_path, monkeypatch):
    _install(tmp_path, "tt_libs_bad_manifest", LIBS.version, [])
    (tmp_path / "tt_libs_bad_manifest" / "manifest.json").write_text("{not json")
    monkeypatch.syspath_prepend(str(tmp_path))
    manifest, error, _ = extension._load_cuda_libs(_config("tt_libs_bad_manifest"))
    assert manifest is None and "manifest.json does not read" in error


def test_a_library_that_does_not_load_is_named(tmp_path, monkeypatch):
    entry = {
        "file": "libcublas-tinytensor.so.12",
        "soname": "libcublas-tinytensor.so.12",
        "source": "nvidia-cublas-cu12==12.9.3.13",
    }
    _install(tmp_path, "tt_libs_broken", LIBS.version, [entry])
    (tmp_path / "tt_libs_broken" / "lib" / entry["file"]).write_bytes(b"not an ELF file")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(extension, "_LOADED", [])  # an installed wheel has loaded its own already
    manifest, error, _ = extension._load_cuda_libs(_config("tt_libs_broken"))
    assert manifest is None
    assert "libcublas-tinytensor.so.12 does not load" in error and LIBS.version in error


def test_missing_nvrtc_names_its_pinned_requirement(tmp_path, monkeypatch):
    nvrtc = {"requirement": LIBS.nvrtc_requirement, "package": "tt_no_such_nvrtc_package", "file": "lib/libnvrtc.so.12"}
    _install(tmp_path, "tt_libs_no_nvrtc", LIBS.version, [], nvrtc)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(extension, "_LOADED", [])
    manifest, error, fix = extension._load_cuda_libs(_config("tt_libs_no_nvrtc"))
    assert manifest is None
    assert f"{LIBS.nvrtc_requirement} (NVRTC, which cuBLAS loads) is not installed" in error
    assert fix == f'pip install "{LIBS.nvrtc_requirement}"'


def test_the_matching_version_loads_and_gives_its_manifest(tmp_path, monkeypatch):
    _install(tmp_path, "tt_libs_matching", LIBS.version, [])
    monkeypatch.syspath_prepend(str(tmp_path))
    manifest, error, fix = extension._load_cuda_libs(_config("tt_libs_matching"))
    assert error is None and fix is None and manifest["version"] == LIBS.version


def test_the_first_folder_on_sys_path_that_holds_the_manifest_is_read(tmp_path, monkeypatch):
    """An empty folder of the same name earlier on sys.path (a namespace package portion) is passed
    over: the installed distribution is where its manifest is."""
    (tmp_path / "empty" / "tt_libs_two_portions").mkdir(parents=True)
    _install(tmp_path / "real", "tt_libs_two_portions", LIBS.version, [])
    monkeypatch.syspath_prepend(str(tmp_path / "real"))
    monkeypatch.syspath_prepend(str(tmp_path / "empty"))
    manifest, error, _ = extension._load_cuda_libs(_config("tt_libs_two_portions"))
    assert error is None and manifest["version"] == LIBS.version
