"""A scenario's fingerprint: sha256 of its canonical form, recorded in every run's provenance and summary, so a
run is matched to its scenario by what the scenario says. Keys added after runs were recorded stay out of it at the
value every older scenario meant, so the fingerprints those runs recorded still hold: which keys, at which values,
is this module's one job (the model computes nothing of it)."""

from __future__ import annotations

import hashlib
import json

# Keys added after runs were recorded, with the value every scenario meant before the key existed:
# at that value they stay out of the fingerprint, so those runs' recorded fingerprints still hold.
_FINGERPRINT_NEUTRAL = {"transport": "rdma", "pins_match": "gate"}
# Launch keys added later, likewise left out at their default (unset), so older runs keep their fingerprint.
_LAUNCH_FINGERPRINT_NEUTRAL = {"shared_gpu_mem_fraction": None, "engine": "sglang"}
# Geometry keys added later (for `pdrepro offline-model`), likewise left out while unset.
_GEOMETRY_FINGERPRINT_NEUTRAL = {"intermediate_size": None, "vocab_size": None}
# Threshold keys added later, left out at their default, so runs recorded before them keep their fingerprint
# (they are judged by the default, which the summary states).
_THRESHOLDS_FINGERPRINT_NEUTRAL = {"min_rail_share": 0.5, "min_port_baseline_fraction": 0.9,
                                   "max_transfer_p99_over_p50": 3.0, "max_fault_recovery_s": 120.0, "derivation": {}}
# Top-level keys added later whose absence (None) leaves a scenario's fingerprint as it was.
_ABSENT_NEUTRAL = ("ab",)


def fingerprint_of(scenario: dict) -> str:
    """sha256 of the canonical scenario ``scenario`` (its plain form, Scenario.to_dict)."""
    data = {k: v for k, v in scenario.items() if _FINGERPRINT_NEUTRAL.get(k, object()) != v
            and not (k in _ABSENT_NEUTRAL and v is None)}
    if isinstance(data.get("launch"), dict):
        data["launch"] = {k: v for k, v in data["launch"].items()
                          if k not in _LAUNCH_FINGERPRINT_NEUTRAL or _LAUNCH_FINGERPRINT_NEUTRAL[k] != v}
    if isinstance(data.get("thresholds"), dict):
        data["thresholds"] = {k: v for k, v in data["thresholds"].items()
                              if k not in _THRESHOLDS_FINGERPRINT_NEUTRAL or _THRESHOLDS_FINGERPRINT_NEUTRAL[k] != v}
    model = data.get("model")
    if isinstance(model, dict) and isinstance(model.get("geometry"), dict):
        geometry = {k: v for k, v in model["geometry"].items()
                    if k not in _GEOMETRY_FINGERPRINT_NEUTRAL or _GEOMETRY_FINGERPRINT_NEUTRAL[k] != v}
        data["model"] = {**model, "geometry": geometry}
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()
