"""tinytensor.autograd.Function against torch.autograd.Function: the same class body on both.

Each Function is written once, in a factory that takes the base class, so the tinytensor and the
PyTorch versions run the same forward and backward code.
"""

import gc
import weakref

import numpy as np
import pytest

import tinytensor as tt
from tinytensor.autograd import Function
from tinytensor.custom_function import FunctionCtx


def exp_function(base):
    class Exp(base):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    return Exp


def legendre_function(base):
    """PyTorch's tutorial example: P3(x) = (5x^3 - 3x) / 2."""

    class LegendrePolynomial3(base):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return 0.5 * (5 * x**3 - 3 * x)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * 1.5 * (5 * x**2 - 1)

    return LegendrePolynomial3


def scaled_pair_function(base):
    """Two inputs and a number; two outputs; gradients for both tensors."""

    class ScaledPair(base):
        @staticmethod
        def forward(ctx, a, b, k):
            ctx.save_for_backward(a, b)
            ctx.k = k
            return a * b * k, a + b

        @staticmethod
        def backward(ctx, g_prod, g_sum):
            a, b = ctx.saved_tensors
            ga = g_prod * b * ctx.k + g_sum if ctx.needs_input_grad[0] else None
            gb = g_prod * a * ctx.k + g_sum if ctx.needs_input_grad[1] else None
            return ga, gb, None

    return ScaledPair


def _inputs(module, arrays, device=None, requires_grad=True):
    if device is None:  # torch
        return [module.tensor(a, requires_grad=requires_grad) for a in arrays]
    return [tt.tensor(a, device=device, requires_grad=requires_grad) for a in arrays]


@pytest.mark.parametrize("factory", [exp_function, legendre_function])
def test_one_input_function_matches_torch(device, torch, factory):
    x = np.random.default_rng(0).standard_normal((3, 4))
    upstream = np.random.default_rng(1).standard_normal((3, 4))
    (ours,) = _inputs(tt, [x], device)
    (theirs,) = _inputs(torch, [x])
    y = factory(Function).apply(ours)
    y_ref = factory(torch.autograd.Function).apply(theirs)
    assert y.requires_grad and y.device == ours.device
    y.backward(tt.tensor(upstream, device=device))
    y_ref.backward(torch.tensor(upstream))
    np.testing.assert_allclose(y.numpy(), y_ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)
    assert ours.grad.device == ours.device


def test_tutorial_fit_with_the_function_matches_torch(torch):
    """PyTorch's tutorial loop (a cubic through LegendrePolynomial3) gives the same weights."""
    xs = np.linspace(-np.pi, np.pi, 200)
    ys = np.sin(xs)
    results = []
    for module, base in ((tt, Function), (torch, torch.autograd.Function)):
        P3 = legendre_function(base)
        x, y = module.tensor(xs), module.tensor(ys)
        a, b, c, d = (module.tensor(v, requires_grad=True) for v in (0.0, -1.0, 0.0, 0.3))
        for _ in range(50):
            loss = ((a + b * P3.apply(c + d * x) - y) ** 2).sum()
            loss.backward()
            with module.no_grad():
                for w in (a, b, c, d):
                    w.sub_(5e-6 * w.grad)
                    w.grad = None
        results.append([float(w.item()) for w in (a, b, c, d)])
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-12)


def test_two_outputs_and_a_number_match_torch(device, torch):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    ours = _inputs(tt, [a, b], device)
    theirs = _inputs(torch, [a, b])
    prod, total = scaled_pair_function(Function).apply(*ours, 3.0)
    prod_ref, total_ref = scaled_pair_function(torch.autograd.Function).apply(*theirs, 3.0)
    ((prod * total).sum() + prod.sum()).backward()
    ((prod_ref * total_ref).sum() + prod_ref.sum()).backward()
    np.testing.assert_allclose(prod.numpy(), prod_ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(total.numpy(), total_ref.detach().numpy(), rtol=1e-12)
    for mine, ref in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), ref.grad.numpy(), rtol=1e-12)
        assert mine.grad.device == mine.device


