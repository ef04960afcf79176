"""The build_ext command: build tinytensor.cuda_ops, or fall back to CPU-only, or fail, per variant.

Whatever happens is recorded in tinytensor/_build_config.json inside the built package, so the
installed library (``python -m tinytensor``) can say why it has no extension. The record holds no
timing and no path of the building machine (the build log has them): one commit builds into the
same bytes wherever it is built, which a re-run of a release relies on.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

from . import archs, cuda_libs, extension, settings, toolkit, variant

PREFIX = "pytinytensor"
ROOT = Path(__file__).resolve().parent.parent  # setup.py's folder: the extension's paths are relative to it


def _say(message: str) -> None:
    print(f"{PREFIX}: {message}", file=sys.stderr, flush=True)


def _record(chosen: variant.Variant, outcome: dict, package_dirs: list[Path]) -> list[str]:
    """Write the build record into each of `package_dirs` (tinytensor/ as built); returns the files."""
    config = {"distribution": chosen.dist_name, "variant": chosen.key or "default", "mode": chosen.mode, **outcome}
    written = []
    for target in package_dirs:
        target.mkdir(parents=True, exist_ok=True)
        path = target / "_build_config.json"
        path.write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
        written.append(str(path))
    return written


SKIPPED = {"extension": "skipped", "reason": "a CPU-only build was requested (TINYTENSOR_BUILD_EXTENSION=0)"}


class CpuOnlyBuildPy(build_py):
    """A CPU-only build (TINYTENSOR_BUILD_EXTENSION=0) declares no extension, so its wheel is pure
    (py3-none-any) and build_ext never runs: the build record is written here instead."""

    def run(self):
        super().run()
        chosen = variant.from_env()
        if chosen.skip:
            if chosen.cuda_major:
                _say(
                    f"WARNING: building {chosen.dist_name} WITHOUT its CUDA extension, because "
                    "TINYTENSOR_BUILD_EXTENSION=0 asked for a CPU-only build"
                )
            else:
                _say("building CPU-only (TINYTENSOR_BUILD_EXTENSION=0): a pure-Python wheel")
            self._built_files = _record(chosen, SKIPPED, [Path(self.build_lib) / "tinytensor"])

    def get_outputs(self, include_bytecode=True):
        return super().get_outputs(include_bytecode) + list(getattr(self, "_built_files", []))


class CudaBuildExt(build_ext):
    """Builds the one CUDA extension with nvcc; never silently skips it for a -cuNN variant."""

    def run(self):
        chosen = variant.from_env()
        self._built_files = _record(chosen, self._build(chosen), self._package_dirs())

    def _package_dirs(self) -> list[Path]:
        if self.inplace:
            return [Path(self.get_finalized_command("build_py").get_package_dir("tinytensor"))]
        return [Path(self.build_lib) / "tinytensor"]

    def _build(self, chosen) -> dict:
        ext = self.extensions[0]
        # An extension left in build/ (or the source tree) by an earlier build must not ship with
        # this one if this one skips or fails: remove it first.
        Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)
        if chosen.skip:  # only in place (setup.py build_ext --inplace): a wheel declares no extension then
            return SKIPPED
        try:
            kit = toolkit.discover(chosen.cuda_major)
            sass, ptx = archs.select(kit.major, toolkit.nvcc_supported_archs(kit.nvcc), settings.cuda_archs())
            output = Path(self.get_ext_fullpath(ext.name))
            _say(
                f"building {ext.name} with nvcc {kit.release} ({kit.nvcc}) for sm_{', sm_'.join(map(str, sass))}"
                + (f" + PTX {', '.join(map(str, ptx))}" if ptx else "")
            )
            sources = [ROOT / s for s in ext.sources]
            includes = [ROOT / d for d in ext.include_dirs]
            report = extension.build(kit, sass, ptx, sources, includes, Path(self.build_temp), output, chosen.dist_name)
        except Exception as exc:  # any failure: the forgiving build must still install, CPU-only
            # Expected failures (ToolkitError, SettingError, ArchError, BuildError, ...) carry a fix; others
            # show a traceback.
            expected = hasattr(exc, "fix")
            cause = getattr(exc, "cause", str(exc)) if expected else f"unexpected {type(exc).__name__}: {exc}"
            fix = exc.fix if expected else "see the traceback above"
            details = getattr(exc, "output", "") if expected else traceback.format_exc()
            if details:
                _say(f"{'compiler output' if expected else 'traceback'}:\n{details}")
            if chosen.strict:
                raise SystemExit(
                    f"{PREFIX}: ERROR: cannot build the CUDA extension of {chosen.dist_name}: {cause}\n"
                    f"{PREFIX}: fix: {fix}\n"
                    f"{PREFIX}: a CPU-only build must be asked for explicitly: TINYTENSOR_BUILD_EXTENSION=0"
                ) from None
            _say(f"WARNING: building CPU-only, without the CUDA extension: {cause} (fix: {fix})")
            return {"extension": "skipped", "reason": cause}
        self._extension_output = str(output)
        _say(f"built {ext.name} in {report.seconds:.1f} s: {report.size_bytes / 1e6:.2f} MB ({output.name})")
        _say("toolkit components found in: " + "; ".join(f"{k}: {v}" for k, v in kit.found_in.items()))
        built = {
            "extension": "built",
            "cuda_version": kit.release,
            "sass_archs": sass,
            "ptx_archs": ptx,
            "extension_bytes": report.size_bytes,
        }
        if chosen.libs == "dist":  # what the installed package must load before the extension
            libs = cuda_libs.for_major(chosen.cuda_major)
            built["cuda_libs"] = {
                "distribution": libs.name,
                "cuda_major": libs.cuda_major,
                "module": libs.module,
                "version": libs.version,
                "libraries": [ours for _, _, ours in libs.libraries()],
            }
        return built

    def get_outputs(self):
        outputs = list(getattr(self, "_built_files", []))
        if getattr(self, "_extension_output", None):
            outputs.append(self._extension_output)
        return outputs
