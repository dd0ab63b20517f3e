"""The referee's gRPC side: BotGateway (bot streams relayed to and from Redis mailboxes)
and the League API, served by one ``grpc.aio`` server (:mod:`referee.gateway.server`).

Modules: ``errors`` (what can go wrong), ``status`` (errors -> gRPC status codes, the one
place), ``auth`` (bearer-token interceptor), ``convert`` (mailbox JSON <-> proto), ``relay``
(one bot stream), ``league`` (League servicer), ``server`` (process wiring, drain).
"""
