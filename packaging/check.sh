#!/usr/bin/env bash
# Smoke-test the built app (packaging/dist/medexam) with no network, in a throw-away data
# folder: version, model list, a real generation in the model's child process, a dense
# (torch + MiniLM) index and search, one scored exam question (jieba, ROUGE), and the
# desktop app starting and closing (offscreen).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
app=${1:-$here/dist/medexam/medexam}
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
export MEDEXAM_HOME=$home HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

step() { echo; echo "== $*"; }

step "version"
"$app" --version
step "models list"
"$app" models list --json | grep -E '"(name|path)"'
step "generate (smollm2)"
"$app" generate --prompt "Hi" --max-tokens 8 --json
step "dense retrieval (torch, sentence-transformers, MiniLM)"
"$app" french sample --json >/dev/null
"$app" french index --corpus french-sample --retriever hybrid --json | grep -E '"(retriever|n_passages|build_s)"'
"$app" french search --index french-sample-hybrid --query "effets indésirables" -k 1 --json \
    | grep -E '"(passage_id|score)"'
step "one exam question (jieba, ROUGE)"
"$app" exam run --limit 1 --max-tokens 32 --json | grep -E '"(rouge1|rougeL|status)"'
step "desktop app (offscreen)"
QT_QPA_PLATFORM=offscreen MEDEXAM_STARTUP_TIMING=quit timeout 120 "$app" gui
step "files written (all under MEDEXAM_HOME)"
(cd "$home" && find . -maxdepth 2 | sort)
echo; echo "check passed"
