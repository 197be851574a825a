"""The custodian's report and the audit pipeline.

* :func:`build` -- attack one release and judge it: a :class:`Report` with ``to_html()``
  (one self-contained page) and ``to_json()``.
* :func:`build_dp` -- judge a DP output (histogram or model file) with its custody: its
  guarantee against the policy and the input's budget, and its utility.
* :func:`run_audit` -- sanitize over a grid, report each setting, recommend one.
* :func:`load_config` -- the custodian's thresholds and the audit's plan (TOML).
"""

from privlab.report.audit import Audit, run_audit
from privlab.report.build import FAIL, PASS, REVIEW, Report, build, verdict
from privlab.report.config import Config, load_config, parse_config
from privlab.report.dp import build_dp

__all__ = [
    "FAIL",
    "PASS",
    "REVIEW",
    "Audit",
    "Config",
    "Report",
    "build",
    "build_dp",
    "load_config",
    "parse_config",
    "run_audit",
    "verdict",
]
