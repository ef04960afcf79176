"""The op suite on every device against the CPU results: values, gradients and placement.

On "strict:device1" (array_api_strict's fake device) any array created on the default device
and mixed with the inputs raises, which is the bug that would break the same op on a GPU.
On "cuda" this is the CuPy (and extension) path, run where a GPU exists.
"""

import numpy as np
import pytest
from op_cases import ALL_VARIANTS, VARIANT_IDS, run_ours


@pytest.mark.parametrize("case,variant", ALL_VARIANTS, ids=VARIANT_IDS)
def test_op_on_device_matches_cpu(case, variant, other_device):
    device = other_device
    dtype = np.float32
    out, grads = run_ours(case, variant, device, dtype)
    ref_out, ref_grads = run_ours(case, variant, "cpu", dtype)
    np.testing.assert_allclose(out, ref_out, rtol=2e-4, atol=2e-5, err_msg="forward")
    for k in ref_grads:
        np.testing.assert_allclose(grads[k], ref_grads[k], rtol=2e-4, atol=2e-5, err_msg=f"grad of input {k}")
