"""python -m ci.dev.rehearsal [--out DIR] [--python python3.11] [--no-container] [--worktree]"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from pathlib import Path

from buildsys.release_matrix import CUDA_RELEASES
from ci.dev.package_index import package_index
from ci.release import upload_rules
from ci.release.release_manifest import sha256

from . import contract, install, neighbours, publishing, report, sources, wheels
from .common import NOTES, ROOT, TIMINGS, log, python_tag, remove_scratch, sh, step


def cibuildwheel_tests(output: str) -> dict[str, str]:
    """{wheel file: its test step's pytest summary} from cibuildwheel's log: each CPython's section
    starts with "Building <identifier> wheel" and holds one pytest summary line."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", output)
    found = {}
    sections = re.split(r"^Building (cp\d+)-\S+ wheel$", plain, flags=re.M)
    for tag, text in zip(sections[1::2], sections[2::2]):
        summary = re.findall(r"^=*\s*(\d+ passed.*?) in [\d.]+s", text, flags=re.M)
        found[tag] = f"installed and tested in the build image: {summary[-1]}" if summary else "no test summary"
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="rehearse the release on this machine")
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "release")
    parser.add_argument("--python", default="python3.11", help="interpreter of the fresh installs")
    parser.add_argument("--no-container", action="store_true", help="skip cibuildwheel; run its hooks natively")
    parser.add_argument("--worktree", action="store_true", help="rehearse the working tree instead of HEAD")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    work = out / "work"
    work.mkdir(parents=True)
    started = time.monotonic()
    commit = sh(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture=True).stdout.strip()
    if args.worktree:
        NOTES.append("rehearsed the working tree (--worktree), not a commit")
    elif sh(["git", "-C", str(ROOT), "status", "--porcelain"], capture=True).stdout.strip():
        NOTES.append("the working tree had uncommitted changes: they are not in this rehearsal (it builds HEAD)")

    try:
        built_sources = sources.build_twice(work, out, args.worktree)  # 1
        built = wheels.build(built_sources, work, args.no_container)  # 2
        checked = contract.check(built_sources, built, out, work, args.python)  # 3

        limits = upload_rules.load_limits()
        libs_project = CUDA_RELEASES[0].libs.name
        refusing = {libs_project: limits.of("pypi", libs_project)}  # PyPI's limit until the request is granted
        decoy_file = install.decoy_wheel(work / "decoy")
        with (
            package_index(work, overwrite=False, size_limits=refusing) as index,
            package_index(work, "decoy", (decoy_file,)) as decoy,
        ):
            with step("publish: refused, completed, re-run"):  # 4
                published = publishing.rehearse(
                    index, checked.release_files, work, libs_project, limits.of("rehearsal", libs_project)
                )
            installed = install.install_and_test(args, index, decoy, built_sources, checked, out, work)  # 5
        final = next(w for w in checked.wheels if f"-{python_tag(args.python)}-" in w.name)
        beside = neighbours.rehearse(args.python, final, checked.libs_wheel, built_sources.version, work)  # 6
    finally:
        remove_scratch()
    TIMINGS["total"] = round(time.monotonic() - started, 1)
    facts = {
        "version": built_sources.version,
        "commit": commit,
        "wheel_builder": built.builder,
        "artifacts": [{"file": p.name, "bytes": p.stat().st_size, "sha256": sha256(p)} for p in checked.release_files],
        "sdist_reproducible": True,  # step 1 stops otherwise
        "wheels_reproducible": built.reproducible,
        "cibuildwheel_tests": {
            w.name: s
            for w in checked.wheels
            for t, s in cibuildwheel_tests(built.build_output).items()
            if f"-{t}-" in w.name
        },
        "fidelity": checked.fidelity_rows,
        "compiler_fault": built.fault,
        "gcc14_lane": {**built.gcc14, "wheel": built.gcc14["wheel"].name} if built.gcc14 else None,
        "upload_rules": checked.upload_rules,
        "publishing": published,
        "wheel_checks": checked.checks,
        "libs": built.libs_facts,
        "repair_seconds": built.repairs,
        "python_tags": built.tags,
        "sizes": report.release_sizes(
            list(built_sources.sdists.values()),
            checked.libs_wheel,
            checked.wheels,
            installed["install"],
            installed["upgrade"],
        ),
        "locks": built_sources.locks,
        **installed,
        "neighbours": beside,
        "timings": TIMINGS,
        "notes": NOTES,
    }
    report.write_report(out, facts)
    log(f"report: {out / 'report.md'}")
    print((out / "report.md").read_text())
    failed = [
        "tests" if facts["tests"]["failed"] else "",
        "the CPU wheel's install and suite" if not facts["cpu_install"]["passed"] else "",
        "the wheel contract" if any(c["failures"] for c in checked.checks) else "",
        "the compiler fault test" if built.fault and not built.fault["passed"] else "",
        "the GCC 14 lane's wheel contract" if built.gcc14 and built.gcc14["contract"]["failures"] else "",
        "CuPy's kernel headers in the fresh install" if facts["cupy_headers"]["problems"] else "",
        "living beside PyTorch and CuPy" if not neighbours.passed(beside) else "",
        "the fidelity table (an unexplained difference)"
        if any(r["why"] == "UNEXPLAINED" for r in checked.fidelity_rows)
        else "",
        *[f"the run under {name}" for name, r in facts["allocators"].items() if not r["passed"]],
    ]
    failed = [f for f in failed if f]
    if failed:
        log(f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
