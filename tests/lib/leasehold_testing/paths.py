"""Where things are in the repository."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]  # tests/lib/leasehold_testing/ -> the repository
