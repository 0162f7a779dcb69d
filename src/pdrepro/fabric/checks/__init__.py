"""The checks behind ``pdrepro doctor``, one module per concern.

``base`` holds what every check shares (the result, the context, the facts read
once); the order in which doctor runs them lives in ``fabric.doctor``.
"""
