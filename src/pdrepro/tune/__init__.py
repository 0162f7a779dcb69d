"""`pdrepro tune`: a grid of tuning knobs run as settings of one scenario, ranked against a repeated baseline.

Its modules sit in several layers (as the smoke's do): the grid and the knob facts with the scenario, the
ranking with publish, the one-box run and the cluster render with the arms runner at the top.
"""
