"""Grad mode against PyTorch's: set_grad_enabled, inference_mode, no_grad and enable_grad as
functions, context managers and decorators (each scenario runs on both and logs the mode)."""

import pytest

import tinytensor as tt


def _set_grad_enabled_scenario(m):
    log = [m.is_grad_enabled()]
    m.set_grad_enabled(False)  # a plain call switches at once
    log.append(m.is_grad_enabled())
    m.set_grad_enabled(True)
    with m.set_grad_enabled(False):
        log.append(m.is_grad_enabled())
        with m.set_grad_enabled(True):
            log.append(m.is_grad_enabled())
            with m.no_grad():
                log.append(m.is_grad_enabled())
            log.append(m.is_grad_enabled())
        log.append(m.is_grad_enabled())
    log.append(m.is_grad_enabled())

    @m.set_grad_enabled(False)
    def off():
        return m.is_grad_enabled()

    log.append(m.is_grad_enabled())  # decorating changes nothing
    log += [off(), m.is_grad_enabled()]
    with m.no_grad():

        @m.set_grad_enabled(True)
        def on():
            return m.is_grad_enabled()

        log += [m.is_grad_enabled(), on(), m.is_grad_enabled()]
    try:
        with m.set_grad_enabled(False):
            raise KeyError("inside")
    except KeyError:
        log.append(m.is_grad_enabled())  # restored after an exception
    return log


def _inference_mode_scenario(m):
    log = []
    with m.inference_mode():
        log += [m.is_grad_enabled(), m.is_inference_mode_enabled()]
        with m.inference_mode(False):
            log += [m.is_grad_enabled(), m.is_inference_mode_enabled()]
        with m.enable_grad():
            log += [m.is_grad_enabled(), m.is_inference_mode_enabled()]
        log += [m.is_grad_enabled(), m.is_inference_mode_enabled()]
    log += [m.is_grad_enabled(), m.is_inference_mode_enabled()]

    @m.inference_mode
    def bare():
        return m.is_grad_enabled(), m.is_inference_mode_enabled()

    @m.inference_mode()
    def called():
        return m.is_grad_enabled(), m.is_inference_mode_enabled()

    @m.inference_mode(False)
    def off():
        return m.is_grad_enabled(), m.is_inference_mode_enabled()

    log += [bare(), called()]
    with m.no_grad():
        log.append(off())
    log.append(m.is_grad_enabled())
    return log


def _decorator_scenario(m):
    @m.no_grad()
    def without():
        return m.is_grad_enabled()

    @m.enable_grad()
    def with_():
        return m.is_grad_enabled()

    log = [without()]
    with m.no_grad():
        log.append(with_())
    return log


@pytest.mark.parametrize("scenario", [_set_grad_enabled_scenario, _inference_mode_scenario, _decorator_scenario])
def test_grad_mode_matches_torch(torch, scenario):
    assert scenario(tt) == scenario(torch)
    assert tt.is_grad_enabled() and not tt.is_inference_mode_enabled()


def test_set_grad_enabled_controls_recording():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    with tt.set_grad_enabled(False):
        assert not (x * 2.0).requires_grad
        with tt.set_grad_enabled(True):
            assert (x * 2.0).requires_grad
    is_train = False
    with tt.set_grad_enabled(is_train):  # the usual train/eval switch
        y = x * 2.0
    assert not y.requires_grad and (x * 2.0).requires_grad


def test_inference_mode_records_nothing_and_its_tensors_are_ordinary():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    with tt.inference_mode():
        y = x * 2.0
        assert not y.requires_grad
    # unlike PyTorch's inference tensors, y works in a later graph and in place
    z = (y * x).sum()
    z.backward()
    assert x.grad.tolist() == [2.0, 4.0]
    y.add_(1.0)
    assert y.tolist() == [3.0, 5.0]


def test_modes_refuse_what_is_not_a_bool():
    with pytest.raises(TypeError, match=r"set_grad_enabled\(\): argument 'mode' must be a bool, got int"):
        tt.set_grad_enabled(1)
    with pytest.raises(TypeError, match=r"inference_mode\(\): argument 'mode' must be a bool, got str"):
        tt.inference_mode("yes")
    assert tt.is_grad_enabled()


def test_the_helpers_are_in_tinytensor_and_tinytensor_autograd():
    for name in (
        "no_grad",
        "enable_grad",
        "set_grad_enabled",
        "inference_mode",
        "is_grad_enabled",
        "is_inference_mode_enabled",
    ):
        assert getattr(tt, name) is getattr(tt.autograd, name)
        assert name in tt.__all__
