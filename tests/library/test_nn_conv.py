"""The convolutional layers against torch.nn: convolutions, pooling, resampling, padding,
BatchNorm2d, GroupNorm, Dropout2d, Unflatten and ResidualBlock. Each module and its PyTorch twin
get the same weights; outputs and every gradient are compared in float64, as are reprs, state
dict layouts, initialization and errors. LazyConv2d, 1.x's GlobalAvgPool2d and the 1.x entries of
Conv2d and BatchNorm2d too. The ops themselves are the op table's (tests/library/op_cases.py)."""

import math

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn

TOL = dict(rtol=1e-10, atol=1e-12)


def _twins(torch, ours, theirs):
    """``ours`` with ``theirs``'s parameters and buffers, both float64."""
    theirs = theirs.double()
    ours = ours.double()
    rng = np.random.default_rng(7)
    with torch.no_grad():  # non-trivial values everywhere (BatchNorm's ones and zeros included)
        for p in theirs.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape))))
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _compare(torch, ours, theirs, x, *args, **kwargs):
    """One forward and backward through both; compares the output, the input's gradient and
    every parameter's."""
    mine = tt.tensor(x, requires_grad=True)
    ref = torch.tensor(x, requires_grad=True)
    out, ref_out = ours(mine, *args, **kwargs), theirs(ref, *args, **kwargs)
    assert out.shape == tuple(ref_out.shape)
    np.testing.assert_allclose(out.numpy(), ref_out.detach().numpy(), **TOL, err_msg="forward")
    upstream = np.random.default_rng(3).standard_normal(out.shape)
    out.backward(tt.tensor(upstream))
    ref_out.backward(torch.tensor(upstream))
    np.testing.assert_allclose(mine.grad.numpy(), ref.grad.numpy(), **TOL, err_msg="grad of input")
    ref_params = dict(theirs.named_parameters())
    assert [name for name, _ in ours.named_parameters()] == list(ref_params)
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), ref_params[name].grad.numpy(), **TOL, err_msg=f"grad of {name}")
    return out


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# ---------------------------------------------------------------------------- convolutions
CONV1D = [
    dict(),
    dict(stride=2, padding=1),
    dict(padding="same", dilation=2),
    dict(padding="valid", groups=2, bias=False),
    dict(groups=4),  # depthwise
]


@pytest.mark.parametrize("kwargs", CONV1D, ids=str)
def test_conv1d_matches_torch(torch, kwargs):
    ours, theirs = _twins(torch, nn.Conv1d(4, 8, 3, **kwargs), torch.nn.Conv1d(4, 8, 3, **kwargs))
    _compare(torch, ours, theirs, _x(2, 4, 9))


CONV2D = [
    dict(kernel_size=3),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0)),
    dict(kernel_size=3, padding="same", dilation=2),
    dict(kernel_size=2, padding="same"),  # an even kernel: PyTorch pads one more on the right/bottom
    dict(kernel_size=3, padding="valid", bias=False),
    dict(kernel_size=3, groups=2, stride=2, padding=2),
    dict(kernel_size=3, groups=4, padding=1),  # depthwise
]


@pytest.mark.parametrize("kwargs", CONV2D, ids=str)
@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths:UserWarning")  # PyTorch's
def test_conv2d_matches_torch(torch, kwargs):
    ours, theirs = _twins(torch, nn.Conv2d(4, 8, **kwargs), torch.nn.Conv2d(4, 8, **kwargs))
    _compare(torch, ours, theirs, _x(2, 4, 7, 6))


def test_conv2d_takes_unbatched_input(torch):
    ours, theirs = _twins(torch, nn.Conv2d(2, 3, 3, padding=1), torch.nn.Conv2d(2, 3, 3, padding=1))
    _compare(torch, ours, theirs, _x(2, 5, 5))


CONV_T = [
    dict(),
    dict(stride=2, padding=1, output_padding=1),
    dict(stride=(2, 3), groups=2, bias=False),
    dict(dilation=2, padding=1),
]


@pytest.mark.parametrize("kwargs", CONV_T, ids=str)
def test_conv_transpose2d_matches_torch(torch, kwargs):
    ours, theirs = _twins(torch, nn.ConvTranspose2d(4, 6, 3, **kwargs), torch.nn.ConvTranspose2d(4, 6, 3, **kwargs))
    _compare(torch, ours, theirs, _x(2, 4, 4, 5))


