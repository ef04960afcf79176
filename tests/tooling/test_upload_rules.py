"""ci/release/upload_rules.py on real wheels and sdists built here with zipfile and tarfile: each of
PyPI's upload rules refuses what PyPI refuses and passes what it takes. Needs the `release`
dependency group (nox -s release runs it); skipped elsewhere."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest
from checkout import from_checkout

pytest.importorskip("trove_classifiers", reason="trove-classifiers: the `release` session runs these (its lock has it)")
pytest.importorskip("readme_renderer", reason="readme-renderer: the `release` session runs these (its lock has it)")

upload_rules = from_checkout("ci.release.upload_rules")

NAME, VERSION = "pytinytensor-cu12", "2.0.0"
WHEEL = f"pytinytensor_cu12-{VERSION}-cp311-cp311-manylinux_2_28_x86_64.whl"
SDIST = f"pytinytensor_cu12-{VERSION}.tar.gz"
LIBS_LICENSE = "nvidia-cuda-runtime-cu12-License.txt"
MARKDOWN = "# pytinytensor\n\nA small tensor library with *autograd*.\n\n```python\nimport tinytensor\n```\n"


def metadata(
    *headers: str,
    name: str = NAME,
    version: str = VERSION,
    metadata_version: str = "2.4",
    requires_python: str = ">=3.11",
    content_type: str | None = "text/markdown",
    description: str = MARKDOWN,
) -> str:
    lines = [
        f"Metadata-Version: {metadata_version}",
        f"Name: {name}",
        f"Version: {version}",
        "Summary: A small tensor library",
        "License-Expression: MIT",
        f"Requires-Python: {requires_python}",
        "Classifier: Programming Language :: Python :: 3",
        *headers,
    ]
    if content_type:
        lines.append(f"Description-Content-Type: {content_type}")
    return "\n".join(lines) + "\n\n" + description


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def make_wheel(directory: Path, meta: str, filename: str = WHEEL, files: dict[str, bytes] | None = None) -> Path:
    """A wheel as a build backend writes it: the package, then the .dist-info with METADATA, WHEEL,
    any `files` (paths relative to the .dist-info when they start with "+") and RECORD."""
    stem, version = filename.split("-")[:2]
    dist_info = f"{stem}-{version}.dist-info"
    tag = filename[: -len(".whl")].split("-", 2)[2]
    members = {"tinytensor/__init__.py": b"__version__ = '2.0.0'\n", f"{dist_info}/METADATA": meta.encode()}
    members[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}\n".encode()
    )
    for path, data in (files or {}).items():
        members[f"{dist_info}/{path[1:]}" if path.startswith("+") else path] = data
    record = [_record_line(p, d) for p, d in members.items()] + [f"{dist_info}/RECORD,,"]
    members[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    out = directory / filename
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in members.items():
            zf.writestr(path, data)
    return out


def make_sdist(
    directory: Path,
    meta: str | None,
    filename: str = SDIST,
    top: str | None = None,
    files: dict[str, bytes] | None = None,
) -> Path:
    """An sdist: one top-level folder (the file name's stem unless `top`) with PKG-INFO (unless None)."""
    top = top or filename[: -len(".tar.gz")]
    members = {"LICENSE": b"MIT License\n", "pyproject.toml": b"[build-system]\n", "tinytensor/__init__.py": b""}
    if meta is not None:
        members["PKG-INFO"] = meta.encode()
    members.update(files or {})
    out = directory / filename
    with tarfile.open(out, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        folder = tarfile.TarInfo(top)
        folder.type, folder.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(folder)
        for path, data in members.items():
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return out


@pytest.fixture
def limits() -> upload_rules.Limits:
    return upload_rules.load_limits()


def failures(path: Path, limits, index: str = "pypi") -> list[dict]:
    return upload_rules.check_file(path, index, limits)["failures"]


def rules(path: Path, limits, index: str = "pypi") -> list[str]:
    return [f["rule"] for f in failures(path, limits, index)]


def details(path: Path, limits, rule: str) -> str:
    return "\n".join(f["detail"] for f in failures(path, limits) if f["rule"] == rule)


# ---------------------------------------------------------------------------- files PyPI takes
def test_correct_wheel_and_sdist_pass(tmp_path, capsys):
    wheel = make_wheel(tmp_path, metadata("License-File: LICENSE"), files={"+licenses/LICENSE": b"MIT\n"})
    sdist = make_sdist(tmp_path, metadata("License-File: LICENSE"))
    out = tmp_path / "rules.json"
    assert upload_rules.main(["--index", "pypi", "--json", str(out), str(wheel), str(sdist)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        f"{WHEEL}: OK for pypi ({wheel.stat().st_size} bytes, limit 104857600 for pytinytensor-cu12)",
        f"{SDIST}: OK for pypi ({sdist.stat().st_size} bytes, limit 104857600 for pytinytensor-cu12)",
    ]
    report = json.loads(out.read_text())
    assert report["index"] == "pypi"
    assert [(f["file"], f["bytes"], f["failures"]) for f in report["files"]] == [
        (WHEEL, wheel.stat().st_size, []),
        (SDIST, sdist.stat().st_size, []),
    ]


def test_a_failure_names_the_file_and_the_rule_and_exits_1(tmp_path, capsys):
    wheel = make_wheel(tmp_path, metadata("Classifier: Programming Language :: Cobol++"))
    assert upload_rules.main(["--index", "pypi", str(wheel)]) == 1
    assert capsys.readouterr().out.startswith(
        f"{WHEEL}: FAIL [classifiers] Classifier 'Programming Language :: Cobol++'"
    )


# ---------------------------------------------------------------------------- License-File
def test_license_file_under_dist_info_instead_of_its_licenses_folder_fails(tmp_path, limits):
    """The library wheel's layout: the field says licenses/X and the file is <dist-info>/licenses/X,
    where PEP 639 reads the field as <dist-info>/licenses/licenses/X."""
    name = "pytinytensor_cu12_libs-12.9.3.13-py3-none-manylinux_2_28_x86_64.whl"
    meta = metadata(f"License-File: licenses/{LIBS_LICENSE}", name="pytinytensor-cu12-libs", version="12.9.3.13")
    wheel = make_wheel(tmp_path, meta, name, {f"+licenses/{LIBS_LICENSE}": b"NVIDIA\n"})
    assert rules(wheel, limits) == ["license-file"]
    detail = details(wheel, limits, "license-file")
    at = f"pytinytensor_cu12_libs-12.9.3.13.dist-info/licenses/licenses/{LIBS_LICENSE}"
    assert f"License-File licenses/{LIBS_LICENSE} does not exist in {name} at {at}" in detail
    assert f"must say License-File: {LIBS_LICENSE}" in detail


def test_license_file_relative_to_the_licenses_folder_passes(tmp_path, limits):
    name = "pytinytensor_cu12_libs-12.9.3.13-py3-none-manylinux_2_28_x86_64.whl"
    meta = metadata(f"License-File: {LIBS_LICENSE}", name="pytinytensor-cu12-libs", version="12.9.3.13")
    wheel = make_wheel(tmp_path, meta, name, {f"+licenses/{LIBS_LICENSE}": b"NVIDIA\n"})
    assert failures(wheel, limits) == []


def test_sdist_license_file_resolves_under_its_top_level_folder(tmp_path, limits):
    assert failures(make_sdist(tmp_path, metadata("License-File: LICENSE")), limits) == []
    (tmp_path / "missing").mkdir()
    sdist = make_sdist(tmp_path / "missing", metadata("License-File: COPYING"))
    assert rules(sdist, limits) == ["license-file"]
    assert f"at pytinytensor_cu12-{VERSION}/COPYING" in details(sdist, limits, "license-file")


# ---------------------------------------------------------------------------- metadata
@pytest.mark.parametrize(
    ("meta", "message"),
    [
        (metadata(requires_python=">=3.x"), "'>=3.x' is invalid for 'requires-python'"),
        (metadata(metadata_version="9.9"), "'9.9' is not a valid metadata version"),
        (metadata("Requires-Dist: numpy>=2.0; python_version >"), "is invalid for 'requires-dist'"),
        (metadata("License: MIT"), "both License and License-Expression"),
        (metadata(version="2.0.0+cu12"), "local part"),
        (metadata("Requires-Dist: tinyblas @ https://example.com/tinyblas.whl"), "direct URL reference"),
    ],
    ids=["requires-python", "metadata-version-9.9", "requires-dist", "license-and-expression", "local", "url"],
)
def test_invalid_metadata_fails_with_the_message(tmp_path, limits, meta, message):
    filename = WHEEL.replace(VERSION, "2.0.0+cu12") if "+cu12" in meta else WHEEL
    wheel = make_wheel(tmp_path, meta, filename)
    assert "metadata" in rules(wheel, limits)
    assert message in details(wheel, limits, "metadata")


def test_several_metadata_errors_are_each_reported(tmp_path, limits):
    wheel = make_wheel(tmp_path, metadata("Frobnicate: yes", requires_python=">=3.x"))
    found = [f["detail"] for f in failures(wheel, limits) if f["rule"] == "metadata"]
    assert len(found) == 2
    assert "'>=3.x' is invalid for 'requires-python'" in found
    assert "unrecognized field: 'frobnicate'" in found


def test_wheel_without_record_or_sdist_without_pkg_info_fails(tmp_path, limits):
    wheel = make_wheel(tmp_path, metadata())
    with zipfile.ZipFile(wheel) as zf:
        kept = {n: zf.read(n) for n in zf.namelist() if not n.endswith("/RECORD")}
    with zipfile.ZipFile(wheel, "w") as zf:
        for n, data in kept.items():
            zf.writestr(n, data)
    assert rules(wheel, limits) == ["archive"]
    assert f"pytinytensor_cu12-{VERSION}.dist-info/RECORD" in details(wheel, limits, "archive")
    sdist = make_sdist(tmp_path, None)
    assert rules(sdist, limits) == ["archive"]
    assert f"PKG-INFO not found at pytinytensor_cu12-{VERSION}/PKG-INFO" in details(sdist, limits, "archive")


# ---------------------------------------------------------------------------- file names
def test_sdist_name_that_is_not_pep625_fails(tmp_path, limits):
    sdist = make_sdist(tmp_path, metadata(), filename=f"pytinytensor-cu12-{VERSION}.tar.gz")
    assert "filename" in rules(sdist, limits)
    assert f"must be named pytinytensor_cu12-{VERSION}.tar.gz, not pytinytensor-cu12-{VERSION}.tar.gz" in details(
        sdist, limits, "filename"
    )


def test_sdist_top_level_folder_must_be_the_stem(tmp_path, limits):
    sdist = make_sdist(tmp_path, metadata(), top=f"pytinytensor-cu12-{VERSION}")
    assert rules(sdist, limits) == ["filename"]
    assert f"PEP 625 wants the file name's stem, pytinytensor_cu12-{VERSION}/" in details(sdist, limits, "filename")


def test_wheel_version_other_than_the_metadata_fails(tmp_path, limits):
    wheel = make_wheel(tmp_path, metadata(version="2.0.1"))
    assert rules(wheel, limits) == ["filename"]
    assert "the file name says version 2.0.0, the metadata 2.0.1" in details(wheel, limits, "filename")


def test_wheel_name_other_than_the_normalized_project_fails(tmp_path, limits):
    wheel = make_wheel(tmp_path, metadata(name="pytinytensor-cu13"))
    assert rules(wheel, limits) == ["filename"]
    assert "not the normalized project name 'pytinytensor_cu13'" in details(wheel, limits, "filename")


@pytest.mark.parametrize("platform", ["linux_x86_64", "linux_aarch64", "manylinux_2_28_sparc"])
def test_wheel_with_a_platform_tag_pypi_refuses_fails(tmp_path, limits, platform):
    wheel = make_wheel(tmp_path, metadata(), WHEEL.replace("manylinux_2_28_x86_64", platform))
    assert rules(wheel, limits) == ["platform"]
    assert f"platform tag {platform} is one PyPI refuses" in details(wheel, limits, "platform")


@pytest.mark.parametrize(
    "platform",
    [
        "manylinux_2_28_x86_64",
        "manylinux_2_27_x86_64.manylinux_2_28_x86_64",
        "manylinux2014_aarch64",
        "musllinux_1_2_x86_64",
    ],
)
def test_wheel_with_manylinux_or_musllinux_tags_passes(tmp_path, limits, platform):
    assert failures(make_wheel(tmp_path, metadata(), WHEEL.replace("manylinux_2_28_x86_64", platform)), limits) == []


# ---------------------------------------------------------------------------- description
RST_BROKEN = "pytinytensor\n============\n\nSee `the docs <https://example.com/>_ for more.\n"


@pytest.mark.parametrize("content_type", ["text/x-rst", None])
def test_rst_description_with_a_markup_error_fails(tmp_path, limits, content_type):
    wheel = make_wheel(tmp_path, metadata(content_type=content_type, description=RST_BROKEN))
    assert rules(wheel, limits) == ["description"]
    detail = details(wheel, limits, "description")
    assert "does not render as reStructuredText" in detail
    assert "Inline interpreted text or phrase reference start-string without end-string" in detail


def test_valid_markdown_and_rst_descriptions_pass(tmp_path, limits):
    assert failures(make_wheel(tmp_path, metadata(content_type="text/markdown", description=MARKDOWN)), limits) == []
    rst = "pytinytensor\n============\n\nSee `the docs <https://example.com/>`_ for more.\n"
    assert failures(make_wheel(tmp_path, metadata(content_type="text/x-rst", description=rst)), limits) == []


# ---------------------------------------------------------------------------- classifiers
@pytest.mark.parametrize(
    ("classifier", "message"),
    [
        ("Programming Language :: Cobol++", "is not a trove classifier"),
        ("Natural Language :: Ukranian", "is deprecated; use 'Natural Language :: Ukrainian'"),
    ],
    ids=["invalid", "deprecated"],
)
def test_invalid_or_deprecated_classifier_fails(tmp_path, limits, classifier, message):
    wheel = make_wheel(tmp_path, metadata(f"Classifier: {classifier}"))
    assert rules(wheel, limits) == ["classifiers"]
    assert f"Classifier {classifier!r} {message}" in details(wheel, limits, "classifiers")


# ---------------------------------------------------------------------------- size
def test_file_over_its_projects_limit_fails_naming_limit_project_and_index(tmp_path):
    settings = tmp_path / "limits.toml"
    settings.write_text("[pypi]\ndefault = 200\n\n[pypi.projects]\npytinytensor_cu12 = 300\n")
    wheel = make_wheel(tmp_path, metadata())
    result = upload_rules.check_file(wheel, "pypi", upload_rules.load_limits(settings))
    assert [f["rule"] for f in result["failures"]] == ["size"]
    assert (result["project"], result["limit"]) == ("pytinytensor-cu12", 300)  # the project's, not the default
    detail = result["failures"][0]["detail"]
    assert f"{WHEEL} is {wheel.stat().st_size} bytes" in detail
    assert "over the 300 bytes" in detail and "project pytinytensor-cu12" in detail and "index pypi" in detail
    assert f"then changed in {settings}" in detail


def test_file_within_its_projects_limit_passes(tmp_path):
    wheel = make_wheel(tmp_path, metadata())
    settings = tmp_path / "limits.toml"
    settings.write_text(f"[pypi]\ndefault = 200\n\n[pypi.projects]\npytinytensor-cu12 = {wheel.stat().st_size}\n")
    assert upload_rules.check_file(wheel, "pypi", upload_rules.load_limits(settings))["failures"] == []


def test_repository_limits_hold_every_project_at_100_mib_but_the_rehearsal_library_wheel(limits):
    library_wheel = 581_194_625  # pytinytensor_cu12_libs-12.9.3.13, x86_64
    for index in ("pypi", "testpypi"):
        for project in ("pytinytensor", "pytinytensor-cu12", "pytinytensor-cu12-libs"):
            assert limits.of(index, project) == 100 * 2**20
    assert limits.of("rehearsal", "pytinytensor_cu12_libs") == 650_000_000 >= library_wheel
    assert limits.of("rehearsal", "pytinytensor-cu12") == 100 * 2**20


def test_unknown_index_fails_naming_it_the_file_and_its_indexes(tmp_path):
    settings = tmp_path / "limits.toml"
    settings.write_text("[pypi]\ndefault = 104857600\n\n[rehearsal]\ndefault = 104857600\n")
    wheel = make_wheel(tmp_path, metadata())
    with pytest.raises(SystemExit) as exc:
        upload_rules.main(["--index", "pypy", "--limits", str(settings), str(wheel)])
    assert str(exc.value) == f"upload_rules: index 'pypy' is not in {settings}, which has pypi, rehearsal"


@pytest.mark.parametrize(
    "text", ["[pypi]\n", "[pypi]\ndefault = '100 MiB'\n", "[pypi]\ndefault = 1\n[pypi.projects]\nx = -1\n", "pypi = ["]
)
def test_malformed_limits_file_is_an_error(tmp_path, text):
    settings = tmp_path / "limits.toml"
    settings.write_text(text)
    with pytest.raises(upload_rules.LimitsError, match=str(settings)):
        upload_rules.load_limits(settings)
