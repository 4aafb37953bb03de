"""Where users meet the package: the CLI (and later tools, MCP, metrics)."""
