"""The host launcher: a one-box launch plan started as processes of this host, with the
Python that runs pdrepro (no image, no compose), recorded in the run so it can be stopped."""