@pytest.mark.parametrize("output_size", [(9, 9), (10, 10), [1, 6, 10, 9]])
def test_conv_transpose2d_output_size_picks_the_output_padding(torch, output_size):
    ours, theirs = _twins(
        torch, nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1), torch.nn.ConvTranspose2d(4, 6, 3, 2, 1)
    )
    out = _compare(torch, ours, theirs, _x(1, 4, 5, 5), output_size=output_size)
    assert out.shape[-2:] == tuple(output_size[-2:])


def test_conv_transpose2d_output_size_errors_match_torch(torch):
    ours, theirs = nn.ConvTranspose2d(2, 4, 3, stride=2), torch.nn.ConvTranspose2d(2, 4, 3, stride=2)
    x = np.zeros((1, 2, 5, 5), dtype=np.float32)
    for size, match in (
        ([10, 10], r"requested an output size of \[10, 10\], but valid sizes range from \[11, 11\] to \[12, 12\]"),
        ([1, 13, 13], r"for 4D input, output_size must have 2 or 4 elements \(got 3\)"),
    ):
        with pytest.raises(ValueError, match=match):
            ours(tt.tensor(x), output_size=size)
        with pytest.raises(ValueError, match=match):
            theirs(torch.tensor(x), output_size=size)


LAYERS = [
    ("Conv1d", (2, 4, 3), {}),
    ("Conv1d", (2, 4, 3), dict(padding="valid")),
    ("Conv2d", (2, 4, 3), {}),
    ("Conv2d", (2, 4, (3, 2)), dict(stride=2, padding=1, dilation=2, groups=2, bias=False)),
    ("Conv2d", (2, 4, 3), dict(padding="same")),
    ("ConvTranspose2d", (2, 4, 3), dict(stride=2, padding=1, output_padding=1, groups=2)),
    ("ConvTranspose2d", (2, 4, 3), dict(dilation=2, bias=False)),
    ("LazyConv2d", (4, 3), {}),
    ("MaxPool1d", (3,), {}),
    ("MaxPool2d", (2,), {}),
    ("MaxPool2d", (3, 2, 1, 2, True, True), {}),
    ("AvgPool2d", (2,), {}),
    ("AvgPool2d", ((3, 2), 2, 1, True, False, 4), {}),
    ("AdaptiveAvgPool2d", ((2, None),), {}),
    ("AdaptiveMaxPool2d", (3,), dict(return_indices=True)),
    ("Upsample", (), dict(scale_factor=2)),
    ("Upsample", (), dict(scale_factor=(2, 3))),
    ("Upsample", (), dict(size=(3, 4), mode="bilinear", align_corners=True)),
    ("ZeroPad2d", (1,), {}),
    ("ZeroPad2d", ((1, 2, 3, 4),), {}),
    ("Dropout2d", (), {}),
    ("Dropout2d", (0.2, True), {}),
    ("Unflatten", (1, (2, 3)), {}),
    ("Unflatten", (-1, [2, -1]), {}),
    ("BatchNorm2d", (3,), {}),
    ("BatchNorm2d", (3,), dict(momentum=None, affine=False, track_running_stats=False)),
    ("GroupNorm", (2, 4), {}),
    ("GroupNorm", (1, 3), dict(eps=1e-3, affine=False)),
]


@pytest.mark.parametrize("name,args,kwargs", LAYERS, ids=[f"{n}{a}{k}" for n, a, k in LAYERS])
def test_repr_and_state_dict_layout_match_torch(torch, name, args, kwargs):
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    if name == "LazyConv2d":  # PyTorch's state dict holds uninitialized parameters
        return
    mine, ref = ours.state_dict(), theirs.state_dict()
    assert list(mine) == list(ref)
    for key in ref:
        assert mine[key].shape == tuple(ref[key].shape), key


@pytest.mark.parametrize(
    "layer,fan_in",
    [
        (lambda: nn.Conv2d(6, 16, 5), 6 * 25),
        (lambda: nn.Conv2d(8, 16, 3, groups=4), 2 * 9),
        (lambda: nn.Conv1d(4, 32, 7), 4 * 7),
        (lambda: nn.ConvTranspose2d(16, 12, 3, groups=2), 6 * 9),  # the weight is (in, out / groups, ...)
    ],
)
def test_parameters_start_as_pytorch_initializes_them(layer, fan_in):
    # kaiming_uniform_(a=sqrt(5)) and the bias: both U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    tt.manual_seed(0)
    conv = layer()
    bound = 1 / math.sqrt(fan_in)
    for p in (conv.weight, conv.bias):
        values = p.numpy()
        assert values.dtype == np.float32 and 0.5 * bound < np.abs(values).max() <= bound
    w = conv.weight.numpy()  # hundreds of values: their mean and spread are the uniform's
    assert abs(w.mean()) < 0.1 * bound and abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound


