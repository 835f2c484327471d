"""A stand-in for torch in the tests: torch.cuda records calls (see torch/cuda)."""
from . import cuda  # noqa: F401
