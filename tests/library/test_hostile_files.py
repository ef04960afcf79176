"""Files from elsewhere: every crafted file of hostile_files.py is refused with the documented
error naming the member and the problem, and no load takes more memory than the arrays it
really holds plus a small constant (measured in a child process under an address-space limit).
"""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import struct
import subprocess
import sys

import numpy as np
import pytest
from hostile_files import CASES, Case, archive

import tinytensor as tt
from tinytensor.serialization import FileFormatError, load, save
from tinytensor.serialization.format import DATA_LIMIT, DATA_MEMORY
from tinytensor.serialization.legacy_pickle import _CONTAINER_COST, BUDGET_CONSTANT

MiB = 1 << 20


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_file_is_refused_with_the_documented_error(case: Case, tmp_path):
    path = case.build(tmp_path)
    # The message starts with the file's name, then says which member and what is wrong.
    pattern = re.escape(str(path)) + r"\b.*" + case.match
    with pytest.raises(case.error, match=pattern):
        load(path)
    with open(path, "rb") as fh, pytest.raises(case.error, match=pattern):  # a file object reads the same
        load(fh)


# ---------------------------------------------------------------------------- memory
# The child measures what the interpreter, numpy and tinytensor already take, then allows that
# plus an allowance of address space (RLIMIT_AS), loads, and reports the outcome and how far its
# resident memory rose (VmHWM after resetting it: ru_maxrss counts from before the exec). Where
# neither can be measured (an emulator that ignores RLIMIT_AS), it says so and the test skips.
_CHILD = r"""
import json, mmap, resource, sys
import numpy, tinytensor

def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key + ":"))

def unmeasurable(allowance):
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # the peak (VmHWM) starts again from the present size
    except OSError as exc:
        return f"/proc/self/clear_refs: {exc}"
    resource.setrlimit(resource.RLIMIT_AS, (status("VmSize") + allowance, resource.RLIM_INFINITY))
    try:
        mmap.mmap(-1, allowance + (64 << 20)).close()  # address space only: no page is touched
    except OSError:
        return None
    return "RLIMIT_AS is not enforced here"

path, allowance = sys.argv[1], int(sys.argv[2])
reason = unmeasurable(allowance)
if reason:
    print(json.dumps({"unmeasurable": reason}))
    sys.exit()
before = status("VmHWM")
try:
    obj = tinytensor.load(path)
    if isinstance(obj, dict):
        outcome = {"loaded": {k: [str(v.dtype), list(v.shape)] for k, v in obj.items()}}
    else:
        outcome = {"loaded": [type(obj).__name__, len(obj)]}
except BaseException as exc:
    outcome = {"error": [c.__name__ for c in type(exc).__mro__], "message": str(exc)[:2000]}
    del exc
outcome["growth"] = status("VmHWM") - before
print(json.dumps(outcome))
"""

# Refusing costs no more than this, whatever the file declares; a load costs its arrays plus this.
_CONSTANT = 16 * MiB
_ALLOWANCE = 256 * MiB  # address space a refusal may use: far below what any bomb asks for

needs_linux = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/clear_refs are Linux's"
)


def _run_child(code: str, *args) -> subprocess.CompletedProcess:
    """``python -c code args`` with the tinytensor under test (from a checkout or a wheel)."""
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(tt.__file__))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    env["OPENBLAS_NUM_THREADS"] = "1"  # one thread: no thread's arena joins the address space midway
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done


def _load_in_child(path, allowance: int) -> dict:
    outcome = json.loads(_run_child(_CHILD, path, allowance).stdout.splitlines()[-1])
    if "unmeasurable" in outcome:
        pytest.skip(reason=f"memory cannot be bounded or measured here: {outcome['unmeasurable']}")
    return outcome


BOMBS = [c for c in CASES if c.bomb]


