"""Reads Prometheus text from stdin with the official Python client's
parser (PyPI `prometheus_client`, `text_string_to_metric_families`) and
prints what it read as one JSON document:

    {"families": {name: type}, "samples": [[name, {label: value}, value]]}

Any line the parser refuses makes it raise, and the script exit non-zero.
Used by backend/tests/api/metrics.rs; installed by `cargo xtask test`.
"""

import json
import sys

from prometheus_client.parser import text_string_to_metric_families

families = {}
samples = []
for family in text_string_to_metric_families(sys.stdin.read()):
    if family.name in families:
        raise SystemExit(f"family {family.name} appears twice")
    families[family.name] = family.type
    for sample in family.samples:
        samples.append([sample.name, sample.labels, sample.value])
json.dump({"families": families, "samples": samples}, sys.stdout)
