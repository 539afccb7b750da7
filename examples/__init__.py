"""Example components evaluated by the repository's eval.py."""
