"""The step after the analysis: a run's results written where people and the gates find them, and the summary a
verdict is drawn from (analysed afresh where the raw inputs are there).
"""
