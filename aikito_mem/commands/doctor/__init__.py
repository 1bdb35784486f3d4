"""``aikito doctor``: health checks, git questions and the one fix it makes."""
