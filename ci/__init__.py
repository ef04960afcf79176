"""What CI and the release run, as one package: run from the repository root with `python -m`
(`python -m ci.release.check_wheel WHEEL`, `python -m ci.dev.rehearsal`), so every module imports
the others and buildsys/ without touching sys.path.

- ci/release/: what the release workflow runs (and the GPU check); standard library plus the
  release locks' tools
- ci/dev/: the local rehearsals, the workflow checks and the package index they share
- ci/commands.py: the one command runner and logger
"""
