"""The build's environment variables (buildsys/settings.py), without compiling anything: a value a
variable does not accept is an error naming the variable, the value and what it accepts; a CUDA_HOME
or CUDA_PATH without nvcc is named, never passed over for /usr/local/cuda; good values parse. The
setup.py cases run it for a command that stops before any compiler would run."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from checkout import ROOT, from_checkout

settings = from_checkout("buildsys.settings")
commands = from_checkout("buildsys.commands")
toolkit = from_checkout("buildsys.toolkit")
variant = from_checkout("buildsys.variant")
archs = from_checkout("buildsys.archs")

NO_RECORD = Path("/nonexistent/recorded_variant.json")  # a source tree: no variant recorded

# name, a value it refuses, what the error says it accepts
BAD = [
    ("TINYTENSOR_BUILD_TIMEOUT", "nan", "a positive number of seconds"),
    ("TINYTENSOR_BUILD_TIMEOUT", "inf", "a positive number of seconds"),
    ("TINYTENSOR_BUILD_TIMEOUT", "0", "a positive number of seconds"),
    ("TINYTENSOR_BUILD_TIMEOUT", "-5", "a positive number of seconds"),
    ("TINYTENSOR_BUILD_TIMEOUT", "10m", "a positive number of seconds"),
    ("TINYTENSOR_BUILD_TIMEOUT", "1e9", "at most 604800"),  # past what subprocess can wait for
    ("TINYTENSOR_NVCC_THREADS", "abc", "a whole number of threads (0: one per core)"),
    ("TINYTENSOR_NVCC_THREADS", "-1", "a whole number of threads"),
    ("TINYTENSOR_NVCC_THREADS", "2.5", "a whole number of threads"),
    ("TINYTENSOR_NVCC_THREADS", "+4", "a whole number of threads"),
    ("TINYTENSOR_CUDA_ARCHS", "80;sm_90", "GPU architectures such as '80;90+PTX' ('sm_90' is not one)"),
    ("TINYTENSOR_CUDA_ARCHS", ";", "GPU architectures such as '80;90+PTX' (it names none)"),
    ("TINYTENSOR_CUDA_SEARCH", "$CUDA_HOME", "variable names, absolute paths and 'pip' ('$CUDA_HOME' is none"),
    ("TINYTENSOR_CUDA_SEARCH", "pip,./cuda", "('./cuda' is none of these)"),
    ("TINYTENSOR_CUDA_SEARCH", " , ", "(it names no place)"),
    ("TINYTENSOR_LINKER", "lld", "one of 'cxx', 'zig'"),
    ("TINYTENSOR_ZIG", "'python -m ziglang", "a command line (no closing quotation)"),
    ("TINYTENSOR_ZIG", "''", "a command line naming a program"),
    ("TINYTENSOR_ZIG_TARGET", "x86_64 linux", "a zig target"),
    ("TINYTENSOR_RPATH", "no", "one of '1', '0'"),
    ("SOURCE_DATE_EPOCH", "yesterday", "a whole number of seconds since 1970"),
    ("TINYTENSOR_CUDA_VARIANT", "cu11", "one of 'cu12', 'cu13', or unset for pytinytensor"),
    ("TINYTENSOR_BUILD_EXTENSION", "yes", "one of 'auto', '1', '0'"),
    ("TINYTENSOR_CUDA_LIBS", "wheel", "one of 'toolkit', 'dist'"),
]


def _check_all(env: dict) -> None:
    """What setup.py checks before it builds anything."""
    variant.from_env(env, record=NO_RECORD)
    settings.check(env)


@pytest.mark.parametrize(("name", "value", "expected"), BAD, ids=[f"{n}={v}" for n, v, _ in BAD])
def test_a_bad_value_is_refused_naming_the_variable(name, value, expected):
    with pytest.raises(settings.SettingError) as raised:
        _check_all({name: value})
    assert str(raised.value).startswith(f"{name}={value.strip()!r}: expected "), raised.value
    assert expected in str(raised.value)
    assert raised.value.fix.startswith(f"set {name} to ") and raised.value.fix.endswith(", or unset it")


def test_every_variable_the_build_names_is_checked():
    """Each TINYTENSOR_* variable named anywhere in the build refuses a value no kind accepts, so a
    new variable cannot be read without being checked."""
    sources = [ROOT / "setup.py", *sorted((ROOT / "buildsys").glob("*.py"))]
    names = set().union(*(re.findall(r"TINYTENSOR_[A-Z0-9_]*[A-Z0-9]", p.read_text()) for p in sources if p.exists()))
    assert {"TINYTENSOR_BUILD_TIMEOUT", "TINYTENSOR_NVCC_THREADS", "TINYTENSOR_CUDA_SEARCH"} <= names
    for name in sorted(names):
        with pytest.raises(settings.SettingError, match=re.escape(f"{name}='\"':")):
            _check_all({name: '"'})


def test_only_settings_reads_variables():
    """The other modules of the build take values from buildsys/settings.py; they pass the
    environment on to the commands they run, and read only PATH from it (to find the compilers)."""
    read = re.compile(r"""(?:environ|env)(?:\.get\(|\[)\s*["']([A-Za-z_][A-Za-z0-9_]*)["']""")
    for path in [ROOT / "setup.py", *(ROOT / "buildsys").glob("*.py")]:
        if path.name != "settings.py" and path.exists():
            assert set(read.findall(path.read_text())) <= {"PATH"}, path


def test_the_build_timeout_is_checked_before_a_command_runs():
    with pytest.raises(settings.SettingError, match=r"^TINYTENSOR_BUILD_TIMEOUT='nan': expected a positive number"):
        commands.run(["true"], env=dict(os.environ, TINYTENSOR_BUILD_TIMEOUT="nan"))
    assert commands.run(["true"], env=dict(os.environ, TINYTENSOR_BUILD_TIMEOUT="30")).returncode == 0


# ---------------------------------------------------------------------------- where CUDA is looked for
@pytest.mark.parametrize("name", ["CUDA_HOME", "CUDA_PATH"])
def test_a_toolkit_variable_without_nvcc_is_named_never_passed_over(name, tmp_path):
    (tmp_path / "include").mkdir()  # a folder, but no bin/nvcc: the default search must stop here
    with pytest.raises(settings.SettingError) as raised:
        toolkit.search_places({name: str(tmp_path)})
    assert raised.value.cause == f"${name}={tmp_path} holds no bin/nvcc: nvcc not found at {tmp_path}/bin/nvcc"
    assert raised.value.fix == f"set {name} to the folder of a CUDA toolkit (the one holding bin/nvcc), or unset it"
    (tmp_path / "bin" / "nvcc").mkdir(parents=True)  # a folder named nvcc is no compiler either
    with pytest.raises(settings.SettingError, match="holds no bin/nvcc"):
        toolkit.search_places({name: str(tmp_path)})


@pytest.mark.parametrize("name", ["CUDA_HOME", "CONDA_PREFIX"])
def test_a_search_variable_naming_nothing_is_named(name, tmp_path):
    missing = tmp_path / "no-such-cuda"
    with pytest.raises(settings.SettingError, match=re.escape(f"${name}={missing} does not exist")):
        toolkit.search_places({name: str(missing)})


def _toolkit_root(folder: Path) -> Path:
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "nvcc").write_text("#!/bin/sh\nexit 1\n")  # searching does not run it
    return folder


@pytest.mark.parametrize("name", ["CUDA_HOME", "CUDA_PATH"])
def test_a_toolkit_variable_whose_nvcc_does_not_run_is_named_never_passed_over(name, tmp_path):
    # an nvcc that cannot be executed (as one for another architecture, or without its x bit)
    chosen, other = _toolkit_root(tmp_path / "chosen"), _toolkit_root(tmp_path / "other")
    env = {name: str(chosen), "TINYTENSOR_CUDA_SEARCH": f"{name},{other}"}
    with pytest.raises(toolkit.ToolkitError) as raised:
        toolkit.discover(12, env)
    assert raised.value.cause.startswith(f"${name}={chosen}: {chosen}/bin/nvcc does not run: ")
    assert raised.value.fix == f"repair that toolkit, or set {name} to a working one"
    assert str(other) not in raised.value.cause  # the search stopped at the chosen toolkit
    # a place the user did not name in a variable is passed over, and the error lists them all
    with pytest.raises(toolkit.ToolkitError) as raised:
        toolkit.discover(12, {"TINYTENSOR_CUDA_SEARCH": f"{chosen},{other}"})
    assert f"{chosen}/bin/nvcc does not run" in raised.value.cause
    assert f"{other}/bin/nvcc does not run" in raised.value.cause


def test_a_toolkit_variable_whose_nvcc_hangs_is_named_with_the_timeout(tmp_path, monkeypatch):
    chosen = _toolkit_root(tmp_path / "chosen")
    (chosen / "bin" / "nvcc").write_text("#!/bin/sh\nexec sleep 30\n")
    (chosen / "bin" / "nvcc").chmod(0o755)
    monkeypatch.setenv("TINYTENSOR_BUILD_TIMEOUT", "1")  # the commands the build runs read it from the environment
    with pytest.raises(toolkit.ToolkitError) as raised:
        toolkit.discover(12, {"CUDA_HOME": str(chosen), "TINYTENSOR_CUDA_SEARCH": "CUDA_HOME"})
    assert raised.value.cause == (
        f"$CUDA_HOME={chosen}: {chosen}/bin/nvcc does not run: nvcc did not finish within 1 s "
        "(TINYTENSOR_BUILD_TIMEOUT); stopped"
    )
    assert (
        raised.value.fix == "raise TINYTENSOR_BUILD_TIMEOUT, or repair that toolkit, or set CUDA_HOME to a working one"
    )


def test_good_places_are_searched_in_order(tmp_path):
    cuda, conda = _toolkit_root(tmp_path / "cuda"), tmp_path / "conda"
    conda.mkdir()  # an environment without nvcc is a place that may hold some components
    env = {
        "CUDA_HOME": str(cuda),
        "CONDA_PREFIX": str(conda),
        "TINYTENSOR_CUDA_SEARCH": "CUDA_HOME, CUDA_PATH,CONDA_PREFIX",
    }
    places, notes = toolkit.search_places(env)
    assert [p.label for p in places] == [f"$CUDA_HOME={cuda}", f"$CONDA_PREFIX={conda}"]
    assert places[0].bins == [cuda / "bin"] and notes == ["$CUDA_PATH (unset)"]
    assert settings.cuda_search({}) == ["CUDA_HOME", "CUDA_PATH", "/usr/local/cuda", "CONDA_PREFIX", "pip"]
    assert settings.cuda_search({"TINYTENSOR_CUDA_SEARCH": "pip,/opt/cuda,MY_CUDA"}) == ["pip", "/opt/cuda", "MY_CUDA"]


# ---------------------------------------------------------------------------- good values
def test_good_values_parse():
    assert settings.build_timeout({}) == settings.build_timeout({"TINYTENSOR_BUILD_TIMEOUT": " "}) == 600
    assert settings.build_timeout({"TINYTENSOR_BUILD_TIMEOUT": " 1800 "}) == 1800.0
    assert settings.build_timeout({"TINYTENSOR_BUILD_TIMEOUT": "2.5"}) == 2.5
    assert settings.nvcc_threads({}) == 0 and settings.nvcc_threads({"TINYTENSOR_NVCC_THREADS": "8"}) == 8
    assert settings.cuda_archs({}) is None
    assert settings.cuda_archs({"TINYTENSOR_CUDA_ARCHS": "90+PTX;80"}) == ([80, 90], [90])
    assert archs.select(12, [], None) == archs.parse(archs.DEFAULTS[12])
    assert settings.linker({}) == "cxx" and settings.linker({"TINYTENSOR_LINKER": "zig"}) == "zig"
    assert settings.zig({}) == ["zig"]
    assert settings.zig({"TINYTENSOR_ZIG": "'/opt/my python/python' -m ziglang"}) == [
        "/opt/my python/python",
        "-m",
        "ziglang",
    ]
    assert settings.zig_target({"TINYTENSOR_ZIG_TARGET": "aarch64-linux-gnu.2.28"}) == "aarch64-linux-gnu.2.28"
    assert settings.rpath({}) is True and settings.rpath({"TINYTENSOR_RPATH": "0"}) is False
    assert settings.cxx({}) is None and settings.cxx({"CXX": "ccache g++"}) == ["ccache", "g++"]
    assert settings.source_date_epoch({}) is None
    assert settings.source_date_epoch({"SOURCE_DATE_EPOCH": "1700000000"}) == 1700000000
    release = {"TINYTENSOR_CUDA_VARIANT": "cu12", "TINYTENSOR_CUDA_LIBS": "dist", "TINYTENSOR_RPATH": "0"}
    settings.check(release)
    chosen = variant.from_env(release, record=NO_RECORD)
    assert (chosen.key, chosen.mode, chosen.libs) == ("cu12", "1", "dist")
    assert variant.from_env({}, record=NO_RECORD).mode == "auto"


def test_a_bad_cxx_is_named():
    with pytest.raises(settings.SettingError, match=r"^CXX='g\+\+ \"-O2': expected a command line \(no closing"):
        settings.cxx({"CXX": 'g++ "-O2'})


# ---------------------------------------------------------------------------- through setup.py
if not (ROOT / "setup.py").is_file():
    _NO_SETUP = "runs the checkout's setup.py: this is a wheel's test folder"
elif importlib.util.find_spec("setuptools") is None:
    _NO_SETUP = "runs setup.py, whose build requirement setuptools this Python lacks (Python 3.12+ venvs have none)"
else:
    _NO_SETUP = ""
needs_setup = pytest.mark.skipif(bool(_NO_SETUP), reason=_NO_SETUP)


def _setup(args: list[str], tmp_path: Path, **variables) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TINYTENSOR_", "CUDA_"))}
    return subprocess.run(
        [sys.executable, str(ROOT / "setup.py"), *args],
        cwd=tmp_path,
        env=dict(env, **variables),
        capture_output=True,
        text=True,
        timeout=120,
    )


@needs_setup
@pytest.mark.parametrize("key", ["", "cu12"])
def test_setup_stops_every_variant_on_a_bad_value(key, tmp_path):
    """A bad TINYTENSOR_* value is an error for the forgiving pytinytensor too, before any build."""
    done = _setup(["--name"], tmp_path, TINYTENSOR_CUDA_VARIANT=key, TINYTENSOR_NVCC_THREADS="abc")
    assert done.returncode != 0 and not done.stdout.strip(), done.stdout
    assert "pytinytensor: ERROR: TINYTENSOR_NVCC_THREADS='abc': expected a whole number of threads" in done.stderr
    assert "pytinytensor: fix: set TINYTENSOR_NVCC_THREADS to e.g. 8, or unset it" in done.stderr
    good = _setup(["--name"], tmp_path, TINYTENSOR_CUDA_VARIANT=key, TINYTENSOR_NVCC_THREADS="8")
    assert good.returncode == 0 and good.stdout.split() == [
        variant.from_env({"TINYTENSOR_CUDA_VARIANT": key}, record=NO_RECORD).dist_name
    ]


@needs_setup
@pytest.mark.parametrize("key", ["", "cu12"])
def test_cuda_home_without_nvcc_stops_the_extension_build(key, tmp_path):
    """build_ext stops at the CUDA_HOME before any compiler runs: pytinytensor installs CPU-only with
    one warning carrying the message (and records it), pytinytensor-cu12 fails with it."""
    home = tmp_path / "cuda"
    (home / "include").mkdir(parents=True)
    message = f"$CUDA_HOME={home} holds no bin/nvcc: nvcc not found at {home}/bin/nvcc"
    args = ["-q", "build_ext", "--build-lib", str(tmp_path / "lib"), "--build-temp", str(tmp_path / "temp")]
    done = _setup(args, tmp_path, TINYTENSOR_CUDA_VARIANT=key, CUDA_HOME=str(home))
    if key:
        assert done.returncode != 0, done.stderr
        assert f"ERROR: cannot build the CUDA extension of pytinytensor-cu12: {message}\n" in done.stderr
    else:
        assert done.returncode == 0, done.stderr
        warning = "pytinytensor: WARNING: building CPU-only, without the CUDA extension: "
        assert done.stderr.count(warning) == 1 and f"{warning}{message} (fix: set CUDA_HOME to " in done.stderr
        record = (tmp_path / "lib" / "tinytensor" / "_build_config.json").read_text()
        assert f'"reason": "{message}"' in record
    assert "/usr/local/cuda" not in done.stderr
