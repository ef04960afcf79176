"""Learning-rate schedulers: lr sequences against torch.optim.lr_scheduler, state, bad arguments.

Tests that compare with PyTorch take the ``torch`` fixture (skipped where it is not installed).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tinytensor import nn, optim
from tinytensor.optim.lr_scheduler import CosineAnnealingLR, LRScheduler, StepLR

STEPS = 30
SCHEDULES = [
    ("StepLR", dict(step_size=7)),
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("StepLR", dict(step_size=1, gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=10)),
    ("CosineAnnealingLR", dict(T_max=12, eta_min=0.001)),
    ("CosineAnnealingLR", dict(T_max=30, eta_min=0.01)),
    ("CosineAnnealingLR", dict(T_max=1)),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(SCHEDULES)]
LRS = (0.1, 0.03, 0.5)  # one per param group


def _groups(make, opt_cls, **kwargs):
    params = [make(np.zeros(2)) for _ in LRS]
    return opt_cls([{"params": [p], "lr": lr} for p, lr in zip(params, LRS, strict=True)], **kwargs)


def _ours(opt_name="SGD"):
    return _groups(nn.Parameter, getattr(optim, opt_name), **({"lr": 1.0} if opt_name == "SGD" else {}))


def _theirs(torch, opt_name="SGD"):
    make = lambda a: torch.nn.Parameter(torch.tensor(a))  # noqa: E731
    return _groups(make, getattr(torch.optim, opt_name), **({"lr": 1.0} if opt_name == "SGD" else {}))


def _sequence(scheduler, steps=STEPS):
    """get_last_lr() after construction and after each step, with a (gradient-free) optimizer step first."""
    out = [scheduler.get_last_lr()]
    for _ in range(steps):
        scheduler.optimizer.step()
        scheduler.step()
        out.append(scheduler.get_last_lr())
    return out


@pytest.mark.parametrize("name,kwargs", SCHEDULES, ids=IDS)
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_lr_sequence_matches_torch(torch, name, kwargs, opt_name):
    ours = getattr(optim.lr_scheduler, name)(_ours(opt_name), **kwargs)
    theirs = getattr(torch.optim.lr_scheduler, name)(_theirs(torch, opt_name), **kwargs)
    got, want = _sequence(ours), _sequence(theirs)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    assert [g["lr"] for g in ours.optimizer.param_groups] == got[-1]
    assert [g["initial_lr"] for g in ours.optimizer.param_groups] == list(LRS)
    assert ours.last_epoch == theirs.last_epoch == STEPS


@pytest.mark.parametrize("name,kwargs", SCHEDULES, ids=IDS)
def test_state_dict_resumes_the_sequence(torch, name, kwargs):
    """Save the optimizer and scheduler half-way, restore both into fresh ones, continue: the same
    rates as PyTorch's uninterrupted scheduler."""
    cls = getattr(optim.lr_scheduler, name)
    first = cls(_ours(), **kwargs)
    head = _sequence(first, 12)
    saved_opt, saved_sched = first.optimizer.state_dict(), first.state_dict()

    opt = _ours()
    resumed = cls(opt, **kwargs)
    opt.load_state_dict(saved_opt)  # after making the scheduler, as PyTorch documents
    resumed.load_state_dict(saved_sched)
    tail = _sequence(resumed, STEPS - 12)

    want = _sequence(getattr(torch.optim.lr_scheduler, name)(_theirs(torch), **kwargs))
    np.testing.assert_allclose(head + tail[1:], want, rtol=1e-12, atol=0)


def test_construction_records_initial_lr_and_takes_the_first_step():
    opt = _ours()
    sched = StepLR(opt, step_size=2, gamma=0.5)
    assert sched.last_epoch == 0
    assert sched.base_lrs == list(LRS)
    assert sched.get_last_lr() == list(LRS)
    sched.step()
    sched.step()
    assert sched.get_last_lr() == [lr * 0.5 for lr in LRS]
    assert [g["initial_lr"] for g in opt.param_groups] == list(LRS)


def test_cosine_reaches_eta_min_at_t_max():
    sched = CosineAnnealingLR(_ours(), T_max=8, eta_min=0.002)
    for _ in range(8):
        sched.step()
    np.testing.assert_allclose(sched.get_last_lr(), [0.002] * len(LRS), rtol=0, atol=1e-15)


def test_one_x_import_and_optimizer_lr():
    """1.x wrote ``from tinytensor.optim import StepLR`` and read ``optimizer.lr``."""
    from tinytensor.optim import CosineAnnealingLR as Cos
    from tinytensor.optim import StepLR as Step

    assert Step is StepLR and Cos is CosineAnnealingLR
    opt = optim.AdamW([nn.Parameter(np.zeros(2))], lr=0.1)
    sched = Step(opt, step_size=1, gamma=0.5)
    sched.step()
    assert opt.lr == 0.05


def test_get_last_lr_is_a_copy():
    sched = StepLR(_ours(), step_size=2)
    sched.get_last_lr().append(9.0)
    assert len(sched.get_last_lr()) == len(LRS)


def test_resuming_with_last_epoch_needs_initial_lr():
    with pytest.raises(KeyError, match=r"StepLR: param group 0 has no 'initial_lr'"):
        StepLR(_ours(), step_size=2, last_epoch=4)
    opt = _ours()
    StepLR(opt, step_size=2)
    resumed = StepLR(opt, step_size=2, last_epoch=4)
    assert resumed.last_epoch == 5


def _not_an_optimizer():
    StepLR([nn.Parameter(np.zeros(2))], step_size=2)


class _Subclass(LRScheduler):
    pass


BAD_ARGUMENTS = [
    ("not-an-optimizer", _not_an_optimizer, TypeError, r"StepLR: list is not an Optimizer"),
    (
        "step-size-zero",
        lambda: StepLR(_ours(), step_size=0),
        ValueError,
        r"StepLR: invalid step_size 0: must be an int > 0",
    ),
    ("step-size-negative", lambda: StepLR(_ours(), step_size=-3), ValueError, r"invalid step_size -3"),
    ("step-size-float", lambda: StepLR(_ours(), step_size=2.5), ValueError, r"invalid step_size 2.5"),
    ("gamma-string", lambda: StepLR(_ours(), step_size=2, gamma="0.1"), ValueError, r"StepLR: invalid gamma '0.1'"),
    (
        "t-max-zero",
        lambda: CosineAnnealingLR(_ours(), T_max=0),
        ValueError,
        r"CosineAnnealingLR: invalid T_max 0: must be a number > 0",
    ),
    ("t-max-negative", lambda: CosineAnnealingLR(_ours(), T_max=-5), ValueError, r"invalid T_max -5"),
    ("t-max-nan", lambda: CosineAnnealingLR(_ours(), T_max=math.nan), ValueError, r"invalid T_max nan"),
    (
        "eta-min-negative",
        lambda: CosineAnnealingLR(_ours(), T_max=5, eta_min=-1.0),
        ValueError,
        r"invalid eta_min -1.0",
    ),
    ("last-epoch", lambda: StepLR(_ours(), step_size=2, last_epoch=-2), ValueError, r"StepLR: invalid last_epoch -2"),
    ("no-get-lr", lambda: _Subclass(_ours()), NotImplementedError, r"_Subclass does not define get_lr\(\)"),
]


@pytest.mark.parametrize("call,exc,message", [c[1:] for c in BAD_ARGUMENTS], ids=[c[0] for c in BAD_ARGUMENTS])
def test_bad_argument_is_named(call, exc, message):
    with pytest.raises(exc, match=message):
        call()
