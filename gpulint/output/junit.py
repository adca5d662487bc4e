"""JUnit XML: one test case per linted file with findings, each finding a failure (what CI test tabs show)."""

from __future__ import annotations

from collections import defaultdict
from xml.etree import ElementTree as ET

from gpulint.output.common import display_location, printable
from gpulint.output.report import Report


def render(report: Report) -> str:
    diagnostics = report.diagnostics
    by_file: dict[str, list] = defaultdict(list)
    for d in diagnostics:
        by_file[d.filename].append(d)
    suite = ET.Element("testsuite", name="gpulint", tests=str(len(diagnostics)),
                       failures=str(len(diagnostics)), errors="0", skipped="0")
    for name, found in sorted(by_file.items()):
        filename = printable(name)  # XML 1.0 cannot hold most control characters at all, escaped or not
        for d in found:
            case = ET.SubElement(suite, "testcase", classname=filename,
                                 name=f"{d.code} at {display_location(d)}", file=filename,
                                 line=str(d.location.row))
            failure = ET.SubElement(case, "failure", message=f"{d.code} {d.message}", type=d.code)
            failure.text = f"{display_location(d)}: {d.code} {d.message}"
    if not diagnostics:
        ET.SubElement(suite, "testcase", classname="gpulint", name="no findings")
        suite.set("tests", "1")
    root = ET.Element("testsuites", name="gpulint", tests=suite.get("tests"), failures=suite.get("failures"))
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
