#!/bin/sh
# The layering check: every folder of runtime/ and tools/ includes only the folders its row of
# docs/architecture.md's table lists, and the table has no cycle (tools/check_layers.py).
set -eu
python3 tools/check_layers.py .
