#!/usr/bin/env node
// A hosted Node.js bot on the stdio line protocol (docs/STDIO.md): one JSON turn per line
// on stdin, one action per line on stdout. No dependencies. It plays the first legal
// action that costs nothing (the list is sorted, "pass" last).
'use strict';

const readline = require('readline');

const lines = readline.createInterface({ input: process.stdin });
lines.on('line', (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (err) {
    process.stderr.write(`not JSON: ${line.slice(0, 80)}\n`);
    return;
  }
  if (msg.type !== 'turn') return; // a notification: nothing to answer
  const info = msg.action_info || [];
  const free = info.find((a) => a.cost === 0);
  process.stdout.write(`${free ? free.action : msg.legal_actions[0]}\n`);
});
