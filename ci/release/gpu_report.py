"""report.md of a GPU check, from its summary: the machine, the build, each step, the tests and the
benchmark table, ready to commit."""

from __future__ import annotations

from ci.release.gpu_outcomes import REQUIRE_GPU_FAILURE
from ci.release.gpu_steps import Checker


def _md_table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("" if c is None else str(c) for c in row) + " |" for row in rows]
    return lines


def _bench_value(key: str, value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if "tflops" in key.lower():
        return f"{value:.1f} TFLOP/s"
    if key.startswith("mlp_step") or key.endswith("_s") or key.endswith("seconds"):
        return f"{value * 1e3:.3f} ms"
    return f"{value:.4g}"


def bench_rows(bench) -> list[dict]:
    rows = bench.get("rows") if isinstance(bench, dict) else None
    return rows if isinstance(rows, list) and all(isinstance(r, dict) for r in rows) else []


def bench_table(bench) -> list[str]:
    """A table from bench_gpu's JSON: its "rows" (one dict per comparison), or {mode: {metric: value}}."""
    rows = bench_rows(bench)
    if rows:
        columns = []
        for row in rows:
            columns += [k for k in row if k not in columns]
        cells = [[f"{r[c]:.3f}" if isinstance(r.get(c), float) else r.get(c, "") for c in columns] for r in rows]
        return _md_table(columns, cells)
    if not isinstance(bench, dict) or not bench or not all(isinstance(v, dict) for v in bench.values()):
        return []
    modes = list(bench)
    metrics = []
    for results in bench.values():
        metrics += [k for k in results if k not in metrics]
    cells = [[m] + [_bench_value(m, bench[mode][m]) if m in bench[mode] else "" for mode in modes] for m in metrics]
    return _md_table(["metric"] + modes, cells)


def render_report(s: dict, check: Checker, args) -> str:
    lines = [f"# GPU check, {s['date'][:10]}", ""]
    command = "python3 -m ci.release.gpu_check " + " ".join(
        (["--build-inplace"] if args.build_inplace else [])
        + ([f"--wheels {args.wheels}"] if args.wheels else [])
        + ([f"--archs {args.archs}"] if args.archs else [])
        + ([f"--foreign-arch {args.foreign_arch}"] if args.foreign_arch != "auto" else [])
        + ([f"--jobs {args.jobs}"] if args.jobs else [])
    )
    lines += [
        f"- verdict: **{s['verdict']}** (exit {s['exit']}), {s['total_seconds']:.0f} s in all (budget {args.budget:.0f} s)"
    ]
    lines += [f"- command: `{command.strip()}`; date {s['date']}"]
    gpu = s["gpu"]
    if gpu.get("present"):
        driver = s.get("nvidia_smi", "").split(", ")
        driver_version = driver[1] if len(driver) > 1 else "unknown (no nvidia-smi)"
        lines.append(
            f"- GPU: {gpu.get('name')} (compute capability {gpu.get('compute_capability')}, "
            f"{gpu.get('memory_gib')} GiB), driver {driver_version}, supports CUDA {gpu.get('driver_supports_cuda')}"
        )
    elif gpu.get("present") is False:
        lines.append(f"- GPU: none usable: {'; '.join(gpu.get('blocking') or ['(no reason given)'])}")
    else:
        lines.append("- GPU: unknown (diagnostics gave no JSON)")
    package = s.get("package") or {}
    if package:
        lines.append(
            f"- {package.get('distribution')} {package.get('version')} on Python {package.get('python')} "
            f"({package.get('platform')})"
        )
    cupy = s.get("cupy") or {}
    if cupy.get("installed"):
        lines.append(
            f"- CuPy {cupy.get('version')} (CUDA runtime {cupy.get('cuda_runtime')}), NVRTC "
            f"{cupy.get('nvrtc') or 'not loadable: ' + str(cupy.get('nvrtc_error'))}"
        )
    ext = s.get("extension") or {}
    info = ext.get("build_info")
    if info:
        ptx = f" + PTX {info['ptx_archs']}" if info.get("ptx_archs") else ""
        lines.append(
            f"- extension: built against CUDA {info.get('cuda_version')} (runtime header "
            f"{info.get('cuda_runtime_version')}, cuBLAS {info.get('cublas_version')}) for sm_{info.get('sass_archs')}{ptx}; "
            f"loaded runtime {ext.get('runtime_version')}, cuBLAS {ext.get('cublas_loaded_version')}; "
            f"nvcc {info.get('nvcc')}; host compiler {info.get('host_compiler')}"
        )
    elif ext:
        lines.append(f"- extension: built {ext.get('built')}, loaded {ext.get('loaded')}: {ext.get('why_not')}")
    config = s.get("build_config")
    if config and config.get("extension") == "built":
        lines.append(f"- build: the extension is {config.get('extension_bytes', 0) / 1e6:.2f} MB")
    elif config:
        lines.append(f"- build: {config.get('extension')}: {config.get('reason')}")
    foreign = s.get("foreign_build")
    if foreign:
        built = (foreign.get("build_config") or {}).get("extension") == "built"
        lines.append(
            f"- foreign-arch copy (tests/library/gpu/test_foreign_arch.py): sm_{foreign['arch']} only, "
            + ("built" if built else "NOT built: see build-foreign.log")
        )

    lines += ["", "## Steps", ""]
    rows = [
        [
            st["step"],
            st.get("exit"),
            st.get("seconds"),
            st.get("limit_s", ""),
            st.get("outcome", ""),
            st.get("note", ""),
        ]
        for st in s["steps"]
    ]
    lines += _md_table(["step", "exit", "seconds", "limit (s)", "outcome", "note"], rows)

    lines += ["", "## Tests", ""]
    junit = s.get("junit")
    if junit and "error" not in junit:
        lines.append(
            f"{junit['passed']} passed, {junit['failed']} failed, {junit['errors']} errors, {junit['skipped']} skipped "
            f"({junit['tests']} tests; TINYTENSOR_REQUIRE_GPU={'1' if s['require_gpu'] else 'unset'}; tests/tooling/build"
            + (" and tests/tooling/release (they need an installed, repaired wheel)" if s["build_inplace"] else "")
            + " left out)."
        )
        problems = junit["problems"]
        absent = [p for p in problems if p.get("class") == "gpu-absent"]
        real = [p for p in problems if p.get("class") != "gpu-absent"]
        if real:
            lines += ["", f"Failures and errors ({len(real)}):", ""]
            lines += [
                f"- `{p['test']}` ({p['kind']}): {p['message'].splitlines()[0][:200] if p['message'] else ''}"
                for p in real[:100]
            ]
            if len(real) > 100:
                lines.append(f"- ... and {len(real) - 100} more (summary.json)")
        if absent:
            files = sorted({p["test"].split("::")[0] for p in absent})
            lines += [
                "",
                f'{len(absent)} failed only because no GPU is usable ("{REQUIRE_GPU_FAILURE}: ..."), in: '
                + ", ".join(f"`{f}`" for f in files),
            ]
        reasons = (s.get("pytest") or {}).get("skip_reasons") or {}
        if reasons:
            lines += ["", "Skipped, by reason:", ""]
            lines += [f"- {n} x {r}" for r, n in sorted(reasons.items(), key=lambda kv: -kv[1])]
    else:
        lines.append(f"no results ({(junit or {}).get('error', 'pytest did not run or wrote no junit xml')})")

    lines += ["", "## Digits example on cuda", ""]
    example = s.get("example")
    step = next((st for st in s["steps"] if st["step"] == "example"), {})
    if example and example.get("accuracy") is not None:
        lines.append(
            f"test accuracy {example['accuracy']:.4f} (needs 0.95), trained in {example.get('train_seconds')} s"
        )
    else:
        tail = check.log_text("example").strip().splitlines()[-1:] or ["(no output)"]
        lines.append(f"{step.get('outcome', 'not run')}: {tail[0][:300]}")

    lines += ["", "## GPU benchmarks", ""]
    table = bench_table(s.get("bench"))
    bench_log = [ln for ln in check.log_text("bench_gpu").splitlines() if ln.strip() and not ln.startswith("==")]
    if table:
        lines += table + [""]
    if bench_log:
        lines += ["```"] + bench_log[-30:] + ["```"]
    elif not table:
        lines.append("not run")
    return "\n".join(lines) + "\n"