def test_an_output_without_gradient_gets_zeros_on_its_device_like_torch(device, torch):
    seen = {}

    def factory(base, module):
        class Split(base):
            @staticmethod
            def forward(ctx, x):
                return x * 2.0, x * 3.0, (x * 4.0).long(), "label"

            @staticmethod
            def backward(ctx, g2, g3, g_int, g_label):
                seen[module.__name__] = [
                    None if g is None else (g.numpy().tolist(), str(g.numpy().dtype)) for g in (g3, g_int, g_label)
                ]
                if module is tt:
                    seen["devices"] = (g2.device, g3.device, g_int.device)
                return g2 * 2.0 + g3 * 3.0

        return Split

    x = np.array([1.0, -2.0])
    (ours,) = _inputs(tt, [x], device)
    (theirs,) = _inputs(torch, [x])
    out = factory(Function, tt).apply(ours)
    ref = factory(torch.autograd.Function, torch).apply(theirs)
    assert [o.requires_grad if hasattr(o, "requires_grad") else o for o in out] == [True, True, False, "label"]
    assert [o.requires_grad if hasattr(o, "requires_grad") else o for o in ref] == [True, True, False, "label"]
    out[0].sum().backward()
    ref[0].sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy())
    assert seen["tinytensor"][0] == ([0.0, 0.0], "float64")
    assert seen["tinytensor"][1][0] == seen["torch"][1][0] == [0, 0]  # the integer output's zeros
    assert seen["tinytensor"][2] is None and seen["torch"][2] is None  # a non-tensor output gets None
    assert seen["devices"] == (ours.device,) * 3


def test_mark_non_differentiable_and_materialize_grads_like_torch(torch):
    received = {}

    def factory(base, key, materialize):
        class Sorted(base):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                doubled, order = x * 2.0, x * 0.0
                ctx.mark_non_differentiable(order)
                return doubled, order

            @staticmethod
            def backward(ctx, g, g_order):
                received[key] = g_order if g_order is None else g_order.numpy().tolist()
                return g * 2.0

        return Sorted

    for materialize in (True, False):
        x = tt.tensor([1.0, 2.0], requires_grad=True)
        xt = torch.tensor([1.0, 2.0], requires_grad=True)
        doubled, order = factory(Function, "ours", materialize).apply(x)
        doubled_ref, order_ref = factory(torch.autograd.Function, "torch", materialize).apply(xt)
        assert (order.requires_grad, order.grad_fn) == (order_ref.requires_grad, order_ref.grad_fn) == (False, None)
        doubled.sum().backward()
        doubled_ref.sum().backward()
        assert received["ours"] == received["torch"] == ([0.0, 0.0] if materialize else None)
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


def test_needs_input_grad_matches_torch(torch):
    log = []

    def factory(base):
        class Probe(base):
            @staticmethod
            def forward(ctx, a, b, n, c, none):
                log.append((ctx.needs_input_grad, base.__module__))
                return a * 1.0

            @staticmethod
            def backward(ctx, g):
                log.append((ctx.needs_input_grad, base.__module__))
                return g, None, None, None, None

        return Probe

    def args(module):
        return (
            module.tensor([1.0], requires_grad=True),
            module.tensor([2.0]),
            3,
            module.tensor([1], dtype=module.int64),
            None,
        )

    factory(Function).apply(*args(tt)).sum().backward()
    factory(torch.autograd.Function).apply(*args(torch)).sum().backward()
    with tt.no_grad():
        factory(Function).apply(*args(tt))
    with torch.no_grad():
        factory(torch.autograd.Function).apply(*args(torch))
    ours = [needs for needs, where in log if where.startswith("tinytensor")]
    theirs = [needs for needs, where in log if where.startswith("torch")]
    assert ours == theirs == [(True, False, False, False, False)] * 3


def test_outputs_require_grad_only_when_an_input_does_and_grad_mode_is_on():
    Exp = exp_function(Function)
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    assert Exp.apply(x).requires_grad
    assert not Exp.apply(tt.tensor([1.0, 2.0])).requires_grad
    with tt.no_grad():
        y = Exp.apply(x)
    assert not y.requires_grad and y.grad_fn is None


