#!/bin/sh
# A Sevens Arena bot in plain POSIX sh (no jq): run it with
#   arena bridge --server HOST:PORT --token TOKEN -- sh sample_bots/stdio/firstlegal.sh
# It reads one JSON line per decision on stdin (docs/STDIO.md) and writes one action per
# line on stdout. The bridge writes compact JSON with "legal_actions" before the
# observation, so sed can pick the list out. Strategy: play the longest run on offer, else
# the first legal action (the list is sorted, "pass" comes last).
while IFS= read -r line; do
  case $line in
    '{"type":"turn"'*) ;;
    *) continue ;;  # not a decision: nothing to answer
  esac
  legal=$(printf '%s\n' "$line" | sed -n 's/^[^[]*"legal_actions":\[\([^]]*\)\].*/\1/p' | tr -d '"')
  best=""
  best_len=-1
  old_ifs=$IFS
  IFS=,
  for action in $legal; do
    [ "$action" = pass ] && continue
    plus=$(printf '%s' "$action" | tr -cd '+')
    if [ ${#plus} -gt "$best_len" ]; then
      best=$action
      best_len=${#plus}
    fi
  done
  IFS=$old_ifs
  if [ -z "$best" ]; then
    best=${legal%%,*}
  fi
  printf '%s\n' "${best:-pass}"
done
