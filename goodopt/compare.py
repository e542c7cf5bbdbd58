"""Former home of ``compare``: see :mod:`goodopt.runs.compare` (this import path keeps working)."""

from .runs.compare import compare
from .runs.tables import COLUMNS, add_reference_columns, result_row, summary, write_table

__all__ = ["COLUMNS", "add_reference_columns", "compare", "result_row", "summary", "write_table"]
