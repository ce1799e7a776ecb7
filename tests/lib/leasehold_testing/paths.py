"""Where things are in the repository."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]  # tests/lib/leasehold_testing/ -> the repository
# The license's text, and the SPDX identifier the image label and the chart annotation give it.
LICENSE = ROOT / "LICENSE"
LICENSE_SPDX = "Apache-2.0"
# project.conf: the product's version and the project's home, their one source.
PROJECT_CONF = ROOT / "project.conf"


def project_setting(key: str) -> str:
    """project.conf's value of KEY (`key=value` lines; '' when the value is empty)."""
    for line in PROJECT_CONF.read_text().splitlines():
        if line.startswith(f"{key}="):
            return line.split("=", 1)[1].strip()
    raise KeyError(f"{PROJECT_CONF}: no {key}= line")


def product_version() -> str:
    """The product's version, as `leasehold --version` prints it."""
    return project_setting("version")
