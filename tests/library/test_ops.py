"""The op table (op_cases.py), every op with its gradient: against PyTorch on the CPU in float32 and
float64, against central differences in float64, and on every device against the CPU results.

On "strict:device1" (array_api_strict's fake device) any array created on the default device
and mixed with the inputs raises, which is the bug that would break the same op on a GPU.
On "cuda" this is the CuPy (and extension) path, run where a GPU exists.
"""

import numpy as np
import pytest
from op_cases import ALL_VARIANTS, VARIANT_IDS, make_inputs, run_ours, run_torch

import tinytensor as tt

TOLERANCES = {np.float32: dict(rtol=2e-4, atol=2e-5), np.float64: dict(rtol=1e-9, atol=1e-10)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case,variant", ALL_VARIANTS, ids=VARIANT_IDS)
def test_op_matches_torch(torch, case, variant, dtype):
    out, grads = run_ours(case, variant, "cpu", dtype)
    ref_out, ref_grads = run_torch(case, variant, dtype)
    assert out.dtype == ref_out.dtype, f"output dtype {out.dtype}, torch gives {ref_out.dtype}"
    np.testing.assert_allclose(out, ref_out, **TOLERANCES[dtype], err_msg="forward")
    assert grads.keys() == ref_grads.keys()
    for k in grads:
        np.testing.assert_allclose(grads[k], ref_grads[k], **TOLERANCES[dtype], err_msg=f"grad of input {k}")


def _objective(case, arrays, upstream):
    inputs = [tt.tensor(a) for a in arrays]
    with tt.no_grad():
        out = case.ours(tt, *inputs)
    return float(np.sum(out.numpy() * upstream))


@pytest.mark.parametrize("case,variant", ALL_VARIANTS, ids=VARIANT_IDS)
def test_gradient_matches_finite_differences(case, variant):
    specs = case.inputs[variant]
    arrays = make_inputs(specs, 0, np.float64)
    out, grads = run_ours(case, variant, "cpu", np.float64)
    upstream = np.random.default_rng(1).standard_normal(out.shape)
    eps = 1e-6
    for k, spec in enumerate(specs):
        if spec.kind != "float":
            continue
        numeric = np.zeros_like(arrays[k])
        flat = arrays[k].reshape(-1)
        for j in range(flat.size):
            saved = flat[j]
            flat[j] = saved + eps
            up = _objective(case, arrays, upstream)
            flat[j] = saved - eps
            down = _objective(case, arrays, upstream)
            flat[j] = saved
            numeric.reshape(-1)[j] = (up - down) / (2 * eps)
        np.testing.assert_allclose(grads[k], numeric, rtol=1e-5, atol=1e-7, err_msg=f"input {k}")


@pytest.mark.parametrize("case,variant", ALL_VARIANTS, ids=VARIANT_IDS)
def test_op_on_device_matches_cpu(case, variant, other_device):
    device = other_device
    dtype = np.float32
    out, grads = run_ours(case, variant, device, dtype)
    ref_out, ref_grads = run_ours(case, variant, "cpu", dtype)
    np.testing.assert_allclose(out, ref_out, rtol=2e-4, atol=2e-5, err_msg="forward")
    for k in ref_grads:
        np.testing.assert_allclose(grads[k], ref_grads[k], rtol=2e-4, atol=2e-5, err_msg=f"grad of input {k}")
