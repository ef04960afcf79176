"""The release rehearsal (`ci/nox.sh -s release`, `python -m ci.dev.rehearsal`), one module per step:
sources, wheels, contract, publishing, install and report (docs/maintainers/release.md, "What the rehearsal proves");
aarch64.py is the emulated aarch64 run (`ci/nox.sh -s release_aarch64`).
"""
