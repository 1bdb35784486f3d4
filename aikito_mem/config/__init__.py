"""Configuration: the workspace, its projects, agent.toml (parsed and edited),
the agent registry, and the rules for names."""
