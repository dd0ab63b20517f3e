#!/usr/bin/env node
// Sample Sevens Arena bot in Node.js.
//
//   npm ci && node bot.js --server 127.0.0.1:50051 --token TOKEN
//
// It loads the .proto files from the repository's proto/ folder at run time (no generated
// code), opens one BotGateway.Play stream, says Hello, and answers every TurnRequest with a
// simple legal action: in the Sevens family the longest run it may play, avoiding actions
// that cost chips when `action_info` says so (passing only when it must), in Sedma the first
// legal card. It reconnects with backoff when the stream drops and stops for good only on
// errors that a retry cannot fix (bad token, wrong protocol). With --exit-after-season
// SEASON it exits (status 0) when the referee's `season_end` notice for SEASON arrives
// ('*': any season).
// Everything it logs goes to stderr. The protocol is described in docs/PROTOCOL.md.
'use strict';

const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTOCOL_VERSION = 1;
const BOT_VERSION = 'node-sample 0.1.0';

// Status codes after which reconnecting cannot help: the author must fix something.
const FATAL_CODES = new Set([
  grpc.status.UNAUTHENTICATED,
  grpc.status.PERMISSION_DENIED,
  grpc.status.INVALID_ARGUMENT,
  grpc.status.FAILED_PRECONDITION,
  grpc.status.UNIMPLEMENTED,
]);

function usage(message) {
  if (message) process.stderr.write(`bot.js: error: ${message}\n`);
  process.stderr.write(
    'usage: node bot.js --server HOST:PORT --token TOKEN [--games sevens,sedma]\n' +
      '                   [--concurrency N] [--proto-dir DIR] [--max-retries N]\n' +
      '                   [--exit-after-season SEASON]\n' +
      '                   [--keepalive-ms MS] [--keepalive-timeout-ms MS]\n' +
      '  --server, --token default to $ARENA_SERVER and $ARENA_TOKEN; the keepalive ones\n' +
      '  to $ARENA_KEEPALIVE_MS and $ARENA_KEEPALIVE_TIMEOUT_MS, else 5000 and 5000;\n' +
      '  --proto-dir to $ARENA_PROTO_DIR, else the repository\'s proto/ folder\n',
  );
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {
    server: process.env.ARENA_SERVER || '',
    token: process.env.ARENA_TOKEN || '',
    games: [],
    concurrency: 4,
    protoDir: path.resolve(process.env.ARENA_PROTO_DIR || path.join(__dirname, '..', '..', 'proto')),
    maxRetries: Infinity,
    exitAfterSeason: '',
    // docs/PROTOCOL.md section 7: ping every 5 s, drop the connection after 5 s without
    // the ack (a referee cut off is left within about 10 s); the referee accepts pings
    // down to every 1 s, so stay at 2 s or more.
    keepaliveMs: Number.parseInt(process.env.ARENA_KEEPALIVE_MS || '5000', 10),
    keepaliveTimeoutMs: Number.parseInt(process.env.ARENA_KEEPALIVE_TIMEOUT_MS || '5000', 10),
  };
  for (let i = 0; i < argv.length; i += 1) {
    const flag = argv[i];
    const value = argv[i + 1];
    const need = () => {
      if (value === undefined) usage(`${flag} needs a value`);
      i += 1;
      return value;
    };
    if (flag === '--server') opts.server = need();
    else if (flag === '--token') opts.token = need();
    else if (flag === '--games') opts.games = need().split(',').filter(Boolean);
    else if (flag === '--concurrency') opts.concurrency = Number.parseInt(need(), 10);
    else if (flag === '--proto-dir') opts.protoDir = path.resolve(need());
    else if (flag === '--max-retries') opts.maxRetries = Number.parseInt(need(), 10);
    else if (flag === '--exit-after-season') opts.exitAfterSeason = need();
    else if (flag === '--keepalive-ms') opts.keepaliveMs = Number.parseInt(need(), 10);
    else if (flag === '--keepalive-timeout-ms') opts.keepaliveTimeoutMs = Number.parseInt(need(), 10);
    else if (flag === '-h' || flag === '--help') usage('');
    else usage(`unknown argument ${JSON.stringify(flag)}`);
  }
  if (!opts.server) usage('--server HOST:PORT is required (or set $ARENA_SERVER)');
  if (!opts.token) usage('--token is required: `arena bot register NAME` prints one');
  if (!(opts.concurrency >= 1)) usage('--concurrency must be a whole number >= 1');
  if (!(opts.keepaliveMs >= 2000)) usage('--keepalive-ms must be at least 2000 (the referee refuses more frequent pings)');
  if (!(opts.keepaliveTimeoutMs >= 1000)) usage('--keepalive-timeout-ms must be at least 1000');
  return opts;
}

