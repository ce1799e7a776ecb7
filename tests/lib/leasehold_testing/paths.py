"""Where things are in the repository."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]  # tests/lib/leasehold_testing/ -> the repository
# The license's text, and the SPDX identifier the image label and the chart annotation give it.
LICENSE = ROOT / "LICENSE"
LICENSE_SPDX = "Apache-2.0"
