"""Cells a spreadsheet would evaluate (issue 30.1, OWASP's CSV injection list): shared by the
tests of privlab's CSV writers (test_csv_cells) and of hostile accepted input (test_bad_input)."""

FORMULA_CELLS = [
    "=cmd|' /C calc'!A0",
    '=HYPERLINK("http://evil.example/?x","click")',
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "+1+1",
    "-2+3",
    "\t=1+1",
    "\r=2+2",
]
