"""Tensor.grad_fn against PyTorch's: node names, next_functions, leaves, freed graphs, memory."""

import gc
import weakref

import numpy as np
import pytest

import tinytensor as tt
from tinytensor.autograd import AccumulateGrad, Node
from tinytensor.nn import functional as F

# Ops whose node PyTorch names after the same op (the same call on both libraries).
SAME_NAME = {
    "add": lambda m, x, y: x + y,
    "sub": lambda m, x, y: x - y,
    "mul": lambda m, x, y: x * y,
    "div": lambda m, x, y: x / y,
    "neg": lambda m, x, y: -x,
    "pow": lambda m, x, y: x**3.0,
    "exp": lambda m, x, y: x.exp(),
    "log": lambda m, x, y: (x * x).log(),
    "sqrt": lambda m, x, y: (x * x).sqrt(),
    "abs": lambda m, x, y: x.abs(),
    "tanh": lambda m, x, y: x.tanh(),
    "sigmoid": lambda m, x, y: x.sigmoid(),
    "relu": lambda m, x, y: x.relu(),
    "sum": lambda m, x, y: x.sum(),
    "mean": lambda m, x, y: x.mean(),
    "softmax": lambda m, x, y: x.softmax(-1),
    "log_softmax": lambda m, x, y: x.log_softmax(-1),
    "permute": lambda m, x, y: x.permute(1, 0),
    "expand": lambda m, x, y: x[:1].expand(3, 4),
    "unsqueeze": lambda m, x, y: x.unsqueeze(0),
    "reshape": lambda m, x, y: x.reshape(4, 3),
    "clone": lambda m, x, y: x.clone(),
    "cat": lambda m, x, y: m.cat([x, y]),
    "where": lambda m, x, y: m.where(x > 0, x, y),
    "to": lambda m, x, y: x.float(),
    "index": lambda m, x, y: x[m.tensor([0, 2])],
}


def _gelu(m, x, y):
    return F.gelu(x) if m is tt else m.nn.functional.gelu(x, approximate="tanh")


def _leaky(m, x, y):
    return F.leaky_relu(x, 0.1) if m is tt else m.nn.functional.leaky_relu(x, 0.1)


SAME_NAME |= {"gelu": _gelu, "leaky_relu": _leaky}


def _pair(m):
    rng = np.random.default_rng(0)
    return (
        m.tensor(rng.standard_normal((3, 4)), requires_grad=True),
        m.tensor(rng.standard_normal((3, 4)), requires_grad=True),
    )


@pytest.mark.parametrize("op", sorted(SAME_NAME))
def test_node_names_match_torch(torch, op):
    fn = SAME_NAME[op]
    ours = fn(tt, *_pair(tt)).grad_fn
    theirs = fn(torch, *_pair(torch)).grad_fn
    assert ours.name() == theirs.name(), op
    assert repr(ours).startswith(f"<{theirs.name()} object at 0x")


def _structure(node):
    """(name, [(child structure, index), ...]) down to the leaves, names as tinytensor spells them."""
    if node is None:
        return None
    name = node.name().removeprefix("torch::autograd::")
    return (name, [(_structure(child), k) for child, k in node.next_functions])


def test_next_functions_match_torch(torch):
    def build(m):
        a = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        b = m.tensor([[0.5, -1.0], [2.0, 1.0]])  # needs no gradient: (None, 0)
        c = m.tensor([1.0, -1.0], requires_grad=True)
        h = (a * b + c).exp()
        return (h - h.mean()).sum(), a, c

    ours, a, c = build(tt)
    theirs, *_ = build(torch)
    assert _structure(ours.grad_fn) == _structure(theirs.grad_fn)
    mul = ours.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0][0].next_functions[0][0]
    assert mul.name() == "MulBackward0"
    (leaf_a, index), (no_grad_b, _) = mul.next_functions
    assert isinstance(leaf_a, AccumulateGrad) and leaf_a.variable is a and index == 0 and no_grad_b is None
    assert leaf_a.next_functions == () and leaf_a.name() == "AccumulateGrad"


def test_leaves_and_untracked_tensors_have_no_grad_fn():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    assert x.grad_fn is None
    assert tt.tensor([1.0]).grad_fn is None
    assert (x * 2.0).detach().grad_fn is None
    with tt.no_grad():
        assert (x * 2.0).grad_fn is None


def test_nodes_compare_by_the_step_they_show():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    z = y + 1.0
    assert y.grad_fn == y.grad_fn and hash(y.grad_fn) == hash(y.grad_fn)
    assert y.grad_fn != z.grad_fn
    assert z.grad_fn.next_functions[0][0] == y.grad_fn
    assert isinstance(y.grad_fn, Node) and (x * 2.0).grad_fn.next_functions == ((AccumulateGrad(x), 0),)


def test_a_freed_node_keeps_its_name_but_not_its_links():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 3.0).exp().sum()
    node = y.grad_fn
    y.backward()
    assert y.grad_fn.name() == node.name() == "SumBackward0"
    with pytest.raises(
        RuntimeError, match="next_functions of SumBackward0: Trying to backward through the graph a second time"
    ):
        _ = y.grad_fn.next_functions
    with pytest.raises(AttributeError, match="'Node' object has no attribute 'saved_tensors'"):
        _ = node.saved_tensors


def test_asking_for_grad_fn_keeps_nothing_alive():
    x = tt.tensor(np.ones(1000), requires_grad=True)
    h = x.exp()
    h_data = weakref.ref(h._data)
    z = (h * 2.0).sum()
    names = [n.name() for n, _ in z.grad_fn.next_functions]
    assert names == ["MulBackward0"]
    del h
    z.backward()
    gc.collect()
    assert h_data() is None  # the graph let the intermediate go, as without grad_fn
