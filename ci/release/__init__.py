"""What .github/workflows/release.yml runs, each module a `python -m ci.release.<name>` command."""