def test_forward_records_nothing_and_backward_gets_tensors_without_recording():
    state = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            state["forward"] = tt.is_grad_enabled()
            inner = x * 2.0
            state["inner"] = inner.requires_grad
            return inner

        @staticmethod
        def backward(ctx, g):
            state["backward"] = (tt.is_grad_enabled(), type(g).__name__, g.requires_grad)
            return g * 2.0

    x = tt.tensor([1.0], requires_grad=True)
    Probe.apply(x).sum().backward()
    assert state == {"forward": False, "inner": False, "backward": (False, "Tensor", False)}
    assert tt.is_grad_enabled()


def test_an_input_returned_as_it_is_is_a_new_tensor_on_the_same_storage(torch):
    def factory(base):
        class Identity(base):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 3.0

        return Identity

    x = tt.tensor([1.0, 2.0], requires_grad=True)
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    y = factory(Function).apply(x)
    y_ref = factory(torch.autograd.Function).apply(xt)
    assert (y is x, y_ref is xt) == (False, False)
    assert y.grad_fn.name() == y_ref.grad_fn.name() == "IdentityBackward"
    y.sum().backward()
    y_ref.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())
    with tt.no_grad():
        y.add_(1.0)
    assert x.tolist() == [2.0, 3.0]  # the same storage


def test_in_place_change_of_a_saved_tensor_raises_at_backward(device):
    Exp = exp_function(Function)
    P3 = legendre_function(Function)
    x = tt.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = Exp.apply(x)  # saves its output
    loss = y.sum()
    with tt.no_grad():
        y.mul_(2.0)
    with pytest.raises(
        RuntimeError, match=r"modified by an inplace operation: saved tensor 0 of ExpBackward \(shape \(2,\)\)"
    ):
        loss.backward()
    z = P3.apply(x)  # saves its input
    loss = z.sum()
    with tt.no_grad():
        x.add_(1.0)  # e.g. an optimizer step before backward
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    x.grad = None
    P3.apply(x).sum().backward()  # a new forward pass after the change is fine
    np.testing.assert_allclose(x.grad.numpy(), 1.5 * (5 * x.numpy() ** 2 - 1))


def test_saved_tensors_are_freed_after_backward_unless_retain_graph(torch):
    Exp = exp_function(Function)
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    y = Exp.apply(x)
    y.sum().backward(retain_graph=True)
    assert len(y.grad_fn.saved_tensors) == 1  # kept
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([1.0, 2.0]), rtol=1e-6)
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    y_ref = exp_function(torch.autograd.Function).apply(xt)
    y_ref.sum().backward()
    with pytest.raises(RuntimeError) as ref_error:
        _ = y_ref.grad_fn.saved_tensors
    with pytest.raises(RuntimeError) as error:
        _ = y.grad_fn.saved_tensors
    assert str(ref_error.value).split(" Saved")[0] in str(error.value)  # "Trying to backward ... freed)."
    with pytest.raises(RuntimeError, match="freed"):
        y.sum().backward()


def test_saved_arrays_are_released_by_backward_even_while_the_output_lives():
    kept = {}

    class Keeps(Function):
        @staticmethod
        def forward(ctx, x):
            big = x * 2.0
            kept["ref"] = weakref.ref(big._data)
            ctx.save_for_backward(big)
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            (big,) = ctx.saved_tensors
            return g * big

    x = tt.tensor(np.ones(1000), requires_grad=True)
    y = Keeps.apply(x)
    gc.collect()
    assert kept["ref"]() is not None
    y.backward()
    gc.collect()
    assert kept["ref"]() is None and y.grad_fn.name() == "KeepsBackward"


def test_wrong_number_of_gradients_is_torchs_error(torch):
    def factory(base):
        class TwoGrads(base):
            @staticmethod
            def forward(ctx, x):
                return x * 2.0

            @staticmethod
            def backward(ctx, g):
                return g, g

        return TwoGrads

    errors = []
    for module, base in ((tt, Function), (torch, torch.autograd.Function)):
        with pytest.raises(RuntimeError) as error:
            factory(base).apply(module.tensor([1.0], requires_grad=True)).sum().backward()
        errors.append(str(error.value))
    assert (
        errors[0]
        == errors[1]
        == "function TwoGradsBackward returned an incorrect number of gradients (expected 1, got 2)"
    )


