"""The validated inputs: a scenario (and its launch section and the site facts), the scenario a run recorded, the
YAML reader, the KV size a token carries, the JSON Schemas drawn from the models.
"""
