"""tinytensor.models: pytinytensor 1.x's LeNet, VGG, ResNet and Ensemble.

Each model is described here as 1.x's source built it (its layer list, ``_LENET`` ... ``_resnet``);
from that description come the parameter counts 1.x gives, the state dict 1.x's
``Module.state_dict()`` held (names and shapes; 1.x's ``save`` pickled it), and a PyTorch model
with the same weights that computes what 1.x did. The models train for one step on small inputs
(ResNet34 is only counted: it is large).
"""

import pickle

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import models, nn

# ---------------------------------------------------------------------------- 1.x's models, described
# ("conv", in, out, kernel, stride, padding): 1.x's Conv2d (always a bias, stored (out, 1));
# ("bn", channels): 1.x's BatchNorm2d (gamma, beta of (1, C, 1, 1); no saved running statistics);
# ("linear", in, out): 1.x's Linear (weight (in, out), bias (1, out)); ("block", in, out, stride):
# 1.x's ResidualBlock; the rest have no parameters.
_LENET = [
    ("conv", 1, 6, 5, 1, 2),
    ("relu",),
    ("maxpool", 2, 2, 0),
    ("conv", 6, 16, 5, 1, 0),
    ("relu",),
    ("maxpool", 2, 2, 0),
    ("flatten",),
    ("linear", 400, 120),
    ("relu",),
    ("linear", 120, 84),
    ("relu",),
    ("linear", 84, 10),
]


def _vgg(in_channels=3, num_classes=10):
    layers = []
    for c_in, c_out, convs in ((in_channels, 64, 2), (64, 128, 2), (128, 256, 3)):  # 1.x's _vgg_block calls
        for i in range(convs):
            layers += [("conv", c_in if i == 0 else c_out, c_out, 3, 1, 1), ("bn", c_out), ("relu",)]
        layers.append(("maxpool", 2, 2, 0))
    return [*layers, ("flatten",), ("linear", 4096, 512), ("relu",), ("linear", 512, num_classes)]


def _resnet(blocks_per_stage, in_channels=3, num_classes=10, small_input=True):
    if small_input:
        layers = [("conv", in_channels, 64, 3, 1, 1), ("bn", 64), ("relu",)]
    else:
        layers = [("conv", in_channels, 64, 7, 2, 3), ("bn", 64), ("relu",), ("maxpool", 3, 2, 1)]
    channels = 64
    for stage, (out, blocks) in enumerate(zip((64, 128, 256, 512), blocks_per_stage, strict=True)):
        layers.append(("block", channels, out, 1 if stage == 0 else 2))  # 1.x's _make_stage
        layers += [("block", out, out, 1)] * (blocks - 1)
        channels = out
    return [*layers, ("gap",), ("flatten",), ("linear", 512, num_classes)]


def _block_parts(c_in, c_out, stride):
    """1.x's ResidualBlock's parameterized parts, in its attribute order."""
    parts = [("conv1", ("conv", c_in, c_out, 3, stride, 1)), ("bn1", ("bn", c_out))]
    parts += [("conv2", ("conv", c_out, c_out, 3, 1, 1)), ("bn2", ("bn", c_out))]
    if stride != 1 or c_in != c_out:
        parts.append(("downsample", ("conv", c_in, c_out, 1, stride, 0)))
    return parts


def _count_1x(spec):
    """The number of parameters 1.x's ``parameters()`` gives, by its layers' formulas."""
    total = 0
    for layer in spec:
        kind = layer[0]
        if kind == "conv":
            _, c_in, c_out, k, _, _ = layer
            total += c_in * c_out * k * k + c_out
        elif kind == "bn":
            total += 2 * layer[1]
        elif kind == "linear":
            total += layer[1] * layer[2] + layer[2]
        elif kind == "block":
            total += _count_1x([part for _, part in _block_parts(*layer[1:])])
    return total


