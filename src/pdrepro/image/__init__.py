"""The GPU image and what runs in it: its build inputs, its hash-locked environment, the versions found, a model
served without a download.
"""
