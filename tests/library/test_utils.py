"""tinytensor.utils: progress_bar (tqdm; quiet off a terminal, a real bar on a pty, no tqdm at all)
and EarlyStopping (counting, NaN, restoring real copies of the best weights, on every device)."""

from __future__ import annotations

import fcntl
import io
import json
import math
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn, optim
from tinytensor.utils import EarlyStopping, progress_bar, train_bar

PACKAGE_PARENT = str(Path(tt.__file__).resolve().parent.parent)


def _run_python(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, env=env, check=True
    )


# ---------------------------------------------------------------------------- progress_bar
def _on_a_terminal(monkeypatch, run) -> str:
    """What ``run()`` writes to stdout when stdout is a pseudo-terminal (120 columns)."""
    master, slave = pty.openpty()
    # A new pty is 0x0 and tqdm draws nothing on a terminal 0 columns wide; give it a real size.
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    try:
        with open(slave, "w", encoding="utf-8", closefd=False) as tty_out:
            monkeypatch.setattr(sys, "stdout", tty_out)
            run()
            tty_out.flush()
        chunks = []
        while select.select([master], [], [], 0.2)[0]:
            chunks.append(os.read(master, 65536))
        return b"".join(chunks).decode("utf-8")
    finally:
        os.close(master)
        os.close(slave)


def test_bar_is_drawn_on_a_terminal(monkeypatch):
    pytest.importorskip("tqdm", reason="tqdm is not installed")
    items = []
    out = _on_a_terminal(monkeypatch, lambda: items.extend(progress_bar(range(5), prefix="train")))
    assert items == [0, 1, 2, 3, 4]
    assert "train: 100%|" + "█" * 30 + "| 5/5" in out
    narrow = _on_a_terminal(monkeypatch, lambda: list(train_bar(range(4), prefix="eval", length=12)))
    assert "eval: 100%|" + "█" * 12 + "| 4/4" in narrow


def test_extra_keyword_arguments_go_to_tqdm(monkeypatch):
    pytest.importorskip("tqdm", reason="tqdm is not installed")
    out = _on_a_terminal(monkeypatch, lambda: list(progress_bar(range(3), unit="batch", ascii=True)))
    assert "100%|" + "#" * 30 + "| 3/3" in out and "batch/s" in out
    assert _on_a_terminal(monkeypatch, lambda: list(progress_bar(range(3), disable=True))) == ""


def test_bar_without_a_length(monkeypatch):
    pytest.importorskip("tqdm", reason="tqdm is not installed")
    out = _on_a_terminal(monkeypatch, lambda: list(progress_bar((i for i in range(3)), prefix="stream")))
    assert "stream: 3it [" in out  # tqdm's counter: no bar to fill without a length


def test_quiet_when_stdout_is_not_a_terminal(capsys, monkeypatch):
    pytest.importorskip("tqdm", reason="tqdm is not installed")
    assert list(progress_bar(range(4), prefix="train")) == [0, 1, 2, 3]
    assert capsys.readouterr() == ("", "")
    log = io.StringIO()
    monkeypatch.setattr(sys, "stdout", log)
    assert list(train_bar("abc")) == ["a", "b", "c"]
    assert log.getvalue() == ""


def test_importing_tinytensor_does_not_import_tqdm():
    proc = _run_python(
        """
        import sys
        import tinytensor, tinytensor.data, tinytensor.utils
        print("tqdm" in sys.modules)
        """
    )
    assert proc.stdout.strip() == "False"


def test_without_tqdm_items_pass_through_with_one_warning():
    # sys.modules[name] = None is how Python itself marks a module as not importable.
    proc = _run_python(
        """
        import json, sys, warnings
        sys.modules["tqdm"] = None
        from tinytensor.utils import progress_bar
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first = list(progress_bar(range(3), prefix="train"))
            second = list(progress_bar(["a", "b"]))
        print(json.dumps({"items": [first, second], "warnings": [str(w.message) for w in caught]}))
        """
    )
    report = json.loads(proc.stdout)
    assert report["items"] == [[0, 1, 2], ["a", "b"]]
    assert len(report["warnings"]) == 1 and "pip install tqdm" in report["warnings"][0]
    assert proc.stderr == ""


# ---------------------------------------------------------------------------- EarlyStopping
def _model(device="cpu"):
    tt.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(device)


def _weights(model):
    return {name: p.numpy().copy() for name, p in model.state_dict().items()}


def _shift_in_place(model, value):
    """Change every parameter's storage in place, as an optimizer step does."""
    for p in model.parameters():
        p._data[...] = value


def test_counts_epochs_without_improvement():
    stopper = EarlyStopping(_model(), patience=3)
    losses = [1.0, 0.9, 0.95, 0.91, 0.89, 0.9, 0.9, 0.9]
    decisions = [stopper(v) for v in losses]
    assert decisions == [False] * 7 + [True]
    assert stopper.best_loss == 0.89 and stopper.best_epoch == 4
    assert stopper.counter == 3 and stopper.early_stop
    assert stopper(0.1) is True  # stopping is final; a later improvement is still recorded
    assert stopper.best_loss == 0.1 and stopper.counter == 0