def _1x_state(spec, seed=0):
    """What 1.x's ``model.state_dict()`` held for the model ``spec`` describes, names and shapes
    as 1.x's ``_get_named_params`` made them (``self.net`` is a Sequential: ``net.layers.N``).
    Weights are scaled by 1/sqrt(fan_in) so that deep models keep moderate activations."""
    rng = np.random.default_rng(seed)
    state = {}

    def normal(shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def add(prefix, layer):
        kind = layer[0]
        if kind == "conv":
            _, c_in, c_out, k, _, _ = layer
            state[f"{prefix}.weight"] = normal((c_out, c_in, k, k), (c_in * k * k) ** -0.5)
            state[f"{prefix}.bias"] = normal((c_out, 1), 0.1)
        elif kind == "bn":
            state[f"{prefix}.gamma"] = 1 + normal((1, layer[1], 1, 1), 0.1)
            state[f"{prefix}.beta"] = normal((1, layer[1], 1, 1), 0.1)
        elif kind == "linear":
            state[f"{prefix}.weight"] = normal((layer[1], layer[2]), layer[1] ** -0.5)
            state[f"{prefix}.bias"] = normal((1, layer[2]), 0.1)
        elif kind == "block":
            for name, part in _block_parts(*layer[1:]):
                add(f"{prefix}.{name}", part)

    for n, layer in enumerate(spec):
        add(f"net.layers.{n}", layer)
    return state


def _torch_model(torch, spec, state):
    """A PyTorch model that computes what 1.x's model computed with ``state``, in float64."""
    tn = torch.nn

    def conv(layer, prefix):
        _, c_in, c_out, k, stride, padding = layer
        module = tn.Conv2d(c_in, c_out, k, stride, padding)
        module.weight.data = torch.tensor(state[f"{prefix}.weight"])
        module.bias.data = torch.tensor(state[f"{prefix}.bias"].ravel())
        return module

    def bn(layer, prefix):
        module = tn.BatchNorm2d(layer[1])
        module.weight.data = torch.tensor(state[f"{prefix}.gamma"].ravel())
        module.bias.data = torch.tensor(state[f"{prefix}.beta"].ravel())
        return module

    class Block(tn.Module):
        def __init__(self, layer, prefix):
            super().__init__()
            parts = dict(_block_parts(*layer[1:]))
            self.conv1, self.bn1 = conv(parts["conv1"], f"{prefix}.conv1"), bn(parts["bn1"], f"{prefix}.bn1")
            self.conv2, self.bn2 = conv(parts["conv2"], f"{prefix}.conv2"), bn(parts["bn2"], f"{prefix}.bn2")
            self.down = conv(parts["downsample"], f"{prefix}.downsample") if "downsample" in parts else None

        def forward(self, x):
            out = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
            return torch.relu(out + (x if self.down is None else self.down(x)))

    layers = []
    for n, layer in enumerate(spec):
        prefix, kind = f"net.layers.{n}", layer[0]
        if kind == "conv":
            layers.append(conv(layer, prefix))
        elif kind == "bn":
            layers.append(bn(layer, prefix))
        elif kind == "linear":
            module = tn.Linear(layer[1], layer[2])
            module.weight.data = torch.tensor(state[f"{prefix}.weight"].T.copy())
            module.bias.data = torch.tensor(state[f"{prefix}.bias"].ravel())
            layers.append(module)
        elif kind == "block":
            layers.append(Block(layer, prefix))
        else:
            layers.append(
                {
                    "relu": lambda: tn.ReLU(),
                    "maxpool": lambda: tn.MaxPool2d(*layer[1:]),
                    "flatten": lambda: tn.Flatten(),
                    "gap": lambda: tn.AdaptiveAvgPool2d(1),
                }[kind]()
            )
    return tn.Sequential(*layers).double()


# ---------------------------------------------------------------------------- parameter counts
def _count(model):
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    "build,spec,expected",
    [
        (lambda: models.LeNet(), _LENET, 61_706),
        (lambda: models.LeNet(num_classes=5, in_channels=3), None, None),
        (lambda: models.VGG(), _vgg(), 3_840_586),
        (lambda: models.VGG(num_classes=100, in_channels=1), _vgg(1, 100), None),
        (lambda: models.ResNet18(), _resnet((2, 2, 2, 2)), 11_176_970),
        (lambda: models.ResNet34(), _resnet((3, 4, 6, 3)), 21_288_842),
        (lambda: models.ResNet(7, 1, (1, 1, 1, 1), small_input=False), _resnet((1, 1, 1, 1), 1, 7, False), None),
    ],
    ids=["LeNet", "LeNet-3ch-5", "VGG", "VGG-1ch-100", "ResNet18", "ResNet34", "ResNet-1111-large"],
)
def test_parameter_counts_are_1xs(build, spec, expected):
    model = build()
    if spec is None:  # LeNet(5 classes, 3 channels)
        spec = [("conv", 3, 6, 5, 1, 2), *_LENET[1:-1], ("linear", 84, 5)]
    assert _count(model) == _count_1x(spec)
    if expected is not None:
        assert _count(model) == expected  # 1.x's README: LeNet ~62k, VGG ~3.8M, ResNet18 ~11.2M