@needs_linux
@pytest.mark.parametrize("case", BOMBS, ids=[c.id for c in BOMBS])
def test_hostile_file_is_refused_within_a_constant_of_memory(case: Case, tmp_path):
    outcome = _load_in_child(case.build(tmp_path), _ALLOWANCE)
    assert "error" in outcome, f"{case.id} loaded: {outcome}"
    assert case.error.__name__ in outcome["error"], outcome
    assert re.search(case.match, outcome["message"]), outcome["message"]
    assert outcome["growth"] < _CONSTANT, f"{case.id}: peak memory rose by {outcome['growth'] / MiB:.1f} MiB"


@needs_linux
@pytest.mark.parametrize("kind", ["tt", "1.x"])
def test_a_file_loads_in_its_arrays_size_plus_a_constant(kind, tmp_path):
    # 64 MiB of float32 with every page written: the peak may hold one copy of the array, not two.
    # The address-space limit only stops a runaway load: how much address space a malloc reserves
    # for 64 MiB is the allocator's business (a preloaded jemalloc's differs from glibc's).
    declared = 64 * MiB
    w = np.arange(declared // 4, dtype=np.float32)
    path = tmp_path / "big.tt"
    if kind == "tt":
        save({"w": w}, path)
    else:  # a 1.x file holds its arrays in the pickle: the data is read once, then kept
        path.write_bytes(pickle.dumps({"w": w}, protocol=4))
    outcome = _load_in_child(path, _ALLOWANCE)
    assert outcome.get("loaded") == {"w": ["float32", [declared // 4]]}, outcome
    assert declared <= outcome["growth"] < declared + _CONSTANT, (
        f"peak memory rose by {outcome['growth'] / MiB:.1f} MiB"
    )


# ---------------------------------------------------------------------------- what stays readable
@needs_linux
@pytest.mark.parametrize("unit", [b"[],", b"[[]],"], ids=["empty-lists", "nested-lists"])
def test_the_objects_of_the_largest_data_json_stay_within_the_documented_bound(unit, tmp_path):
    # Empty lists make the most Python objects per byte of JSON (the decoder's result alone is
    # about 40 bytes per byte); the parsed JSON is freed as the result is built.
    body = b"[" + unit * ((DATA_LIMIT - 2) // len(unit))
    path = tmp_path / "lists.tt"
    path.write_bytes(archive(body[:-1] + b"]"))
    outcome = _load_in_child(path, DATA_MEMORY + _ALLOWANCE)
    assert "error" not in outcome, outcome
    assert outcome["growth"] < DATA_MEMORY, f"peak memory rose by {outcome['growth'] / MiB:.1f} MiB"


@needs_linux
@pytest.mark.parametrize(
    "opcode,cost",
    [(b"\x8f", _CONTAINER_COST), (b"]", _CONTAINER_COST), (b"G" + struct.pack(">d", 1.5), 96), (b"N", 96)],
    ids=["empty-sets", "empty-lists", "floats", "nones"],
)
def test_a_1x_file_just_within_its_budget_loads_within_it(opcode, cost, tmp_path):
    # As many one-opcode objects as the budget admits: the bound the docs state is the budget,
    # twice the file's size plus BUDGET_CONSTANT, and what the load really takes stays under it.
    n = int(0.95 * BUDGET_CONSTANT / (cost - 2 * len(opcode)))
    path = tmp_path / "many.tt"
    path.write_bytes(b"\x80\x04](" + opcode * n + b"e.")
    limit = 2 * path.stat().st_size + BUDGET_CONSTANT
    outcome = _load_in_child(path, limit + _ALLOWANCE)
    assert outcome.get("loaded") == ["list", n], outcome
    assert outcome["growth"] < limit, f"peak memory rose by {outcome['growth'] / MiB:.1f} MiB, over {limit / MiB:.1f}"


def test_save_refuses_an_object_whose_data_json_would_exceed_the_limit(tmp_path):
    path = tmp_path / "history.tt"
    save({"step": 1}, path)
    before = path.read_bytes()
    losses = [0.123456789] * (DATA_LIMIT // 10)  # 12 bytes each in JSON: over the limit
    with pytest.raises(
        ValueError,
        match=rf"its data\.json would be \d+\.\d MiB, over the \.tt format's limit of {DATA_LIMIT >> 20} MiB",
    ):
        save({"losses": losses}, path)
    assert path.read_bytes() == before  # the file that was there stays
    save({"losses": np.asarray(losses)}, path)  # the suggested fix: an array member
    assert load(path)["losses"].shape == (len(losses),)


def test_1x_file_sharing_one_list_many_times_is_read_once(tmp_path):
    # 40 levels of [child, child]: 2**40 paths through 41 lists, each list walked once. A walk
    # along every path would never end, hence the child process and its time limit.
    node: list = [np.arange(3, dtype=np.int64)]
    for _ in range(40):
        node = [node, node]
    path = tmp_path / "shared.tt"
    path.write_bytes(pickle.dumps({"tree": node}, protocol=2))
    check = (
        "import sys, tinytensor\n"
        "tree = tinytensor.load(sys.argv[1])['tree']\n"
        "assert tree[0] is tree[1] and tree[0][0] is tree[1][1]\n"
        "for _ in range(40): tree = tree[0]\n"
        "assert tree[0].tolist() == [0, 1, 2]"
    )
    _run_child(check, path)


def test_shared_member_with_identical_nodes_stays_one_object(tmp_path):
    w = tt.tensor([1.0, 2.0])
    save({"a": w, "b": [w, w]}, tmp_path / "shared.tt")
    back = load(tmp_path / "shared.tt")
    assert back["a"] is back["b"][0] is back["b"][1]


def test_big_endian_and_fortran_members_load_as_numpy_reads_them(tmp_path):
    # "readers should accept what numpy accepts": other writers may use either
    from hostile_files import archive, array_node, npy

    big = np.arange(6, dtype=">f8").reshape(2, 3)
    fortran = np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    root = [array_node("arrays/0.npy", "float64", (2, 3)), array_node("arrays/1.npy", "int32", (2, 3))]
    (tmp_path / "other.tt").write_bytes(archive(root, {"arrays/0.npy": npy(big), "arrays/1.npy": npy(fortran)}))
    a, b = load(tmp_path / "other.tt")
    assert a.dtype == np.float64 and a.dtype.isnative and b.flags.f_contiguous
    np.testing.assert_array_equal(a, big)
    np.testing.assert_array_equal(b, fortran)


class _RewrittenAfterReading(io.FileIO):
    """A file that another writer rewrites in place (same inode, same size) once the loader has
    read it to the end and seeks back: what the loader checked is no longer what it reads next."""

    def __init__(self, path, replacement: bytes):
        super().__init__(path, "r+")
        self._size, self._replacement, self._read_all = os.path.getsize(path), replacement, False

    def _reading(self, result):
        self._read_all = self._read_all or self.tell() == self._size
        return result

    def read(self, size=-1):
        return self._reading(super().read(size))

    def readinto(self, buffer):
        return self._reading(super().readinto(buffer))

    def readline(self, size=-1):
        return self._reading(super().readline(size))

    def seek(self, offset, whence=os.SEEK_SET):
        if self._read_all and (offset, whence) == (0, os.SEEK_SET):
            os.pwrite(self.fileno(), self._replacement, 0)
            self._read_all = False
        return super().seek(offset, whence)


def test_1x_file_rewritten_after_its_scan_is_refused_not_unpickled(tmp_path):
    # The scan passes a 14-byte empty dict; the bytes the unpickler would then read open with
    # BINBYTES8 declaring 2**45 bytes, which Python's unpickler allocates before reading them.
    scanned = b"\x80\x04\x95" + struct.pack("<Q", 3) + b"}\x94."  # protocol 4: PROTO, FRAME, {}, MEMOIZE, STOP
    changed = b"\x80\x04\x8e" + struct.pack("<Q", 1 << 45) + b"abc"
    assert len(scanned) == len(changed) == 14
    path = tmp_path / "changing.tt"
    path.write_bytes(scanned)
    with _RewrittenAfterReading(path, changed) as fh:
        with pytest.raises(FileFormatError, match=r"changed while it was read: its bytes at offset 2 differ"):
            load(fh)
    assert path.read_bytes() == changed  # the file did change under the loader
    assert load(io.BytesIO(scanned)) == {}
