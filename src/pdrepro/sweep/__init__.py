"""``pdrepro sweep``: runs the published bench loop against a running PD stack.

One module per job: ``config`` holds what a sweep is asked to do, ``benchcmd``
builds the client's argv, ``health`` waits for the stack, ``rdma_proof`` proves
the KV path is RDMA, ``launcher`` runs the client (in the GPU image),
``logsource`` fetches server logs, ``counters`` reads the NICs, ``metrics``
differences /metrics scrapes, ``step`` runs one prompt length, ``progress``
gives the ETA, ``provenance`` records what ran, ``state`` keeps per-length
outcomes, ``runner`` is the loop that ties them. The analysis is not called
from here: the command hands it in, as the sweep only produces raw results.
"""
