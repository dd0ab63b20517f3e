"""Sevens Arena referee: rules engines, gRPC gateway, League API, seasons and standings."""

__version__ = "0.1.0"
