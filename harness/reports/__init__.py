"""What a run leaves: results.json, report.md, report.html, junit.xml,
and the lessons of the teaching corpus."""
