#!/usr/bin/env bash
# Waits until every node has registered (Ready or not).
set -euo pipefail
until kubectl get nodes -o name | grep -q .; do sleep 5; done
