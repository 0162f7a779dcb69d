"""``pdrepro sweep``: runs the published bench loop against a running PD stack.

One module per job: ``benchcmd`` builds the client's argv, ``health`` waits for
the stack, ``transport`` proves the KV path is RDMA, ``launcher`` runs the
client (in the GPU image), ``logsource`` fetches server logs, ``provenance``
records what ran, ``state`` keeps per-length outcomes, ``runner`` ties them.
"""
