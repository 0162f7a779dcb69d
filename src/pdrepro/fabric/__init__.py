"""Host and fabric inspection: RDMA devices from sysfs, GPUs from nvidia-smi,
the checks of ``pdrepro doctor``, the GPU-to-NIC map and the fabric baseline."""
