#!/usr/bin/env bash
# make parity-localstack: start a real LocalStack without Docker, run the backend
# contract suite on it, and stop it again (also when the suite fails).
# DynamoDB and S3 come from the moto server the tool starts beside LocalStack.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tool="${FLEETLAB_LOCALSTACK_TOOL:-$repo/../shared/tools/localstack-host}"
if [ ! -x "$tool/start.sh" ]; then
  echo "parity-localstack: $tool/start.sh not found; set FLEETLAB_LOCALSTACK_TOOL to the localstack-host folder" >&2
  exit 2
fi
trap '"$tool/stop.sh"' EXIT
"$tool/start.sh"
cd "$repo"
FLEETLAB_CONTRACT_BACKENDS=localstack \
LOCALSTACK_ENDPOINT=http://127.0.0.1:4566 \
FLEETLAB_DYNAMODB_ENDPOINT=http://127.0.0.1:4567 \
FLEETLAB_S3_ENDPOINT=http://127.0.0.1:4567 \
  .venv/bin/python -m pytest tests/contract -m contract "$@"
