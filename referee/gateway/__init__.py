"""The referee's gRPC side: BotGateway (bot streams, relayed to and from the match hosts'
internal streams, ``MatchRelay``) and the League API (:mod:`referee.gateway.server`).

Modules: ``errors`` (what can go wrong), ``status`` (errors -> gRPC status codes, the one
place), ``auth`` (bearer-token interceptor), ``convert`` (message dicts -> proto), ``relay``
(bot streams and host links), ``league`` (League servicer), ``server`` (process wiring, drain).
"""
