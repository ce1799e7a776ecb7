#!/usr/bin/env python3
"""The table that ends scripts/test.sh: each stage with its seconds and the tests it ran, then
the 10 slowest tests of the run, from the JUnit files that ctest wrote (--output-junit), and,
last, what each failed test said: its FAIL lines and the end of its output. CI shows only the
end of a run's output; this puts the diagnosis of a failure there.

    test-report.py STAGES_TSV

STAGES_TSV has a line per stage that ran: name, seconds, status (ok|FAILED), and the JUnit file
of its ctest call or "-" for a stage without one (a build, the format check, the fuzzers). A
stage that never ran (the run stopped before it) has no line. Exits 0: it only reports."""
import re
import sys
import xml.etree.ElementTree as ET


def read_stages(path):
    stages = []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 4:
                stages.append(parts)
    return stages


def read_junit(path):
    """(name, seconds, status, output) of every test case ctest ran; [] if the file is
    missing."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return []
    cases = []
    for case in root.iter("testcase"):
        status = case.get("status", "run")
        if status in ("notrun", "disabled"):
            continue
        failed = case.find("failure") is not None or status == "fail"
        out = case.findtext("system-out") or ""
        cases.append((case.get("name", "?"), float(case.get("time", "0") or 0),
                      "FAILED" if failed else "passed", out))
    return cases


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    stages = read_stages(sys.argv[1])
    slowest = []
    failures = []
    rows = []
    total = 0
    for name, seconds, status, junit in stages:
        cases = read_junit(junit) if junit != "-" else []
        failed = sum(1 for c in cases if c[2] == "FAILED")
        tests = f"{len(cases)}" + (f" ({failed} failed)" if failed else "") if junit != "-" else ""
        rows.append((name, int(seconds), status, tests))
        total += int(seconds)
        slowest += [(secs, f"{test}", name, st) for test, secs, st, _ in cases]
        failures += [(test, name, out) for test, _, st, out in cases if st == "FAILED"]
    width = max([len(r[0]) for r in rows] + [5])
    print(f"{'stage':<{width}}  {'seconds':>7}  {'status':<6}  tests")
    for name, seconds, status, tests in rows:
        print(f"{name:<{width}}  {seconds:>7}  {status:<6}  {tests}")
    print(f"{'total':<{width}}  {total:>7}")
    slowest.sort(reverse=True)
    if slowest:
        print("\nthe 10 slowest tests:")
        for secs, test, stage, st in slowest[:10]:
            mark = "" if st == "passed" else "  FAILED"
            print(f"  {secs:7.1f} s  {test}  ({stage}){mark}")
    print_failures(failures)
    return 0


# A line that says what went wrong: the scenario runner's FAIL lines, a check's Failure, a
# Python exception, gtest's failure lines, a sanitizer's report.
_VERDICT = re.compile(r"^(FAIL |\[  FAILED  \]|Traceback|\S*(Error|Failure|Exception)\b|"
                      r".*(AddressSanitizer|runtime error:|: Failure$))")


def print_failures(failures, shown=3, verdict_lines=12, tail_lines=25):
    """For the first `shown` failed tests: their verdict lines, then the last lines of their
    output (the full output is in ctest's log and the JUnit file)."""
    for test, stage, out in failures[:shown]:
        lines = out.splitlines()
        verdicts = [ln for ln in lines if _VERDICT.match(ln)]
        print(f"\nFAILED {test} ({stage}): {len(verdicts)} verdict line(s), then its last "
              f"{min(tail_lines, len(lines))} of {len(lines)} lines")
        for ln in verdicts[:verdict_lines]:
            print(f"  ! {ln[:300]}")
        for ln in lines[-tail_lines:]:
            print(f"  | {ln[:300]}")
    if len(failures) > shown:
        print(f"\n... and {len(failures) - shown} more failed tests: "
              + ", ".join(t for t, _, _ in failures[shown:]))


if __name__ == "__main__":
    sys.exit(main())
