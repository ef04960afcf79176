"""The release's matrix is declared once (buildsys/release_matrix.py): [tool.cibuildwheel], release.yml
and the GPU smoke test's lock must say the same, and the names built from it must be the release's."""

from __future__ import annotations

import re
import tomllib

import pytest
from checkout import ROOT, from_checkout

if not (ROOT / ".github" / "workflows").is_dir():
    pytest.skip(
        reason="checks the repository's own files: this is an sdist or a wheel's test folder", allow_module_level=True
    )

matrix = from_checkout("buildsys.release_matrix")
variant = from_checkout("buildsys.variant")
release_manifest = from_checkout("ci.release.release_manifest")

CIBW = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["cibuildwheel"]


def test_the_matrix_is_the_supported_releases():
    assert matrix.PYTHON_TAGS == tuple(f"cp3{v.split('.')[1]}" for v in matrix.PYTHONS)
    assert list(matrix.PYTHONS) == sorted(matrix.PYTHONS, key=lambda v: tuple(map(int, v.split("."))))
    for release in matrix.CUDA_RELEASES:
        # a released variant is one setup.py builds, against its own CUDA major's library distribution
        assert variant.VARIANTS[release.key] == release.cuda_major == release.libs.cuda_major
        assert (ROOT / release.toolchain_pins).is_file()
        assert (ROOT / "ci" / "release" / "locks" / f"cuda-libs-{release.key}.txt").is_file()


def test_cibuildwheel_builds_the_matrix():
    assert CIBW["build"] == matrix.cibuildwheel_build()
    for arch in matrix.ARCHS:
        assert CIBW[f"manylinux-{arch}-image"] == matrix.MANYLINUX
    assert CIBW["environment"]["TINYTENSOR_CUDA_VARIANT"] in [r.key for r in matrix.CUDA_RELEASES]


def test_setup_py_requires_the_oldest_python_of_the_matrix():
    text = (ROOT / "setup.py").read_text()
    assert "python_requires=release_matrix.requires_python()" in text
    assert matrix.requires_python() == f">={matrix.PYTHONS[0]}"


def test_the_release_table_is_the_matrix():
    jobs = release_manifest.expected_by_job("2.0.0")
    assert sorted(jobs) == sorted(["sdist", *(f"{j}-{a}" for j in ("wheels", "cuda-libs") for a in matrix.ARCHS)])
    assert "pytinytensor-2.0.0-py3-none-any.whl" in jobs["sdist"]
    assert [n for n in jobs["sdist"] if n.endswith(".tar.gz")] == [
        f"{re.sub(r'[-_.]+', '_', d)}-2.0.0.tar.gz" for d in matrix.SDISTS
    ]
    for arch in matrix.ARCHS:
        wheels = jobs[f"wheels-{arch}"]
        assert len(wheels) == len(matrix.PYTHON_TAGS) * len(matrix.CUDA_RELEASES)
        for tag in matrix.PYTHON_TAGS:
            assert f"pytinytensor_cu12-2.0.0-{tag}-{tag}-manylinux_2_28_{arch}.whl" in wheels


@pytest.fixture(scope="module")
def release_yml() -> dict:
    yaml = pytest.importorskip("yaml", reason="release.yml is read with PyYAML, which `nox -s workflows` has")
    return yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())["jobs"]


def test_release_yml_builds_every_architecture_on_its_own_runner(release_yml):
    runners = {}
    for job in ("wheels", "cuda-libs"):
        entries = release_yml[job]["strategy"]["matrix"]["include"]
        assert sorted(e["arch"] for e in entries) == sorted(matrix.ARCHS), job
        runners[job] = {e["arch"]: e["runner"] for e in entries}
    # each library wheel is built, and each per-Python wheel tested against it, on its own architecture
    assert runners["cuda-libs"] == runners["wheels"]
    assert len(set(runners["wheels"].values())) == len(matrix.ARCHS)


def test_release_yml_smoke_tests_the_lowest_and_highest_python(release_yml):
    assert release_yml["gpu-smoke"]["strategy"]["matrix"]["python"] == [matrix.PYTHONS[0], matrix.PYTHONS[-1]]


def test_release_yml_holds_every_wheel_to_the_floor(release_yml):
    steps = [s.get("run", "") for job in ("wheels", "cuda-libs") for s in release_yml[job]["steps"]]
    plats = set(re.findall(r'--plat "([^"]+)"', "\n".join(steps)))
    assert plats == {f"{matrix.MANYLINUX}_${{ARCH}}"}


def test_release_yml_builds_the_cpu_wheel_from_the_plain_sdist(release_yml):
    runs = "\n".join(s.get("run", "") for s in release_yml["sdist"]["steps"])
    assert "TINYTENSOR_BUILD_EXTENSION=0" in runs and "--wheel" in runs


def test_the_gpu_smoke_lock_is_the_cu12_wheels_dependencies():
    lines = (ROOT / "ci" / "release" / "locks" / "gpu-smoke.in").read_text().splitlines()
    inputs = sorted(line.strip() for line in lines if line.strip() and not line.startswith("#"))
    cu12 = sorted(variant.from_env({"TINYTENSOR_CUDA_VARIANT": "cu12"}).install_requires())
    assert inputs == cu12, "update ci/release/locks/gpu-smoke.in and its lock (ci/release/locks/update.sh)"
