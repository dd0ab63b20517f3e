#!/bin/sh
# Broken on purpose: passes even when it holds a playable card (arena bot check must say so).
while IFS= read -r line; do
  echo pass
done
