"""`verify plan.json`: the independent checker of docs/spec.md section 4.

It imports nothing from the rest of elk-opt, so it can judge any tool's plans, ours included.
"""

from verify.checker import Report, Violation, check
from verify.cli import json_report
from verify.reading import Malformed

__all__ = ["Malformed", "Report", "Violation", "check", "json_report"]