def test_device_and_dtype_arguments_place_the_parameters():
    conv = nn.Conv2d(2, 3, 3, device="strict:device1", dtype="float64")
    for p in (conv.weight, conv.bias):
        assert p.device == "strict:device1" and p.numpy().dtype == np.float64


# ---------------------------------------------------------------------------- LazyConv2d
def test_lazy_conv2d_takes_in_channels_from_its_first_input_and_becomes_a_conv2d(torch):
    tt.manual_seed(0)
    lazy = nn.LazyConv2d(4, 3, padding=1, groups=2)
    weight, bias = lazy.weight, lazy.bias
    assert lazy.has_uninitialized_params() and lazy.in_channels == 0 and weight.shape == (4, 0, 3, 3)
    optimizer = tt.optim.SGD(lazy.parameters(), lr=0.1)  # made before the first call, as d2l's may be
    out = lazy(tt.randn(2, 6, 5, 5))
    assert out.shape == (2, 4, 5, 5)
    assert type(lazy) is nn.Conv2d and lazy.in_channels == 6
    assert lazy.weight is weight and weight.shape == (4, 3, 3, 3) and lazy.bias is bias
    assert repr(lazy) == repr(torch.nn.Conv2d(6, 4, 3, padding=1, groups=2))
    bound = 1 / math.sqrt(3 * 9)
    assert 0 < np.abs(weight.numpy()).max() <= bound and np.abs(bias.numpy()).max() <= bound
    before = weight.numpy().copy()
    out.sum().backward()
    optimizer.step()
    assert not np.allclose(weight.numpy(), before)  # the optimizer updated the resized parameter
    # then the same layer as a Conv2d with those weights
    lazy.zero_grad()
    ours, theirs = _twins(torch, lazy, torch.nn.Conv2d(6, 4, 3, padding=1, groups=2))
    _compare(torch, ours, theirs, _x(1, 6, 4, 4))


def test_lazy_conv2d_reads_unbatched_input_and_keeps_its_device_and_dtype():
    lazy = nn.LazyConv2d(2, 1, dtype="float64")
    assert lazy(tt.randn(3, 4, 4, dtype="float64")).shape == (2, 4, 4)
    assert lazy.weight.shape == (2, 3, 1, 1) and lazy.weight.dtype == np.float64


def test_lazy_conv2d_errors():
    with pytest.raises(ValueError, match=r"expected 3D \(unbatched\) or 4D \(batched\) input"):
        nn.LazyConv2d(4, 3)(tt.zeros(2, 3))
    with pytest.raises(ValueError, match=r"in_channels must be divisible by groups"):
        nn.LazyConv2d(4, 3, groups=2)(tt.zeros(2, 3, 5, 5))


