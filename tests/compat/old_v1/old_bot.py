"""A bot built only from the OLD generated code (``arena/`` beside this file: protocol v1 as
it was before issue 15 added ActionInfo, season notices and SeasonStanding).

Run as a script (``python tests/compat/old_v1/old_bot.py SERVER TOKEN LOG``): the script's
folder comes first on ``sys.path``, so ``arena.v1`` is the frozen copy, not the current
one. It answers every TurnRequest with its first legal action and appends one JSON line
per message it receives to LOG (kind; for notices the code; unknown fields are simply not
seen). It stops when the stream ends or after SIGTERM.
"""

from __future__ import annotations

import json
import queue
import signal
import sys
from typing import Any

import grpc  # type: ignore[import-untyped]

from arena.v1 import bot_pb2, bot_pb2_grpc

# The frozen copy has none of the later additions; a bot built from it knows nothing of them.
assert not hasattr(bot_pb2, "ActionInfo"), "the current arena.v1 was imported, not the copy"
assert not hasattr(bot_pb2, "SeasonStanding")


def main(server: str, token: str, log_path: str) -> int:
    outgoing: queue.Queue[Any] = queue.Queue()
    outgoing.put(
        bot_pb2.BotMessage(
            hello=bot_pb2.Hello(
                protocol_version=1,
                bot_version="old-v1 compat bot",
                games=[],
                max_concurrent_matches=2,
            )
        )
    )

    def requests() -> Any:
        while True:
            item = outgoing.get()
            if item is None:
                return
            yield item

    channel = grpc.insecure_channel(server)
    call = bot_pb2_grpc.BotGatewayStub(channel).Play(
        requests(), metadata=(("authorization", f"Bearer {token}"),)
    )
    signal.signal(signal.SIGTERM, lambda *_: call.cancel())
    with open(log_path, "a", encoding="utf-8") as log:
        try:
            for message in call:
                kind = message.WhichOneof("msg")
                entry: dict[str, Any] = {"kind": kind}
                if kind == "turn":
                    turn = message.turn
                    choice = turn.legal_actions[0]
                    outgoing.put(
                        bot_pb2.BotMessage(
                            action=bot_pb2.Action(
                                match_id=turn.match_id,
                                attempt=turn.attempt,
                                seq=turn.seq,
                                action=choice,
                            )
                        )
                    )
                    entry["action"] = choice
                elif kind == "result":
                    entry["status"] = bot_pb2.ActionResult.Status.Name(message.result.status)
                elif kind == "notice":
                    entry["code"] = message.notice.code
                    entry["message"] = message.notice.message
                log.write(json.dumps(entry) + "\n")
                log.flush()
        except grpc.RpcError as exc:
            log.write(json.dumps({"kind": "end", "code": str(exc.code())}) + "\n")
        finally:
            outgoing.put(None)
            channel.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
