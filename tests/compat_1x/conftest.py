"""How 1.0.4's own tests run here: every file unchanged, with the warnings 1.x code is meant to
get, and each test whose expectation contradicts PyTorch marked with the reason, as
docs/user/from-1x.md lists it."""

from __future__ import annotations

import warnings

import pytest

# test id -> why the 2.x answer differs (the from-1x page, "1.x's own tests", says the same)
CONTRADICTS_PYTORCH = {
    "test_nn.py::test_linear_has_weight_and_bias_as_params": (
        "Linear's weight is (out_features, in_features) and its bias (out_features,), as PyTorch's; "
        "1.x's were (in, out) and (1, out). 1.x checkpoints convert when they load"
    ),
}

# What 1.x code is told, on purpose: its deprecated names (some imported at the top of a file),
# and backward() on a tensor of several elements without a grad argument (PyTorch raises there).
EXPECTED_WARNINGS = (
    (r".*is a deprecated 1\.x name", DeprecationWarning),
    (r"backward\(\) on a tensor of shape", FutureWarning),
)


def _ours(node) -> bool:
    return node.path.parent.name == "compat_1x"


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    if not (isinstance(collector, pytest.Module) and _ours(collector)):
        return (yield)
    with warnings.catch_warnings():  # inside pytest's own: these filters come first
        for message, category in EXPECTED_WARNINGS:
            warnings.filterwarnings("ignore", message, category)
        return (yield)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if not _ours(item):
            continue
        for message, category in EXPECTED_WARNINGS:
            item.add_marker(pytest.mark.filterwarnings(f"ignore:{message}:{category.__name__}"))
        reason = CONTRADICTS_PYTORCH.get(f"{item.path.name}::{item.name}")
        if reason:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