# ---------------------------------------------------------------------------- pooling and resampling
POOLS = [
    ("MaxPool1d", (3,), {}, (2, 3, 10)),
    ("MaxPool1d", (3, 2, 1, 2), dict(ceil_mode=True), (2, 3, 10)),
    ("MaxPool2d", (2,), {}, (2, 3, 6, 6)),
    ("MaxPool2d", ((3, 2), (2, 1), 1, 1), dict(ceil_mode=True), (2, 3, 7, 6)),
    ("MaxPool2d", (3, 2, 1, 2), {}, (1, 2, 9, 8)),
    ("AvgPool2d", (2,), {}, (2, 3, 6, 6)),
    ("AvgPool2d", (3, 2, 1), dict(ceil_mode=True, count_include_pad=False), (2, 3, 7, 6)),
    ("AvgPool2d", (3, 2, 1), dict(divisor_override=4), (1, 2, 5, 5)),
    ("AdaptiveAvgPool2d", ((2, 3),), {}, (2, 3, 7, 5)),
    ("AdaptiveAvgPool2d", ((None, 2),), {}, (2, 3, 4, 5)),
    ("AdaptiveMaxPool2d", (3,), {}, (2, 3, 7, 5)),
    ("Upsample", (), dict(scale_factor=2), (2, 3, 3, 4)),
    ("Upsample", (), dict(size=(5, 7)), (2, 3, 3, 4)),
    ("Upsample", (), dict(scale_factor=2, mode="bilinear"), (2, 3, 3, 4)),
    ("Upsample", (), dict(size=(5, 7), mode="bilinear", align_corners=True), (2, 3, 3, 4)),
    ("ZeroPad2d", (1,), {}, (2, 3, 3, 4)),
    ("ZeroPad2d", ((1, 0, 2, -1),), {}, (2, 3, 3, 4)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", POOLS, ids=[f"{n}{a}{k}" for n, a, k, _ in POOLS])
def test_pooling_and_resampling_match_torch(torch, name, args, kwargs, shape):
    _compare(torch, getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs), _x(*shape))


@pytest.mark.parametrize("name,args", [("MaxPool2d", (2,)), ("AdaptiveMaxPool2d", ((2, 3),)), ("MaxPool1d", (2,))])
def test_max_pooling_returns_pytorchs_indices(torch, name, args):
    x = _x(2, 3, 6, 6) if name != "MaxPool1d" else _x(2, 3, 7)
    out, idx = getattr(nn, name)(*args, return_indices=True)(tt.tensor(x))
    ref, ref_idx = getattr(torch.nn, name)(*args, return_indices=True)(torch.tensor(x))
    np.testing.assert_allclose(out.numpy(), ref.numpy(), **TOL)
    np.testing.assert_array_equal(idx.numpy(), ref_idx.numpy())


def test_global_avg_pool2d_keeps_1x_shape(torch):
    ours, theirs = nn.GlobalAvgPool2d(), torch.nn.AdaptiveAvgPool2d(1)
    out = _compare(torch, ours, theirs, _x(2, 3, 4, 5))
    assert out.shape == (2, 3, 1, 1)  # 1.x's: Flatten() follows it in 1.x's ResNet
    with pytest.raises(ValueError, match=r"GlobalAvgPool2d: expected 4D input"):
        ours(tt.zeros(3, 4, 5))


def test_maxpool2d_keeps_1x_defaults():
    # 1.x's MaxPool2d() and AvgPool2d() pooled 2x2 with stride 2
    assert nn.MaxPool2d()(tt.zeros(1, 1, 4, 4)).shape == nn.AvgPool2d()(tt.zeros(1, 1, 4, 4)).shape == (1, 1, 2, 2)


# ---------------------------------------------------------------------------- normalization
@pytest.mark.parametrize(
    "kwargs", [dict(), dict(momentum=None), dict(affine=False), dict(track_running_stats=False)], ids=str
)
def test_batchnorm2d_training_steps_then_eval_match_torch(torch, kwargs):
    ours, theirs = _twins(torch, nn.BatchNorm2d(3, **kwargs), torch.nn.BatchNorm2d(3, **kwargs))
    for step in range(2):
        _compare(torch, ours, theirs, _x(2, 3, 3, 4, seed=step) * (step + 1) + step)
        ours.zero_grad()
        theirs.zero_grad()
        for key, value in theirs.state_dict().items():  # the running statistics, after each step
            np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), **TOL, err_msg=key)
    ours.eval()
    theirs.eval()
    _compare(torch, ours, theirs, _x(2, 3, 3, 4, seed=5))


def test_batchnorm2d_refuses_other_than_4d_input_as_torch(torch):
    for shape in ((2, 3), (2, 3, 4), (1, 2, 3, 4, 5)):
        message = f"expected 4D input \\(got {len(shape)}D input\\)"
        with pytest.raises(ValueError, match=message):
            nn.BatchNorm2d(3)(tt.zeros(*shape))
        with pytest.raises(ValueError, match=message):
            torch.nn.BatchNorm2d(3)(torch.zeros(*shape))
    with pytest.raises(ValueError, match=r"BatchNorm1d: expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(tt.zeros(2, 3, 4, 4))


@pytest.mark.parametrize("groups,channels,shape", [(2, 4, (2, 4, 3, 3)), (1, 3, (2, 3, 5)), (3, 3, (4, 3))])
def test_group_norm_matches_torch_in_both_modes(torch, groups, channels, shape):
    ours, theirs = _twins(torch, nn.GroupNorm(groups, channels), torch.nn.GroupNorm(groups, channels))
    _compare(torch, ours, theirs, _x(*shape))
    ours.zero_grad()
    theirs.zero_grad()
    _compare(torch, ours.eval(), theirs.eval(), _x(*shape, seed=1))  # no running statistics: the same


# ---------------------------------------------------------------------------- Dropout2d, Unflatten
def test_dropout2d_drops_whole_channels_in_training_only():
    tt.manual_seed(0)
    x = tt.ones(8, 16, 3, 3, requires_grad=True)
    drop = nn.Dropout2d(0.25)
    out = drop(x)
    planes = out.numpy().reshape(8 * 16, 9)
    kept = planes[:, 0] != 0
    assert np.all(planes[kept] == 1 / 0.75) and np.all(planes[~kept] == 0)  # a channel is kept or dropped whole
    assert 0.5 < kept.mean() < 0.95
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), out.numpy())  # the gradient goes through the same mask
    drop.eval()
    np.testing.assert_array_equal(drop(x).numpy(), x.numpy())
    assert np.all(nn.Dropout2d(1.0)(x).numpy() == 0) and np.all(nn.Dropout2d(0.0)(x).numpy() == 1)


