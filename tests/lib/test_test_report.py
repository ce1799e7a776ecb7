"""scripts/test-report.py, the table that ends scripts/test.sh, on synthetic stage and JUnit
files: every stage's row, the slowest tests, and what a failed test said (its verdict lines and
the end of its output), which CI's truncated output must show."""
import subprocess
import sys
import tempfile
from pathlib import Path

REPORT = Path(__file__).resolve().parents[2] / "scripts" / "test-report.py"

JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite tests="3">
  <testcase name="integration.fast" time="1.5" status="run"><system-out>ok</system-out></testcase>
  <testcase name="integration.real.broken" time="42.0" status="fail">
    <failure message="Failed"/>
    <system-out>=== first: a scenario
PASS first (3.0s)
=== second: another
FAIL second: Failure: two leaders at once
{tail}</system-out>
  </testcase>
  <testcase name="integration.skipped" time="0" status="notrun"/>
</testsuite>
"""


def run(tmp, junit_text):
    junit = tmp / "stage.xml"
    junit.write_text(junit_text)
    stages = tmp / "stages.tsv"
    stages.write_text(f"release-build\t16\tok\t-\nrelease-processes\t800\tFAILED\t{junit}\n")
    out = subprocess.run([sys.executable, str(REPORT), str(stages)], check=True,
                         capture_output=True, text=True).stdout
    return out


def main():
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        tail = "\n".join(f"log line {i}" for i in range(100))
        out = run(tmp, JUNIT.format(tail=tail))
        lines = out.splitlines()
        assert any(ln.split()[:4] == ["release-processes", "800", "FAILED", "2"]
                   for ln in lines), out
        assert "(1 failed)" in out, out
        assert any(ln.split() == ["total", "816"] for ln in lines), out
        slow = lines.index("the 10 slowest tests:")
        assert "integration.real.broken" in lines[slow + 1] and "FAILED" in lines[slow + 1], out
        failed = [i for i, ln in enumerate(lines) if ln.startswith("FAILED integration.real")]
        assert len(failed) == 1, out
        after = lines[failed[0] + 1:]
        # The verdict first, then the last 25 lines; the passing test's output is not shown.
        assert after[0] == "  ! FAIL second: Failure: two leaders at once", after[:3]
        assert after[-1] == "  | log line 99" and "  | log line 75" in after, after[-3:]
        assert "  | log line 74" not in after, after
        assert "ok" not in [ln.strip("| ") for ln in after], after

        # A passing run prints no failure section; a missing JUnit file is no crash.
        out = run(tmp, JUNIT.replace('status="fail"', 'status="run"')
                  .replace('<failure message="Failed"/>', "").format(tail=""))
        assert "FAILED integration" not in out, out
        (tmp / "stage.xml").unlink()
        stages = tmp / "stages.tsv"
        stages.write_text(f"asan-unit\t5\tFAILED\t{tmp / 'missing.xml'}\n")
        out = subprocess.run([sys.executable, str(REPORT), str(stages)], check=True,
                             capture_output=True, text=True).stdout
        assert "asan-unit" in out, out
    print("test-report: ok")


if __name__ == "__main__":
    main()