def test_structure_is_1xs():
    model = models.ResNet18()
    assert [type(m).__name__ for m in model.net][:4] == ["Conv2d", "BatchNorm2d", "ReLU", "ResidualBlock"]
    assert [type(m).__name__ for m in model.net][-3:] == ["GlobalAvgPool2d", "Flatten", "Linear"]
    assert len(model.net) == 3 + 8 + 3
    assert model.net[5].downsample is not None and model.net[4].downsample is None  # stage 2's first block
    assert sorted({k.split(".")[-1] for k in models.VGG().state_dict()}) == [
        "bias",
        "num_batches_tracked",
        "running_mean",
        "running_var",
        "weight",
    ]


# ---------------------------------------------------------------------------- one training step
@pytest.mark.parametrize(
    "build,shape",
    [
        (lambda: models.LeNet(), (2, 1, 28, 28)),
        (lambda: models.VGG(), (2, 3, 32, 32)),
        (lambda: models.ResNet18(small_input=True), (2, 3, 8, 8)),
    ],
    ids=["LeNet", "VGG", "ResNet18"],
)
def test_each_model_trains_one_step(build, shape):
    tt.manual_seed(0)
    model = build()
    optimizer = tt.optim.SGD(model.parameters(), lr=0.01)
    x = tt.randn(*shape)
    y = tt.tensor([3, 7])
    loss = nn.CrossEntropyLoss()(model(x), y)
    assert np.isfinite(loss.item())
    loss.backward()
    # a bias right before a BatchNorm2d gets no gradient in training mode (the batch mean takes it
    # out): 1.x's convolutions have biases even there
    before_bn = set()
    for name, module in model.named_modules():
        children = list(module._modules.items())
        for (child, first), (_, second) in zip(children, children[1:], strict=False):
            if isinstance(first, nn.Conv2d) and isinstance(second, nn.BatchNorm2d):
                before_bn.add(f"{name}.{child}.bias")
    for name, p in model.named_parameters():
        grad = p.grad.numpy()
        assert np.all(np.isfinite(grad)), name
        if name not in before_bn:
            assert np.any(grad != 0), f"no gradient for {name}"
    weights = {name: p.numpy().copy() for name, p in model.named_parameters()}
    optimizer.step()
    assert all(not np.array_equal(weights[name], p.numpy()) for name, p in model.named_parameters() if "weight" in name)


# ---------------------------------------------------------------------------- 1.x checkpoints
@pytest.mark.parametrize(
    "build,spec,shape",
    [
        (lambda: models.LeNet(), _LENET, (2, 1, 28, 28)),
        (lambda: models.VGG(), _vgg(), (2, 3, 32, 32)),
        (lambda: models.ResNet18(), _resnet((2, 2, 2, 2)), (2, 3, 8, 8)),
    ],
    ids=["LeNet", "VGG", "ResNet18"],
)
def test_1x_checkpoint_loads_and_computes_what_1x_computed(torch, tmp_path, build, spec, shape):
    state = _1x_state(spec)
    path = tmp_path / "model_1x.tt"
    with open(path, "wb") as f:  # 1.x's Module.save: pickle.dump(self.state_dict(), f)
        pickle.dump(state, f)
    model = build()
    model.load(path)
    model.double().eval()  # eval: the running statistics (a new layer's: 1.x never saved them)
    reference = _torch_model(torch, spec, state).eval()
    x = np.random.default_rng(1).standard_normal(shape)
    with tt.no_grad(), torch.no_grad():
        np.testing.assert_allclose(
            model(tt.tensor(x)).numpy(), reference(torch.tensor(x)).numpy(), rtol=1e-9, atol=1e-9
        )
    model.train()  # and in training mode, with the batch's statistics
    reference.train()
    with tt.no_grad(), torch.no_grad():
        np.testing.assert_allclose(
            model(tt.tensor(x)).numpy(), reference(torch.tensor(x)).numpy(), rtol=1e-9, atol=1e-9
        )


