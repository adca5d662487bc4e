"""`gpulint verify`: run a script and its fixed version under a probe and show, with numbers, that the fix cut
host-device syncs without changing what the program computes.

Parent side: cli.py (the command), build.py (what runs), launch.py (subprocesses), compare.py, report.py.
Child side (inside the user's process, imports only the standard library and torch): probe.py, hostreads.py,
steps.py, fixing.py (imports gpulint's fixer, only for the in-memory fixed program).
"""
