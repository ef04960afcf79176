"""What a GPU check's steps came to: "ok", "failed", "timeout", or "gpu-absent" when the only
problem is that no GPU is usable (what a rehearsal on a machine without one expects)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

# How a step's output says the GPU is missing (besides the blocking problems diagnostics names).
GPU_ABSENT_PHRASES = (
    "no usable CUDA device",
    "no usable GPU",
    "no NVIDIA driver",
    "cudaErrorInsufficientDriver",
    "cudaErrorNoDevice",
    "CUDA driver version is insufficient",
    "no CUDA-capable device",
)
REQUIRE_GPU_FAILURE = "TINYTENSOR_REQUIRE_GPU=1 but no usable CUDA device"


def gpu_facts(diagnostics: dict | None) -> dict:
    if not diagnostics:
        return {"present": None, "blocking": []}
    devices = diagnostics.get("devices") or []
    facts = {
        "present": bool(devices),
        "blocking": [p["what"] for p in diagnostics.get("problems", []) if p.get("blocks_gpu")],
        "driver_supports_cuda": (diagnostics.get("driver") or {}).get("cuda_version"),
        "devices": devices,
    }
    if devices:
        facts["name"] = devices[0].get("name")
        facts["compute_capability"] = devices[0].get("compute_capability")
        facts["memory_gib"] = devices[0].get("memory_gib")
    return facts


def says_gpu_absent(text: str, gpu: dict) -> bool:
    return any(p in text for p in GPU_ABSENT_PHRASES) or any(b and b in text for b in gpu.get("blocking", []))


def read_junit(path: Path) -> dict | None:
    if not path.exists():
        return None
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        return {"error": f"unreadable junit xml: {exc}"}
    result = {"tests": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0, "problems": []}
    for case in root.iter("testcase"):
        result["tests"] += 1
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        bad = [(kind, el) for kind in ("failure", "error") for el in case.findall(kind)]
        if bad:
            for kind, el in bad:
                result["failed" if kind == "failure" else "errors"] += 1
                message = (el.get("message") or "").strip()
                text = message + "\n" + (el.text or "")
                result["problems"].append({"test": name, "kind": kind, "message": message[:500], "_text": text})
        elif case.find("skipped") is not None:
            result["skipped"] += 1
        else:
            result["passed"] += 1
    return result


def classify_pytest(step: dict, junit: dict | None, gpu: dict) -> None:
    if step.get("timed_out"):
        step["outcome"] = "timeout"
        return
    if junit is None or "error" in junit:
        step["outcome"] = "failed"
        step["note"] = "no junit xml" if junit is None else junit["error"]
        return
    for problem in junit["problems"]:
        absent = gpu.get("present") is False and REQUIRE_GPU_FAILURE in problem.pop("_text")
        problem["class"] = "gpu-absent" if absent else "real"
    real = [p for p in junit["problems"] if p["class"] == "real"]
    if real:
        step["note"] = f"{len(real)} failed or errored for reasons other than a missing GPU (see Tests)"
    if step["exit"] == 0 and not junit["problems"]:
        step["outcome"] = "ok"
    elif step["exit"] == 1 and junit["problems"] and not real:
        step["outcome"] = "gpu-absent"
    else:
        step["outcome"] = "failed"


def classify_plain(step: dict, gpu: dict, text: str) -> None:
    if step.get("outcome"):
        return
    if step.get("timed_out"):
        step["outcome"] = "timeout"
    elif step["exit"] == 0:
        step["outcome"] = "ok"
    elif gpu.get("present") is False and says_gpu_absent(text, gpu):
        step["outcome"] = "gpu-absent"
    else:
        step["outcome"] = "failed"