def test_1x_state_converts_with_convert_1x_state_and_keeps_running_statistics():
    spec = _resnet((1, 1, 1, 1))
    state = _1x_state(spec)
    model = models.ResNet(blocks_per_stage=(1, 1, 1, 1))
    model(tt.randn(2, 3, 4, 4))  # running statistics of its own
    kept = {k: v.numpy().copy() for k, v in model.state_dict().items() if "running" in k or "tracked" in k}
    converted = nn.convert_1x_state(state, model)
    assert set(converted) == set(model.state_dict())
    assert converted["net.3.conv1.bias"].shape == (64,) and converted["net.4.bn2.weight"].shape == (128,)
    assert converted["net.4.downsample.weight"].shape == (128, 64, 1, 1)
    model.load_state_dict(converted)
    for key, value in kept.items():
        np.testing.assert_array_equal(model.state_dict()[key].numpy(), value, err_msg=key)


def test_1x_checkpoint_of_another_structure_is_refused_with_the_limits(tmp_path):
    path = tmp_path / "lenet_1x.tt"
    path.write_bytes(pickle.dumps(_1x_state(_LENET)))
    with pytest.raises(KeyError, match=r"pytinytensor 1\.x file: .*BatchNorm"):
        models.VGG().load(path)


# ---------------------------------------------------------------------------- Ensemble
def _permutation_models():
    """Three bias-free Linear(3, 3) models; model k maps the one-hot sample e_j to class perms[k][j]."""
    perms = [(0, 1, 2), (1, 1, 2), (2, 0, 2)]
    layers = []
    for perm in perms:
        layer = nn.Linear(3, 3, bias=False)
        weight = np.zeros((3, 3), dtype=np.float32)
        weight[list(perm), [0, 1, 2]] = 4.0  # logit 4 for class perm[j], 0 for the others
        layer.load_state_dict({"weight": weight})
        layers.append(layer)
    return layers


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_soft_voting_averages_the_probabilities():
    tt.manual_seed(0)
    members = [nn.Linear(4, 3), nn.Linear(4, 3)]
    ensemble = models.Ensemble(members)
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    expected = np.mean([_softmax(m(tt.tensor(x)).detach().numpy()) for m in members], axis=0)
    np.testing.assert_allclose(ensemble(tt.tensor(x)).detach().numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(ensemble.predict_proba(x, batch_size=2), expected, rtol=1e-6)
    np.testing.assert_array_equal(ensemble.predict(x), expected.argmax(axis=1))
    assert len(ensemble) == 2 and _count(ensemble) == 2 * 15
    assert list(ensemble.state_dict())[:2] == ["models.0.weight", "models.0.bias"]
    ensemble(tt.tensor(x)).sum().backward()  # soft voting is differentiable: trainable as one model
    assert all(p.grad is not None for p in ensemble.parameters())


def test_hard_voting_takes_the_most_predicted_class_ties_to_the_smallest():
    ensemble = models.Ensemble(_permutation_models(), voting_type="hard")
    x = np.eye(3, dtype=np.float32)
    # sample 0: classes 0, 1, 2 (a three-way tie: 0); sample 1: 1, 1, 0 (1); sample 2: 2, 2, 2 (2)
    np.testing.assert_array_equal(ensemble.predict(x), [0, 1, 2])
    shares = ensemble(tt.tensor(x)).numpy()
    np.testing.assert_allclose(shares, [[1 / 3] * 3, [1 / 3, 2 / 3, 0], [0, 0, 1]], rtol=1e-6)
    # predict_proba is the mean probability whatever the voting, as 1.x's
    logits = [m(tt.tensor(x)).detach().numpy() for m in ensemble.models]
    np.testing.assert_allclose(ensemble.predict_proba(x), np.mean([_softmax(z) for z in logits], axis=0), rtol=1e-6)
    assert ensemble.evaluate(x, [0, 1, 1]) == pytest.approx(2 / 3)
    assert ensemble.evaluate(x, np.eye(3)) == 1.0  # one-hot labels


def test_predicting_restores_the_training_mode_and_batches_anything():
    ensemble = models.Ensemble([models.LeNet(), models.LeNet()])
    x = np.random.default_rng(0).standard_normal((5, 1, 28, 28))  # float64: fed to the float32 models
    one_batch, small_batches = ensemble.predict_proba(x), ensemble.predict_proba(tt.tensor(x, dtype="float32"), 2)
    np.testing.assert_allclose(one_batch, small_batches, rtol=1e-5, atol=1e-6)
    assert one_batch.shape == (5, 10) and np.allclose(one_batch.sum(axis=1), 1)
    assert all(m.training for m in ensemble.modules())


def test_ensemble_predicts_on_its_models_device(device):
    tt.manual_seed(0)
    ensemble = models.Ensemble([nn.Linear(4, 3), nn.Linear(4, 3)])
    x = np.random.default_rng(0).standard_normal((5, 4))
    expected = ensemble.predict_proba(x)
    ensemble.to(device)
    np.testing.assert_allclose(ensemble.predict_proba(x, batch_size=2), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ensemble.predict(tt.tensor(x, dtype="float32")), expected.argmax(axis=1))


def test_ensemble_saves_and_loads_through_tt_files(tmp_path):
    tt.manual_seed(0)
    saved = models.Ensemble(_permutation_models(), voting_type="hard")
    path = tmp_path / "ensemble.tt"
    saved.save(path)
    assert path.read_bytes()[:2] == b"PK"  # a .tt archive: data, never a pickle
    tt.manual_seed(1)
    fresh = models.Ensemble([nn.Linear(3, 3, bias=False) for _ in range(3)])
    assert fresh.load(path) is fresh and fresh.voting_type == "hard"
    x = np.eye(3, dtype=np.float32)
    np.testing.assert_array_equal(fresh.predict(x), saved.predict(x))
    with pytest.raises(ValueError, match=r"the file holds 3 models, the ensemble 2"):
        models.Ensemble([nn.Linear(3, 3), nn.Linear(3, 3)]).load(path)
    mixed = models.Ensemble([nn.Linear(3, 3, bias=False), nn.Linear(3, 3, bias=False), nn.Linear(3, 2, bias=False)])
    before = [p.numpy().copy() for p in mixed.parameters()]
    with pytest.raises(tt.ShapeError):
        mixed.load(path)
    assert all(np.array_equal(b, p.numpy()) for b, p in zip(before, mixed.parameters(), strict=True))  # all or nothing


def test_1x_ensemble_file_loads(tmp_path):
    rng = np.random.default_rng(2)
    states = [
        {
            "layers.0.weight": rng.standard_normal((4, 3)).astype(np.float32),
            "layers.0.bias": np.zeros((1, 3), np.float32),
        }
        for _ in range(2)
    ]
    path = tmp_path / "ensemble_1x.pkl"
    path.write_bytes(pickle.dumps({"voting_type": "soft", "states": states}))  # 1.x's Ensemble.save
    ensemble = models.Ensemble([nn.Sequential(nn.Linear(4, 3)) for _ in range(2)], voting_type="hard").load(path)
    assert ensemble.voting_type == "soft"
    for model, state in zip(ensemble.models, states, strict=True):
        np.testing.assert_array_equal(model[0].weight.numpy(), state["layers.0.weight"].T)


def test_ensemble_arguments_and_the_training_api():
    with pytest.raises(ValueError, match=r"voting_type must be 'soft' or 'hard', got 'mean'"):
        models.Ensemble([nn.Linear(2, 2)], voting_type="mean")
    with pytest.raises(ValueError, match=r"at least one model"):
        models.Ensemble([])
    with pytest.raises(TypeError, match=r"ModuleList holds Modules"):
        models.Ensemble([object()])
    ensemble = models.Ensemble([nn.Linear(2, 2)])
    for call in (lambda: ensemble.compile(None, None), lambda: ensemble.fit(np.zeros((2, 2)), np.zeros(2))):
        with pytest.raises(NotImplementedError, match=r"Module\.compile/fit.*train each model with a loop"):
            call()


def test_1x_module_paths():
    from tinytensor.models.ensemble import Ensemble
    from tinytensor.models.lenet import LeNet
    from tinytensor.models.resnet import ResNet, ResNet18, ResNet34
    from tinytensor.models.vgg import VGG
    from tinytensor.nn.batchnorm import BatchNorm2d
    from tinytensor.nn.conv import Conv2d
    from tinytensor.nn.flatten import Flatten
    from tinytensor.nn.pooling import AvgPool2d, GlobalAvgPool2d, MaxPool2d
    from tinytensor.nn.residual import ResidualBlock

    assert (LeNet, VGG, ResNet, ResNet18, ResNet34, Ensemble) == (
        models.LeNet,
        models.VGG,
        models.ResNet,
        models.ResNet18,
        models.ResNet34,
        models.Ensemble,
    )
    assert (Conv2d, MaxPool2d, AvgPool2d, GlobalAvgPool2d) == (
        nn.Conv2d,
        nn.MaxPool2d,
        nn.AvgPool2d,
        nn.GlobalAvgPool2d,
    )
    assert (BatchNorm2d, ResidualBlock, Flatten) == (nn.BatchNorm2d, nn.ResidualBlock, nn.Flatten)
