"""Numerical gradient checks in float64: central differences against the analytic gradients."""

import numpy as np
import pytest
from op_cases import ALL_VARIANTS, VARIANT_IDS, make_inputs, run_ours

import tinytensor as tt


def _objective(case, variant, arrays, upstream):
    case.inputs[variant]
    inputs = [tt.Tensor(a) for a in arrays]
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
            up = _objective(case, variant, arrays, upstream)
            flat[j] = saved - eps
            down = _objective(case, variant, arrays, upstream)
            flat[j] = saved
            numeric.reshape(-1)[j] = (up - down) / (2 * eps)
        np.testing.assert_allclose(grads[k], numeric, rtol=1e-5, atol=1e-7, err_msg=f"input {k}")
