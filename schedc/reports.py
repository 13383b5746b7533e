"""The old name of `report_statements`, kept only because check.py and cli.py still import it
(they are being edited on another branch); delete it once they import `report_statements`."""

from .report_statements import (
    ReportValue,
    evaluate_reports,
    report_values,
    reports_json,
    reports_text,
)

__all__ = ["ReportValue", "evaluate_reports", "report_values", "reports_json", "reports_text"]