def test_unflatten_matches_torch(torch):
    _compare(torch, nn.Unflatten(1, (2, 3)), torch.nn.Unflatten(1, (2, 3)), _x(4, 6, 5))
    _compare(torch, nn.Unflatten(-1, (5, -1)), torch.nn.Unflatten(-1, (5, -1)), _x(4, 3, 10))


# ---------------------------------------------------------------------------- ResidualBlock
@pytest.mark.parametrize("in_channels,out_channels,stride", [(4, 4, 1), (4, 8, 1), (4, 4, 2), (3, 6, 2)])
def test_residual_block_matches_the_same_torch_layers(torch, in_channels, out_channels, stride):
    tn = torch.nn

    class TorchBlock(tn.Module):  # 1.x's block: biased convolutions, a 1x1 convolution as the shortcut
        def __init__(self):
            super().__init__()
            self.conv1 = tn.Conv2d(in_channels, out_channels, 3, stride, 1)
            self.bn1 = tn.BatchNorm2d(out_channels)
            self.conv2 = tn.Conv2d(out_channels, out_channels, 3, 1, 1)
            self.bn2 = tn.BatchNorm2d(out_channels)
            self.relu = tn.ReLU()
            changes = stride != 1 or in_channels != out_channels
            self.downsample = tn.Conv2d(in_channels, out_channels, 1, stride) if changes else None

        def forward(self, x):
            out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
            return self.relu(out + (x if self.downsample is None else self.downsample(x)))

    block = nn.ResidualBlock(in_channels, out_channels, stride)
    assert (block.downsample is None) == (stride == 1 and in_channels == out_channels)
    ours, theirs = _twins(torch, block, TorchBlock())
    out = _compare(torch, ours, theirs, _x(2, in_channels, 6, 6))
    assert out.shape == (2, out_channels, 6 // stride, 6 // stride)


# ---------------------------------------------------------------------------- devices
def test_a_small_cnn_runs_on_every_device(device):
    """The layers keep their parameters, buffers and outputs on the input's device (LazyConv2d's
    first call included), with the CPU's results."""
    x = np.random.default_rng(5).standard_normal((2, 3, 8, 8)).astype(np.float32)
    results = []
    for where in ("cpu", device):
        tt.manual_seed(0)
        model = nn.Sequential(
            nn.LazyConv2d(4, 3, padding=1),
            nn.BatchNorm2d(4),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.ResidualBlock(4, 6, stride=2),
            nn.GroupNorm(2, 6),
            nn.Upsample(scale_factor=2),
            nn.ZeroPad2d(1),
            nn.AvgPool2d(2),
            nn.GlobalAvgPool2d(),
            nn.Flatten(),
            nn.Linear(6, 2),
        ).to(where)
        inp = tt.tensor(x, device=where, requires_grad=True)
        out = model(inp)
        out.sum().backward()
        assert out.device == inp.device == model[0].weight.device == model[1].running_mean.device
        results.append([out.numpy(), inp.grad.numpy(), model[0].weight.grad.numpy(), model[1].running_var.numpy()])
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-6)


