"""The CPU benchmark's contenders do the same work: tinytensor's training step, the hand-written
numpy step and the floor step train the same model to the same parameters, so the floor's time is
a bound on that work and not on less."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from checkout import ROOT


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_cpu", ROOT / "benchmarks" / "bench_cpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_training_steps_reach_the_same_parameters(bench):
    sizes = [16, 32, 32, 5]
    rng = np.random.default_rng(1)
    x = rng.standard_normal((24, sizes[0])).astype(np.float32)
    y = rng.integers(0, sizes[-1], 24).astype(np.int64)
    steps = {
        name: make(sizes, x, y)
        for name, make in [
            ("numpy", bench.numpy_step),
            ("floor", bench.floor_step),
            ("tinytensor", bench.tinytensor_step),
        ]
    }
    start = [p.copy() for p in steps["numpy"].parameters()]
    for step in steps.values():
        for _ in range(5):
            step()
    reference = steps["numpy"].parameters()
    assert not all(np.array_equal(p, q) for p, q in zip(reference, start))  # it did train
    for name in ("floor", "tinytensor"):
        got = steps[name].parameters()
        assert [p.shape for p in got] == [p.shape for p in reference], name
        for p, q in zip(got, reference):
            np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6, err_msg=name)


def test_the_floor_tensor_adds_and_records_its_inputs(bench):
    a = bench.FloorTensor(np.ones((2, 2), np.float32), True)
    b = bench.FloorTensor(np.full((2, 2), 2, np.float32), True)
    c = a + b
    np.testing.assert_array_equal(c.data, np.full((2, 2), 3, np.float32))
    assert c.requires_grad and c.node[1] == (a, b)