def test_gradient_of_the_wrong_shape_is_torchs_error_and_a_broadcast_one_is_summed(torch):
    def factory(base, shape):
        class Shaped(base):
            @staticmethod
            def forward(ctx, x):
                return x * 2.0

            @staticmethod
            def backward(ctx, g):
                return g.new_ones(shape) if hasattr(g, "new_ones") else tt.ones(*shape, dtype=g.dtype)

        return Shaped

    errors = []
    for module, base in ((tt, Function), (torch, torch.autograd.Function)):
        with pytest.raises(RuntimeError) as error:
            factory(base, (3,)).apply(module.tensor([1.0, 2.0], requires_grad=True)).sum().backward()
        errors.append(str(error.value))
    assert (
        errors[0]
        == errors[1]
        == "Function ShapedBackward returned an invalid gradient at index 0 - got [3] but expected shape compatible with [2]"
    )
    grads = []
    for module, base in ((tt, Function), (torch, torch.autograd.Function)):
        x = module.tensor([[1.0], [2.0]], requires_grad=True)
        factory(base, (4, 2, 3)).apply(x).sum().backward()  # broadcasts from (2, 1): summed down
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    assert grads[0].tolist() == [[12.0], [12.0]]


def test_gradient_rules_for_numbers_nones_types_and_dtypes(torch):
    def factory(base, result):
        class Rule(base):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return result(g)

        return Rule

    x = tt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match="returned a gradient different than None at position 2, but the corresponding forward input was not a Tensor",
    ):
        factory(Function, lambda g: (g, g)).apply(x, 3.0).sum().backward()
    with pytest.raises(TypeError, match="returned a float as the gradient at position 1; expected a Tensor or None"):
        factory(Function, lambda g: (3.0, None)).apply(x, 3.0).sum().backward()
    factory(Function, lambda g: (g * 3.0, None, None, None)).apply(x, 3.0).sum().backward()  # trailing Nones: fine
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    x32 = tt.tensor([1.0, 2.0], dtype="float32", requires_grad=True)
    factory(Function, lambda g: (g.double(), None)).apply(x32, 3.0).sum().backward()
    assert x32.grad.dtype == np.float32  # cast to the input's dtype, as torch does
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    factory(torch.autograd.Function, lambda g: (g.double(), None)).apply(xt, 3.0).sum().backward()
    assert xt.grad.dtype == torch.float32


def test_gradient_on_another_device_is_an_error():
    pytest.importorskip("array_api_strict")

    class Elsewhere(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g.to("cpu")

    x = tt.tensor([1.0, 2.0], device="strict:device1", requires_grad=True)
    with pytest.raises(RuntimeError, match="invalid gradient at index 0 - expected device strict:device1 but got cpu"):
        Elsewhere.apply(x).sum().backward()


def test_keyword_arguments_bind_to_forward_parameters_like_torch(torch):
    log = []

    def factory(base):
        class Keywords(base):
            @staticmethod
            def forward(ctx, x, y=None, scale=2.0):
                log.append(ctx.needs_input_grad)
                return x * y * scale

            @staticmethod
            def backward(ctx, g):
                return g, g * 10.0, None

        return Keywords

    grads = []
    for module, base in ((tt, Function), (torch, torch.autograd.Function)):
        x, y = module.tensor([1.0], requires_grad=True), module.tensor([2.0], requires_grad=True)
        factory(base).apply(x, scale=3.0, y=y).sum().backward()
        grads.append((x.grad.tolist(), y.grad.tolist()))
    assert grads[0] == grads[1] == ([1.0], [10.0])
    assert log[0] == log[1] == (True, True, False)

    class KeywordOnly(Function):
        @staticmethod
        def forward(ctx, x, *, y):
            return x * y

    with pytest.raises(TypeError, match=r"KeywordOnly.apply\(\): forward\(\) takes 'y' only by keyword"):
        KeywordOnly.apply(tt.tensor([1.0]), y=2.0)
    with pytest.raises(TypeError, match=r"KeywordOnly.apply\(\): missing a required argument"):
        KeywordOnly.apply(y=2.0)


def test_setup_context_style_like_torch(torch):
    def factory(base):
        class Cube(base):
            @staticmethod
            def forward(x, power=3):
                return x**power

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, power = inputs
                ctx.save_for_backward(x)
                ctx.power = power

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * ctx.power * x ** (ctx.power - 1), None

        return Cube

    grads = []
    for module, base in ((tt, Function), (torch, torch.autograd.Function)):
        x = module.tensor([1.0, 2.0], requires_grad=True)
        factory(base).apply(x).sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1] == [3.0, 12.0]


