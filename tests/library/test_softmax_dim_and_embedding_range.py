"""softmax's axis argument as PyTorch takes it (F.softmax's implicit axis with its warning; the
method and tt.softmax need dim), embedding's out-of-range indices (-1 included) as errors, and
PyTorch's keyword names for F.embedding and F.linear."""

import warnings

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn
from tinytensor.nn import functional as F


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("ndim", [0, 1, 2, 3, 4])
def test_functional_without_dim_picks_torchs_axis_and_warns_at_the_caller(torch, name, ndim):
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)[:ndim])
    with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name} has been deprecated") as record:
        out = getattr(F, name)(tt.tensor(x))
    assert [w.filename for w in record] == [__file__]  # the warning names this line
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ref = getattr(torch.nn.functional, name)(torch.tensor(x))
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12)


def test_functional_and_module_share_one_rule():
    x = tt.randn(2, 3, 4)
    with pytest.warns(UserWarning) as record:
        a = F.softmax(x)
        b = nn.Softmax()(x)
    assert str(record[0].message) == str(record[1].message)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_functional_with_dim_does_not_warn():
    x = tt.randn(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(F.softmax(x, 1).numpy().sum(axis=1), 1.0, rtol=1e-6)
        np.testing.assert_allclose(F.log_softmax(x, axis=0).exp().numpy().sum(axis=0), 1.0, rtol=1e-6)
        assert F.softmax(np.zeros(2), dim=0).tolist() == [0.5, 0.5]  # arrays are accepted


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_method_and_tt_need_dim_as_in_torch(torch, name):
    for module, x in ((tt, tt.randn(2, 3)), (torch, torch.randn(2, 3))):
        with pytest.raises(
            TypeError, match=r"missing 1 required positional argument.*dim|missing 1 required argument: 'dim'"
        ):
            getattr(x, name)()
        with pytest.raises(
            TypeError, match=r"missing 1 required positional argument.*dim|missing 1 required argument: 'dim'"
        ):
            getattr(module, name)(x)


def test_dtype_argument_casts_first(torch):
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    mine = tt.tensor(x, requires_grad=True)
    out = F.log_softmax(mine, dim=1, dtype="float64")
    ref = torch.nn.functional.log_softmax(torch.tensor(x), dim=1, dtype=torch.float64)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12)
    out.sum().backward()
    assert mine.grad.dtype == np.float32


@pytest.mark.parametrize("bad", [-1, 4, 100, -5])
def test_embedding_index_out_of_range_is_an_index_error(device, bad):
    weight = tt.randn(4, 2, device=device)
    indices = tt.tensor([[0, 3], [bad, 1]], device=device)
    with pytest.raises(
        IndexError, match=rf"index out of range in self: embedding\(\) got index {bad} for a weight of 4 rows"
    ):
        F.embedding(indices, weight)
    with pytest.raises(IndexError, match=r"indices must be in 0\.\.3"):
        nn.Embedding(4, 2).to(device)(indices)


def test_torch_refuses_the_same_indices(torch):
    for bad in (-1, 4):
        with pytest.raises(IndexError, match="index out of range in self"):
            torch.nn.functional.embedding(torch.tensor([bad]), torch.randn(4, 2))


def test_embedding_in_range_and_empty_indices(device):
    weight = tt.randn(4, 2, device=device)
    out = F.embedding(tt.tensor([3, 0, 3], device=device), weight)
    np.testing.assert_array_equal(out.numpy(), weight.numpy()[[3, 0, 3]])
    assert F.embedding(tt.zeros(0, dtype="int64", device=device), weight).shape == (0, 2)


def test_embedding_and_linear_take_pytorchs_keyword_names(torch):
    weight = np.arange(8.0).reshape(4, 2)
    rows = F.embedding(input=tt.tensor([3, 0]), weight=tt.tensor(weight))
    ref = torch.nn.functional.embedding(input=torch.tensor([3, 0]), weight=torch.tensor(weight))
    np.testing.assert_array_equal(rows.numpy(), ref.numpy())
    x, bias = np.ones((3, 2)), np.array([0.5, -1.0, 2.0, 0.0])
    out = F.linear(input=tt.tensor(x), weight=tt.tensor(weight), bias=tt.tensor(bias))
    ref = torch.nn.functional.linear(input=torch.tensor(x), weight=torch.tensor(weight), bias=torch.tensor(bias))
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12)
