"""``tt.device`` against ``torch.device`` (and where it differs: it is a str), ``Tensor.device``,
devices accepted wherever a device string is, ``tt.cuda``'s functions, and that ``import tinytensor``
imports no CuPy and loads no CUDA library."""

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn
from tinytensor.cuda.status import cuda_status

PACKAGE_PARENT = str(Path(tt.__file__).resolve().parent.parent)

SPECS = [("cpu",), ("cuda",), ("cuda:0",), ("cuda:1",), ("cuda", 0), ("cuda", 3)]


@pytest.mark.parametrize("args", SPECS, ids=[repr(a) for a in SPECS])
def test_device_matches_torch_device(torch, args):
    ours, theirs = tt.device(*args), torch.device(*args)
    assert (str(ours), repr(ours), ours.type, ours.index) == (str(theirs), repr(theirs), theirs.type, theirs.index)
    assert tt.device(ours) is ours and tt.device(str(ours)) == ours
    assert pickle.loads(pickle.dumps(ours)) == ours and type(pickle.loads(pickle.dumps(ours))) is tt.device


def test_device_equality_and_hashing():
    assert tt.device("cuda", 0) == tt.device("cuda:0") and hash(tt.device("cuda", 0)) == hash(tt.device("cuda:0"))
    assert tt.device("cuda") != tt.device("cuda:0")  # "cuda" is the current device, as in PyTorch
    # unlike torch.device, it equals and hashes like its string, so code comparing with "cpu" keeps working
    assert tt.device("cpu") == "cpu" and {"cpu": 1}[tt.device("cpu")] == 1 and isinstance(tt.device("cpu"), str)
    assert f"{tt.device('cuda', 1)}" == "cuda:1"
    strict = tt.device("strict:device1")
    assert (
        strict.type == "strict"
        and strict.index == "device1"
        and repr(strict) == "device(type='strict', index='device1')"
    )


def test_tensor_device_is_a_device(device):
    x = tt.zeros(2, device=device)
    assert type(x.device) is tt.device and x.device == device and x.device.type == tt.device(device).type
    assert tt.zeros(1).device == "cpu" and tt.zeros(1).device.index is None
    assert repr(tt.zeros(1, device=device)).endswith(")") and "device(type" not in repr(tt.zeros(1, device=device))


def test_a_device_is_accepted_wherever_a_device_string_is(other_device):
    dev = tt.device(other_device)
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    moved = x.to(dev)
    assert moved.device == dev and moved.to(tt.device("cpu")).device == "cpu"
    assert x.to(dev, "float64").dtype is not None and x.to(device=dev).device == dev
    for made in (
        tt.zeros(2, device=dev),
        tt.ones(2, device=dev),
        tt.full((2,), 3.0, device=dev),
        tt.tensor([1.0], device=dev),
        tt.tensor([1.0], device=dev),
        tt.arange(3, device=dev),
        tt.randn(2, device=dev),
        tt.linspace(0, 1, 3, device=dev),
        tt.eye(2, device=dev),
        tt.zeros_like(x, device=dev),
    ):
        assert made.device == dev
    model = nn.Linear(2, 3).to(dev)
    assert all(p.device == dev for p in model.parameters())
    model(tt.ones(1, 2, device=dev)).sum().backward()
    assert all(p.grad.device == dev for p in model.parameters())
    loaded = tt.load(_saved(tt.ones(2)), map_location=dev)
    assert loaded.device == dev


def _saved(obj):
    import tempfile

    path = Path(tempfile.mkdtemp()) / "t.tt"
    tt.save(obj, path)
    return path


BAD = [
    ("unknown", lambda: tt.device("tpu"), tt.DeviceError, r"unknown device 'tpu': expected 'cpu', 'cuda', 'cuda:N'"),
    ("empty-index", lambda: tt.device("cuda:"), tt.DeviceError, r"unknown device 'cuda:'"),
    ("index-twice", lambda: tt.device("cuda:0", 1), tt.DeviceError, r"must not include an index because index=1"),
    ("cpu-index", lambda: tt.device("cpu", 0), tt.DeviceError, r"only 'cuda' takes an index"),
    ("negative-index", lambda: tt.device("cuda", -1), ValueError, r"index must be >= 0, got -1"),
    ("str-index", lambda: tt.device("cuda", "0"), TypeError, r"index must be an int, got str"),
    ("bool-index", lambda: tt.device("cuda", True), TypeError, r"index must be an int, got True"),
    ("int-type", lambda: tt.device(0), tt.DeviceError, r"a device must be a string such as 'cpu' or 'cuda:0', got 0"),
    ("to-unknown", lambda: tt.zeros(1).to("tpu"), tt.DeviceError, r"unknown device 'tpu'"),
]


@pytest.mark.parametrize(("name", "call", "exc", "message"), BAD, ids=[row[0] for row in BAD])
def test_bad_devices_are_named(name, call, exc, message):
    with pytest.raises(exc, match=message):
        call()


# ---------------------------------------------------------------------------- tt.cuda
def test_cuda_functions_read_the_one_probe():
    status = cuda_status()
    usable = status.device_usable and status.device_count > 0
    assert tt.cuda.is_available() is usable
    assert tt.cuda.device_count() == (status.device_count if usable else 0)
    if not usable:
        with pytest.raises(tt.CudaUnavailableError):
            tt.zeros(1, device="cuda")


def test_cuda_manual_seed_seeds_the_one_stream():
    tt.cuda.manual_seed(5)
    first = tt.randn(4).numpy()
    tt.cuda.manual_seed_all(5)
    np.testing.assert_array_equal(tt.randn(4).numpy(), first)
    tt.manual_seed(5)
    np.testing.assert_array_equal(tt.randn(4).numpy(), first)


def test_importing_tinytensor_imports_no_cupy_and_loads_no_cuda_library():
    # A finder that records every attempt to import CuPy or the extension (whether or not they are
    # installed), then the shared libraries the process has mapped.
    code = """
        import re, sys
        tried = []
        class Watch:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "cupy" or name in ("tinytensor.cuda_ops", "tinytensor.cuda.extension"):
                    tried.append(name)
                return None
        sys.meta_path.insert(0, Watch())
        import tinytensor as tt
        tt.cuda, tt.device("cuda:0"), tt.FloatTensor, tt.Generator(device="cuda"), tt.zeros(2).device
        maps = open("/proc/self/maps").read() if sys.platform == "linux" else ""
        libraries = sorted(set(re.findall(r"lib(?:cuda|cudart|cublas|cublasLt|nvrtc)[^/\\s]*\\.so[.0-9]*", maps)))
        print(tried, libraries)
    """
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, env=env, check=True
    )
    assert proc.stdout.strip() == "[] []"
