"""The release, rehearsed end to end on one machine (the README's main job: `ci/nox.sh -s release`,
which runs `python -m ci.dev.rehearsal`). One module per step:

  1. sources.py: both sdists and pytinytensor's CPU wheel, each built twice from fresh clones of
     HEAD (byte-identical), and the hash locks current
  2. wheels.py: pytinytensor-cu12-libs for x86_64, then the per-Python pytinytensor-cu12 wheels for
     every CPython of the release matrix through [tool.cibuildwheel] (cibuildwheel in a container
     on a local stand-in image, whose test step installs and tests each wheel), twice
  3. contract.py: the wheel contract on every wheel, their names against the release's table,
     PyPI's upload rules on every file
  4. publishing.py: release.yml's publishing steps against a real package index that first refuses
     the library wheel, then takes it, then a re-run
  5. install.py: fresh installs from that index (the cu12 wheel with its library wheel, a decoy
     index configured; the CPU wheel), the preflight, the test suites, preloaded allocators, an
     upgrade that keeps the CUDA pin
  6. report.py: <out>/report.md and report.json

aarch64.py rehearses the aarch64 files under emulation (`ci/nox.sh -s release_aarch64`).
What runs while the wheels are built and checked is pinned with hashes (ci/release/locks/).
"""
