"""Device rules that one GPU can check: device numbers past the last GPU, mixing with the CPU, and
results that stay on the tensor's own device whatever CuPy's current device is.

The same op table as tests/library/test_ops.py (op_cases) runs here on "cuda:0" inside another
device context; on a machine with one GPU that context is device 0 itself.
"""

import dataclasses
import re

import numpy as np
import pytest
from op_cases import ALL_VARIANTS, VARIANT_IDS, run_ours

import tinytensor as tt
from tinytensor import nn, optim
from tinytensor.nn import functional as F

CREATORS = {
    "randn": lambda dev: tt.randn(2, device=dev),
    "zeros": lambda dev: tt.zeros(2, device=dev),
    "Tensor": lambda dev: tt.tensor([1.0], device=dev),
    "Tensor.to": lambda dev: tt.tensor([1.0]).to(dev),
    "Module.to": lambda dev: nn.Linear(2, 2).to(dev),
}


@pytest.mark.parametrize("create", CREATORS.values(), ids=CREATORS)
def test_a_device_number_past_the_last_gpu_is_named_with_the_count(cp, create):
    count = cp.cuda.runtime.getDeviceCount()
    with pytest.raises(tt.DeviceError) as info:
        create(f"cuda:{count}")
    message = str(info.value)
    assert f"cuda:{count}" in message
    # the number of visible devices, said apart from the device name itself
    assert re.search(rf"\b{count}\b", message.replace(f"cuda:{count}", "")), message


MIXES = {
    "add": lambda g, c: g + c,
    "radd": lambda g, c: c + g,
    "mul": lambda g, c: g * c,
    "matmul": lambda g, c: g @ c,
    "rmatmul": lambda g, c: c @ g,
    "maximum": lambda g, c: tt.maximum(g, c),
    "where": lambda g, c: tt.where(g > 0, g, c),
    "cat": lambda g, c: tt.cat([g, c]),
    "linear": lambda g, c: F.linear(c, g),
    "cross_entropy": lambda g, c: F.cross_entropy(g, tt.tensor(np.zeros(2, np.int64))),
    "inplace add": lambda g, c: g.detach().add_(c),
    "setitem": lambda g, c: g.detach().__setitem__(0, c[0]),
}


@pytest.mark.parametrize("mix", MIXES.values(), ids=MIXES)
def test_mixing_a_gpu_tensor_with_a_cpu_tensor_names_both_devices(gpu, mix):
    values = np.arange(4.0, dtype=np.float32).reshape(2, 2)
    g, c = tt.tensor(values, device="cuda:0", requires_grad=True), tt.tensor(values)
    with pytest.raises(tt.DeviceError, match="cuda:0.*cpu|cpu.*cuda:0"):
        mix(g, c)


def test_module_on_cuda0_keeps_parameters_grads_and_state_there(cp):
    other = cp.cuda.runtime.getDeviceCount() - 1
    tt.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    with cp.cuda.Device(other):  # CuPy's current device must not decide where anything lands
        assert model.to("cuda:0") is model
        opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x = tt.randn(5, 6, device="cuda:0")
        y = tt.tensor(np.array([0, 1, 2, 1, 0]), device="cuda:0")
        for _ in range(2):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
    for name, p in model.named_parameters():
        assert p.device == "cuda:0" and p._data.device.id == 0, name
        assert p.grad.device.id == 0, name
    momentum = [v for s in opt.state.values() for v in s.values() if hasattr(v, "device")]
    assert momentum and all(v.device.id == 0 for v in momentum)


def _on_cuda0(case):
    """``case`` with a check that every input was made on cuda:0 (run_ours checks outputs and grads
    against the inputs' device)."""

    def ours(t, *inputs):
        assert [i.device for i in inputs] == ["cuda:0"] * len(inputs)
        return case.ours(t, *inputs)

    return dataclasses.replace(case, ours=ours)


@pytest.mark.parametrize("case,variant", ALL_VARIANTS, ids=VARIANT_IDS)
def test_ops_on_cuda0_stay_there_inside_another_device_context(cp, case, variant):
    other = cp.cuda.runtime.getDeviceCount() - 1
    with cp.cuda.Device(other):
        out, grads = run_ours(_on_cuda0(case), variant, "cuda:0", np.float32)
    ref_out, ref_grads = run_ours(case, variant, "cpu", np.float32)
    np.testing.assert_allclose(out, ref_out, rtol=2e-4, atol=2e-5, err_msg="forward")
    for k in ref_grads:
        np.testing.assert_allclose(grads[k], ref_grads[k], rtol=2e-4, atol=2e-5, err_msg=f"grad of input {k}")
