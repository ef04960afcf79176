"""Fixtures of the GPU tests: CuPy (once a device is usable) and a spy on the compiled extension.

Every fixture here goes through ``gpu`` or ``gpu_extension`` (tests/library/conftest.py): without a usable
GPU the tests skip with the reason, or fail under TINYTENSOR_REQUIRE_GPU=1.
"""

from __future__ import annotations

from collections import Counter

import pytest

# The bindings that launch work; each takes the stream handle as its last argument.
LAUNCHES = frozenset(
    {
        "matmul",
        "matmul_batched",
        "bias_act_forward",
        "bias_act_backward",
        "softmax_xent_forward",
        "softmax_xent_backward",
        "im2col",
        "col2im",
        "max_pool2d_forward",
        "max_pool2d_backward",
        "avg_pool2d_forward",
        "avg_pool2d_backward",
        "batch_norm_stats",
    }
)


@pytest.fixture
def cp(gpu):
    import cupy

    return cupy


class ExtensionSpy:
    """Stands in for ``extension.ops``: forwards every call to the compiled module and records it.

    A spy, not a mock: the real kernels run and their results are checked. The bridge looks the
    module global up at call time, so a count of zero means the library went around the extension.
    """

    def __init__(self, real):
        self.real = real
        self.calls = []  # (name, args, kwargs)

    def __getattr__(self, name):
        attr = getattr(self.real, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            self.calls.append((name, args, kwargs))
            return attr(*args, **kwargs)

        return call

    def counts(self) -> Counter:
        return Counter(name for name, _, _ in self.calls)

    def streams(self) -> set:
        """The stream handles that work was launched on."""
        return {kwargs.get("stream", args[-1]) for name, args, kwargs in self.calls if name in LAUNCHES}


@pytest.fixture
def ext_spy(gpu_extension, monkeypatch):
    from tinytensor.cuda import extension

    spy = ExtensionSpy(gpu_extension)
    monkeypatch.setattr(extension, "ops", spy)
    return spy