def test_improvements_must_beat_min_delta():
    stopper = EarlyStopping(_model(), patience=2, min_delta=0.1)
    assert [stopper(v) for v in (1.0, 0.95, 0.91)] == [False, False, True]
    assert stopper.best_loss == 1.0
    stopper = EarlyStopping(_model(), patience=2, min_delta=0.1)
    assert [stopper(v) for v in (1.0, 0.89, 0.85, 0.78)] == [False, False, False, False]
    assert stopper.best_loss == 0.78 and stopper.counter == 0


def test_patience_zero_stops_at_the_first_epoch_without_improvement():
    stopper = EarlyStopping(_model(), patience=0)
    assert [stopper(v) for v in (1.0, 0.5, 0.5)] == [False, False, True]


def test_nan_is_never_an_improvement():
    stopper = EarlyStopping(_model(), patience=2)
    assert stopper(math.nan) is False
    assert stopper.best_loss is None and stopper.counter == 1 and stopper.best_state_dict is None
    assert stopper(1.0) is False and stopper.best_loss == 1.0
    assert [stopper(math.nan), stopper(np.float32("nan"))] == [False, True]
    assert stopper.best_loss == 1.0


def test_restores_copies_of_the_best_weights(device):
    model = _model(device)
    stopper = EarlyStopping(model, patience=2)
    best = _weights(model)
    where = next(model.parameters()).device  # "cuda" is reported as "cuda:0"
    assert stopper(tt.tensor(0.5, device=device)) is False  # a 0-d loss tensor on the device
    # A real optimizer step updates the parameters in place: the saved copy must not follow it.
    x = tt.randn(8, 3).to(device)
    opt = optim.SGD(model.parameters(), lr=0.5)
    model(x).sum().backward()
    opt.step()
    assert stopper(tt.tensor([0.7], device=device)) is False  # a one-element loss tensor
    _shift_in_place(model, 3.0)
    for name, saved in stopper.best_state_dict.items():
        assert saved.device == where
        np.testing.assert_array_equal(saved.numpy(), best[name], err_msg=name)
    assert stopper(0.6) is True
    restored = _weights(model)
    for name in best:
        np.testing.assert_array_equal(restored[name], best[name], err_msg=name)
    assert {p.device for p in model.parameters()} == {where}
    # Restoring copied the values in: training on does not change the saved best state.
    _shift_in_place(model, -1.0)
    np.testing.assert_array_equal(stopper.best_state_dict["0.weight"].numpy(), best["0.weight"])
    stopper.restore()
    np.testing.assert_array_equal(model.state_dict()["0.weight"].numpy(), best["0.weight"])


def test_without_restoring_the_model_keeps_its_last_weights():
    model = _model()
    stopper = EarlyStopping(model, patience=1, restore_best_weights=False)
    stopper(1.0)
    _shift_in_place(model, 2.0)
    assert stopper(1.5) is True
    assert stopper.best_state_dict is None
    assert all((p.numpy() == 2.0).all() for p in model.parameters())


# ---------------------------------------------------------------------------- bad input
def _stopper_call(value):
    return lambda: EarlyStopping(_model())(value)


BAD_INPUT = [
    ("bar-length-zero", lambda: progress_bar(range(3), length=0), ValueError, r"progress_bar: length .* got 0"),
    ("bar-length-float", lambda: progress_bar(range(3), length=2.5), TypeError, r"progress_bar: length .* got float"),
    ("bar-prefix", lambda: progress_bar(range(3), prefix=3), TypeError, r"progress_bar: prefix must be a str"),
    ("bar-iterable", lambda: progress_bar(5), TypeError, r"progress_bar: iterable must be iterable, got int"),
    ("patience-negative", lambda: EarlyStopping(_model(), patience=-1), ValueError,
     r"EarlyStopping: patience must be an int >= 0, got -1"),
    ("patience-float", lambda: EarlyStopping(_model(), patience=2.5), TypeError, r"EarlyStopping: patience .* float"),
    ("min-delta-negative", lambda: EarlyStopping(_model(), min_delta=-0.1), ValueError,
     r"EarlyStopping: min_delta must be a finite number >= 0, got -0.1"),
    ("min-delta-nan", lambda: EarlyStopping(_model(), min_delta=math.nan), ValueError, r"min_delta .* got nan"),
    ("min-delta-str", lambda: EarlyStopping(_model(), min_delta="0.1"), TypeError, r"min_delta must be a number"),
    ("model-without-state", lambda: EarlyStopping(object()), TypeError,
     r"EarlyStopping: model must have a state_dict\(\) method"),
    ("restore-flag", lambda: EarlyStopping(_model(), restore_best_weights="yes"), TypeError,
     r"restore_best_weights must be True or False"),
    ("loss-str", _stopper_call("0.5"), TypeError, r"EarlyStopping: val_loss must be a number .* got str"),
    ("loss-none", _stopper_call(None), TypeError, r"val_loss must be a number .* got NoneType"),
    ("loss-vector", _stopper_call(tt.tensor([0.5, 0.4])), ValueError,
     r"EarlyStopping: val_loss must hold one number, got a Tensor of shape \(2,\)"),
]  # fmt: skip


@pytest.mark.parametrize("call,error,pattern", [c[1:] for c in BAD_INPUT], ids=[c[0] for c in BAD_INPUT])
def test_bad_input_is_named(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()
