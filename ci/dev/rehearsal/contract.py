"""Step 3: the wheel contract (ci/release/check_wheel.py) on the library wheel, every per-Python
wheel (the GCC 14 lane's too) and the CPU wheel, each against its sdist; their names against the
release's table (ci/release/release_manifest.py), the contract's own tests on broken copies, and
PyPI's upload rules on every file (ci/release/upload_rules.py)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from buildsys.release_matrix import CUDA_RELEASES, PYTHON_TAGS
from ci.project_paths import link_or_copy
from ci.release import release_manifest

from . import fidelity
from .common import LOCKS, ROOT, scratch, sh, step
from .sources import Sources
from .wheels import Built


@dataclass
class Checked:
    libs_wheel: Path  # the files as released, in the rehearsal's output folder
    wheels: list[Path]
    cpu_wheel: Path
    release_files: list[Path]  # every file the release publishes (this architecture's)
    checks: list[dict]
    fidelity_rows: list[dict]
    upload_rules: dict


def check(sources: Sources, built: Built, out: Path, work: Path, python: str) -> Checked:
    finals = []
    for wheel in [built.libs_wheel, *built.wheels]:
        finals.append(out / wheel.name)
        link_or_copy(wheel, finals[-1])
    libs_wheel, wheels = finals[0], finals[1:]
    with step("wheel check"):
        # its tools from the hash lock, as cibuildwheel's before-test installs them
        checker = scratch(work / "checker-venv")
        sh(["uv", "venv", "-q", "--python", python, str(checker)])
        checker_py = str(checker / "bin" / "python")
        sh(
            ["uv", "pip", "install", "-q", "--python", checker_py, "--require-hashes", "-r"]
            + [str(sources.source / LOCKS / "wheel-test.txt")]
        )
        report = work / "wheel-check.json"
        files = [*finals, sources.cpu_wheel, *sources.sdists.values()]  # each wheel also against its sdist
        sh([checker_py, "-m", "ci.release.check_wheel", "--json", str(report), *map(str, files)], cwd=ROOT)
        checks = json.loads(report.read_text())
        # ... and their names are the ones release.yml's jobs must record (ci/release/release_manifest.py)
        table = release_manifest.expected_by_job(sources.version)
        jobs = {
            "cuda-libs-x86_64": [libs_wheel],
            "wheels-x86_64": wheels,
            "sdist": [*sources.sdists.values(), sources.cpu_wheel],
        }
        for job, produced in jobs.items():
            names = sorted(f.name for f in produced)
            if not release_manifest.exactly(names, table[job]):
                raise SystemExit(f"{names} are not the files the release table expects of {job}: {table[job]}")
        # ... and the check itself fails on broken copies of these wheels
        final = next(w for w in wheels if f"-{PYTHON_TAGS[0]}-" in w.name)
        sh(
            [checker_py, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
            + [str(ROOT / "tests" / "tooling" / "release" / "test_wheel_contract.py")],
            env=dict(os.environ, TT_REPAIRED_WHEEL=str(final), TT_LIBS_WHEEL=str(libs_wheel)),
            cwd=work,
        )
        if built.gcc14:  # the GCC 14 lane's wheel, under the same contract (and against the same sdist)
            lane_report = work / "wheel-check-gcc14.json"
            cu12_sdist = sources.sdists[release_manifest.normalized(CUDA_RELEASES[0].dist)]
            lane = [str(built.gcc14["wheel"]), str(cu12_sdist)]
            lane_plat = ["--plat", built.gcc14["plat"]]
            sh(
                [checker_py, "-m", "ci.release.check_wheel", *lane_plat, "--json", str(lane_report), *lane],
                cwd=ROOT,
                check=False,
            )
            built.gcc14["contract"] = json.loads(lane_report.read_text())[0]
    sym_tags = [c["auditwheel"].get("sym_tag", "?") for c in checks if "auditwheel" in c]
    fidelity_rows = fidelity.table(built.standin, built.build_output, PYTHON_TAGS, sym_tags, built.gcc14)
    release_files = [*sources.sdists.values(), sources.cpu_wheel, *finals]
    with step("PyPI's upload rules, every file"):
        rules = {}
        for index_name in ("rehearsal", "testpypi", "pypi"):
            report = work / f"upload-rules-{index_name}.json"
            proc = sh(
                [sys.executable, "-m", "ci.release.upload_rules", "--index", index_name, "--json", str(report)]
                + [str(f) for f in release_files],
                check=False,
                cwd=ROOT,
            )
            rules[index_name] = {"exit_status": proc.returncode, **json.loads(report.read_text())}
        if rules["rehearsal"]["exit_status"] != 0:
            raise SystemExit("the release's files break PyPI's upload rules (above): nothing would be published")
    return Checked(libs_wheel, wheels, sources.cpu_wheel, release_files, checks, fidelity_rows, rules)
