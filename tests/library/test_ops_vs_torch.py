"""Every op's forward and gradient against PyTorch on the CPU, in float32 and float64."""

import numpy as np
import pytest
from op_cases import ALL_VARIANTS, VARIANT_IDS, run_ours, run_torch

pytest.importorskip(
    "torch", reason="PyTorch (the test oracle) is installed only where its CPU wheel exists (Python 3.11)"
)

TOLERANCES = {np.float32: dict(rtol=2e-4, atol=2e-5), np.float64: dict(rtol=1e-9, atol=1e-10)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case,variant", ALL_VARIANTS, ids=VARIANT_IDS)
def test_op_matches_torch(case, variant, dtype):
    out, grads = run_ours(case, variant, "cpu", dtype)
    ref_out, ref_grads = run_torch(case, variant, dtype)
    assert out.dtype == ref_out.dtype, f"output dtype {out.dtype}, torch gives {ref_out.dtype}"
    np.testing.assert_allclose(out, ref_out, **TOLERANCES[dtype], err_msg="forward")
    assert grads.keys() == ref_grads.keys()
    for k in grads:
        np.testing.assert_allclose(grads[k], ref_grads[k], **TOLERANCES[dtype], err_msg=f"grad of input {k}")
