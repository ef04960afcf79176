"""In-place safety like PyTorch: stale saved tensors, optimizer steps, aliasing, copies, casts."""

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn, optim


def test_in_place_change_of_a_saved_input_makes_backward_raise_naming_the_op(device):
    x = tt.tensor([1.0, 2.0], device=device)
    w = tt.tensor([3.0, 4.0], device=device, requires_grad=True)
    y = (x * w).sum()  # mul saves x to compute w's gradient
    x.add_(1.0)
    with pytest.raises(
        RuntimeError, match=r"gradient of mul needs a tensor of shape \(2,\) that was modified in place"
    ):
        y.backward()


def test_in_place_change_of_a_saved_output_makes_backward_raise():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    e = x.exp()  # exp saves its output
    y = e.sum()
    with tt.no_grad():
        e.mul_(2.0)
    with pytest.raises(RuntimeError, match="gradient of exp needs"):
        y.backward()


def test_a_change_through_a_view_is_seen():
    x = tt.tensor([1.0, 2.0, 3.0])
    w = tt.tensor([1.0, 1.0, 1.0], requires_grad=True)
    y = (x * w).sum()
    x[1:].fill_(0.0)  # a view of x: the same storage
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()
    d = x.detach()
    z = (x * w).sum()
    d[0] = 5.0  # detach() shares storage too
    with pytest.raises(RuntimeError, match="modified in place"):
        z.backward()


def test_ops_that_save_nothing_do_not_care():
    x = tt.tensor([1.0, 2.0])
    w = tt.tensor([3.0, 4.0], requires_grad=True)
    y = (x + w).reshape(2, 1).sum()  # add and reshape use no saved values: PyTorch allows this
    x.add_(1.0)
    y.backward()
    np.testing.assert_allclose(w.grad, [1.0, 1.0])


def test_changes_before_the_forward_pass_are_fine():
    x = tt.tensor([1.0, 2.0])
    w = tt.tensor([3.0, 4.0], requires_grad=True)
    x.add_(1.0)
    (x * w).sum().backward()
    np.testing.assert_allclose(w.grad, [2.0, 3.0])


def test_an_optimizer_step_between_forward_and_a_retained_backward_raises():
    tt.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = optim.SGD(model.parameters(), lr=0.1)
    loss = model(tt.randn(4, 3)).sum()
    loss.backward(retain_graph=True)
    opt.step()
    with pytest.raises(RuntimeError, match="gradient of linear needs a tensor of shape .* modified in place"):
        loss.backward()


def test_in_place_on_a_tensor_that_requires_grad_is_refused_while_recording():
    w = tt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="add_: a leaf tensor that requires grad cannot be changed in place"):
        w.add_(1.0)
    y = w * 2
    with pytest.raises(RuntimeError, match="part of a graph"):
        y.zero_()
    with tt.no_grad():
        w.mul_(0.5)  # weight init style: fine
    assert w.tolist() == [0.5, 1.0]


def test_grad_never_aliases_the_callers_buffer():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    seed = np.array([1.0, 1.0], np.float32)
    (x + 0.0).backward(seed)  # add passes its gradient through unchanged
    seed[0] = 99.0
    assert x.grad.tolist() == [1.0, 1.0]
    leaf = tt.tensor([1.0, 2.0], requires_grad=True)
    g = tt.tensor([3.0, 4.0])
    leaf.backward(g)
    g._data[0] = 0.0
    assert leaf.grad.tolist() == [3.0, 4.0]


def test_retained_grad_is_its_own_array():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    y = x + 0.0
    y.retain_grad()
    y.sum().backward()
    x.grad *= 0  # e.g. clip_grad_norm_ scaling .grad in place
    assert y.grad.tolist() == [1.0, 1.0]


def test_tensor_of_a_tensor_copies_and_casts_to_integers_end_the_graph():
    x = tt.tensor([1.5, 2.5], requires_grad=True)
    y = tt.tensor(x)
    y._data[0] = 0.0
    assert x.tolist() == [1.5, 2.5] and not y.requires_grad
    i = (x * 2).long()
    assert i.dtype == np.int64 and not i.requires_grad and i.is_leaf
    assert (x * 2).double().requires_grad  # float to float stays differentiable


def test_ops_with_a_number_follow_the_same_rule():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    y = (x + 1.0).sum()  # adding a number saves nothing: a later change to x is harmless
    w = (2.0**x).sum()  # rpow saves its output and x
    with tt.no_grad():
        x.add_(1.0)
    y.backward()
    np.testing.assert_allclose(x.grad, [1.0, 1.0])
    with pytest.raises(RuntimeError, match="gradient of pow needs"):
        w.backward()
