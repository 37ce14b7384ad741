"""Serving memory to agents: the service layer, the HTTP API, MCP and the dashboard."""
