"""What evalkit is installed as: the distribution name, the version and the install commands.

The import name is ``evalkit``; the distribution is named otherwise because ``evalkit`` on
the public package index is an unrelated project.
"""

DISTRIBUTION = "evalkit-mlflow"
VERSION = "0.2.0"
CPU_TORCH_COMMAND = "pip install torch --index-url https://download.pytorch.org/whl/cpu"
SEMANTIC_EXTRA_COMMAND = f"pip install '{DISTRIBUTION}[semantic]'"
RAY_EXTRA_COMMAND = f"pip install '{DISTRIBUTION}[ray]'"