function loadGateway(protoDir) {
  const definition = protoLoader.loadSync(path.join('arena', 'v1', 'bot.proto'), {
    includeDirs: [protoDir],
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  return grpc.loadPackageDefinition(definition).arena.v1.BotGateway;
}

// ---- strategy -------------------------------------------------------------------------

function cardCount(action) {
  return action === 'pass' ? 0 : action.split('+').length;
}

// What an action costs, from TurnRequest.action_info (docs/PROTOCOL.md section 4): chips
// paid, plus a large number when it puts the seat out of the deal. 0 when unknown.
function costOf(action, info) {
  const entry = (info || []).find((i) => i.action === action);
  if (!entry) return 0;
  return entry.cost + (entry.eliminates ? 1000 : 0);
}

// Sevens family: the cheapest action, and among those the longest run (the first such in
// the sorted list); a pass only when it is all that is legal or costs nothing while every
// card would.
function chooseSevens(legal, info) {
  let best = legal[0];
  for (const action of legal) {
    const cheaper = costOf(action, info) < costOf(best, info);
    const same = costOf(action, info) === costOf(best, info);
    if (cheaper || (same && cardCount(action) > cardCount(best))) best = action;
  }
  return best;
}

// Sedma: the first legal card (the list is sorted), which is always a legal answer.
function chooseSedma(legal) {
  return legal[0];
}

function choose(turn) {
  const legal = turn.legal_actions;
  if (!legal || legal.length === 0) return 'pass';
  const game = turn.observation ? turn.observation.game : '';
  return game === 'sedma' ? chooseSedma(legal) : chooseSevens(legal, turn.action_info);
}

// ---- connection -----------------------------------------------------------------------

function log(message) {
  process.stderr.write(`[node-bot] ${message}\n`);
}

function run(opts) {
  const Gateway = loadGateway(opts.protoDir);
  // Keepalive as the Python SDK sets it, within what the referee accepts (docs/PROTOCOL.md).
  const client = new Gateway(opts.server, grpc.credentials.createInsecure(), {
    'grpc.keepalive_time_ms': opts.keepaliveMs,
    'grpc.keepalive_timeout_ms': opts.keepaliveTimeoutMs,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.http2.max_pings_without_data': 0,
    'grpc.max_receive_message_length': 64 * 1024,
    'grpc.max_send_message_length': 64 * 1024,
  });
  let retries = 0;
  let stopping = false;

  function connect() {
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${opts.token}`);
    const call = client.Play(metadata);
    let pingTimer = null;
    let nonce = 0;
    let ended = false;

    const finish = (reason, code) => {
      if (ended) return;
      ended = true;
      if (pingTimer) clearInterval(pingTimer);
      if (stopping) return;
      // A message over the 64 KiB limit would fail again after a reconnect (docs/PROTOCOL.md
      // section 8); RESOURCE_EXHAUSTED for too many streams clears by itself.
      const tooLarge = code === grpc.status.RESOURCE_EXHAUSTED && /larger than max/.test(reason);
      if (FATAL_CODES.has(code) || tooLarge) {
        log(`stopped: ${reason}`);
        process.exitCode = 1;
        client.close();
        return;
      }
      retries += 1;
      if (retries > opts.maxRetries) {
        log(`giving up after ${opts.maxRetries} reconnects: ${reason}`);
        process.exitCode = 1;
        client.close();
        return;
      }
      const delay = Math.min(10000, 250 * 2 ** Math.min(retries - 1, 6));
      log(`stream closed (${reason}); reconnecting in ${delay} ms`);
      setTimeout(connect, delay);
    };

    call.on('data', (message) => {
      switch (message.msg) {
        case 'welcome': {
          const w = message.welcome;
          retries = 0;
          log(`connected as ${w.bot} (session ${w.session_id}, concurrency ${w.max_concurrent_matches})`);
          const interval = w.keepalive_time_ms > 0 ? w.keepalive_time_ms : 0;
          if (interval > 0) {
            pingTimer = setInterval(() => {
              nonce += 1;
              call.write({ ping: { nonce } });
            }, interval);
          }
          break;
        }
        case 'turn': {
          const t = message.turn;
          call.write({
            action: { match_id: t.match_id, attempt: t.attempt, seq: t.seq, action: choose(t) },
          });
          break;
        }
        case 'result': {
          const r = message.result;
          if (r.status !== 'ACCEPTED') {
            log(`${r.match_id}#${r.seq}: ${r.status} ${r.reason}: ${r.message}`);
          }
          break;
        }
        case 'match_start':
          log(`match ${message.match_start.match_id} (${message.match_start.game}) started`);
          break;
        case 'match_end':
          log(`match ${message.match_end.match_id} ended: totals ${message.match_end.totals}`);
          break;
        case 'notice': {
          // Codes: draining, season_start, season_end (docs/PROTOCOL.md section 2).
          const n = message.notice;
          log(`notice ${n.code}: ${n.message}`);
          if (n.code === 'season_end') {
            const row = n.standing;
            if (row) log(`season ${n.season} ${n.season_state}: rank ${row.rank} of ${row.of}`);
            if (opts.exitAfterSeason === '*' || opts.exitAfterSeason === n.season) {
              log(`season ${n.season} is over; exiting`);
              stop();
            }
          }
          break;
        }
        default:
          break;
      }
    });
    call.on('error', (err) => finish(`${grpc.status[err.code] || err.code}: ${err.details}`, err.code));
    call.on('end', () => finish('the referee ended the stream', grpc.status.UNAVAILABLE));

    call.write({
      hello: {
        protocol_version: PROTOCOL_VERSION,
        bot_version: BOT_VERSION,
        games: opts.games,
        max_concurrent_matches: opts.concurrency,
        // it logs only results that are not ACCEPTED: the referee need not send the others
        skip_accepted_results: true,
      },
    });
  }

  const stop = () => {
    stopping = true;
    client.close();
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  connect();
}

if (require.main === module) {
  run(parseArgs(process.argv.slice(2)));
}

module.exports = { choose, chooseSevens, chooseSedma, parseArgs };