def test_mark_dirty_returns_the_input_itself(torch):
    def factory(base):
        class Double_(base):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2.0)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2.0

        return Double_

    z, zt = tt.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])
    assert factory(Function).apply(z) is z and factory(torch.autograd.Function).apply(zt) is zt
    assert z.tolist() == [2.0, 4.0]
    # an input that needs no gradient, with one that does: the output is that input, now in the graph
    w = tt.tensor([1.0, 1.0], requires_grad=True)

    class AddInto(Function):
        @staticmethod
        def forward(ctx, target, w):
            target.add_(w)
            ctx.mark_dirty(target)
            return target

        @staticmethod
        def backward(ctx, g):
            return g, g

    out = AddInto.apply(z, w)
    assert out is z and z.requires_grad and z.grad_fn.name() == "AddIntoBackward"
    (z * 3.0).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]
    leaf = tt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="changed in place .mark_dirty. an input that requires grad"):
        factory(Function).apply(leaf)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        factory(torch.autograd.Function).apply(torch.tensor([1.0, 2.0], requires_grad=True))
    with tt.no_grad():
        assert factory(Function).apply(tt.tensor([1.0], requires_grad=True)).tolist() == [2.0]

    class Forgets(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x * 2.0

    with pytest.raises(RuntimeError, match="marked a tensor dirty .* that it did not return"):
        Forgets.apply(tt.tensor([1.0]))


def test_grad_fn_of_a_function_is_its_ctx_like_torch(torch):
    names = []
    for module, base in ((tt, Function), (torch, torch.autograd.Function)):
        a, b = module.tensor([1.0], requires_grad=True), module.tensor([2.0])
        prod, total = scaled_pair_function(base).apply(a, b, 3.0)
        node = prod.grad_fn
        assert node == total.grad_fn
        assert node.k == 3.0 and node.needs_input_grad == (True, False, False)
        assert [t.tolist() for t in node.saved_tensors] == [[1.0], [2.0]]
        (edge_a, _), (edge_b, _) = node.next_functions
        assert edge_a.variable is a and edge_b is None
        downstream = (prod + total).grad_fn.next_functions
        names.append((type(node).__name__, node.name(), [(n.name(), k) for n, k in downstream]))
    assert (
        names[0]
        == names[1]
        == ("ScaledPairBackward", "ScaledPairBackward", [("ScaledPairBackward", 0), ("ScaledPairBackward", 1)])
    )


def test_legacy_and_incomplete_functions_raise_clearly(torch):
    class Legacy(Function):
        def forward(self, x):
            return x

        def backward(self, g):
            return g

    with pytest.raises(RuntimeError, match=r"Legacy.forward is not a @staticmethod.*legacy autograd functions"):
        Legacy.apply(tt.tensor([1.0]))
    with pytest.raises(RuntimeError, match=r"legacy autograd functions .* call Legacy.apply"):
        Legacy()(tt.tensor([1.0]))
    with pytest.raises(NotImplementedError, match="You must implement the forward function"):
        Function.apply(tt.tensor([1.0]))

    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

    y = NoBackward.apply(tt.tensor([1.0], requires_grad=True))
    with pytest.raises(NotImplementedError, match="You must implement the backward function"):
        y.sum().backward()

    class SavesANumber(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x

    with pytest.raises(TypeError, match=r"save_for_backward\(\): argument 1 must be a Tensor or None, got int"):
        SavesANumber.apply(tt.tensor([1.0]))
    ctx = FunctionCtx("XBackward")
    with pytest.raises(TypeError, match=r"set_materialize_grads\(\): value must be a bool, got int"):
        ctx.set_materialize_grads(1)
    with pytest.raises(TypeError, match=r"mark_dirty\(\): argument 0 must be a Tensor, got list"):
        ctx.mark_dirty([1.0])


def test_the_class_is_tinytensor_autograd_function():
    assert tt.autograd.Function is Function and Function.__module__ == "tinytensor.custom_function"
