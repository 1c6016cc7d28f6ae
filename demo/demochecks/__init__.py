"""The demo's checks (demo/checks.py is their command line)."""
