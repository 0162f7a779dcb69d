"""``pdrepro gpu-check``: GPU memory registration and the engine's data path on one box.

Before a cluster run, two processes on two GPUs of one host move KV-sized
buffers from GPU memory to GPU memory through the Mooncake Transfer Engine,
and every received byte is checked. It needs the GPU image (or any Python
with the engine and a CUDA runtime), not SGLang and not a model.
"""
