"""A summary turned into text and pictures for people: report.md, the provenance section, the plots."""