# ---------------------------------------------------------------------------- 1.x entries
def test_1x_conv2d_and_batchnorm2d_entries_convert():
    rng = np.random.default_rng(4)
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.ReLU())
    model(tt.randn(4, 2, 5, 5))  # running statistics of its own, which a 1.x file does not hold
    kept = model[1].running_mean.numpy().copy(), model[1].running_var.numpy().copy()
    state = {  # what 1.x's state_dict() held
        "layers.0.weight": rng.standard_normal((3, 2, 3, 3)).astype(np.float32),
        "layers.0.bias": rng.standard_normal((3, 1)).astype(np.float32),
        "layers.1.gamma": rng.standard_normal((1, 3, 1, 1)).astype(np.float32),
        "layers.1.beta": rng.standard_normal((1, 3, 1, 1)).astype(np.float32),
    }
    converted = nn.convert_1x_state(state, model)
    assert set(converted) == set(model.state_dict())
    model.load_state_dict(converted)
    np.testing.assert_array_equal(model[0].weight.numpy(), state["layers.0.weight"])
    np.testing.assert_array_equal(model[0].bias.numpy(), state["layers.0.bias"].ravel())
    np.testing.assert_array_equal(model[1].weight.numpy(), state["layers.1.gamma"].ravel())
    np.testing.assert_array_equal(model[1].bias.numpy(), state["layers.1.beta"].ravel())
    np.testing.assert_array_equal(model[1].running_mean.numpy(), kept[0])
    np.testing.assert_array_equal(model[1].running_var.numpy(), kept[1])


# ---------------------------------------------------------------------------- errors
ERRORS = [
    (lambda: nn.Conv2d(2, 4, 3, groups=0), ValueError, r"Conv2d\(\): groups must be a positive integer"),
    (lambda: nn.Conv2d(3, 4, 3, groups=2), ValueError, r"in_channels must be divisible by groups"),
    (lambda: nn.Conv2d(2, 3, 3, groups=2), ValueError, r"out_channels must be divisible by groups"),
    (lambda: nn.Conv2d(2, 4, 3, padding="full"), ValueError, r"Invalid padding string 'full', should be one of"),
    (lambda: nn.Conv1d(2, 4, 3, stride=2, padding="same"), ValueError, r"padding='same' is not supported for strided"),
    (lambda: nn.Conv2d(2, 4, 3, padding_mode="foo"), ValueError, r"padding_mode must be one of .*'foo'"),
    (
        lambda: nn.Conv2d(2, 4, 3, padding_mode="reflect"),
        ValueError,
        r"padding_mode='reflect' is not supported; only padding_mode='zeros' is",
    ),
    (
        lambda: nn.ConvTranspose2d(2, 4, 3, padding_mode="reflect"),
        ValueError,
        r'Only "zeros" padding mode is supported for ConvTranspose2d',
    ),
    (lambda: nn.ConvTranspose2d(2, 4, 3, padding="same"), ValueError, r"padding must be an int or a tuple of 2 ints"),
    (lambda: nn.Conv2d(2, 4, (3, 3, 3)), ValueError, r"kernel_size must be an int or a tuple of 2 ints"),
    (lambda: nn.Conv2d(2, 4, 0), ValueError, r"kernel_size must be >= 1"),
    (lambda: nn.Conv2d(2, 4, 3, stride=0), ValueError, r"stride must be >= 1"),
    (lambda: nn.Conv2d(-1, 4, 3), ValueError, r"in_channels must be an int >= 0"),
    (lambda: nn.GroupNorm(2, 3), ValueError, r"num_channels \(3\) must be divisible by num_groups \(2\)"),
    (lambda: nn.GroupNorm(4, 4)(tt.zeros(2, 6, 3)), tt.ShapeError, r"divisible by num_groups, but got input of shape"),
    (lambda: nn.GroupNorm(2, 4)(tt.zeros(4)), tt.ShapeError, r"expected at least 2 dimensions"),
    (lambda: nn.Dropout2d(2), ValueError, r"dropout probability has to be between 0 and 1, but got 2"),
    (
        lambda: nn.Unflatten(1, (2, "a")),
        TypeError,
        r"unflattened_size must be tuple of ints, but found element of type",
    ),
    (lambda: nn.Unflatten(1, 6), TypeError, r"unflattened_size must be a tuple of ints"),
    (lambda: nn.Unflatten(1, (2, 4))(tt.zeros(2, 6)), tt.ShapeError, r"sizes \[2, 4\] don't multiply up to the size"),
    (lambda: nn.ZeroPad2d((1, 2)), TypeError, r"padding must be an int or a tuple of 4 ints"),
    (lambda: nn.Upsample(scale_factor="2"), TypeError, r"scale_factor must be a number"),
]


@pytest.mark.parametrize("call,exc,message", ERRORS, ids=[str(k) for k in range(len(ERRORS))])
def test_bad_arguments_are_named(call, exc, message):
    with pytest.raises(exc, match=message):
        call()
