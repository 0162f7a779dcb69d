"""Where a verdict is made: a summary held to the scenario's thresholds and to figures that cannot be true
(gates), and the bounds that differ from the run's own scenario.
"""
