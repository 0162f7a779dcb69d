"""Where a run directory is read: raw results (bench output, server logs, counters) become the summary, and what
the raw results prove on their own (witness, transport evidence, what ran).
"""
