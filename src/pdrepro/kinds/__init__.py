"""The kinds of run the bundle makes (sweep, smoke, load, ab, tune, compare), one module each behind one
interface (base.RunKind), picked from a registry (registry.py) by the kind a folder records, never by its name.
Which kind a folder is, and what that kind needs of its summary, its judge and its report, is decided here
only; the commands, the gates and the report ask this room (tests/test_run_kinds_seam.py holds the line)."""
