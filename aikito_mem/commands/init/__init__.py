"""``aikito init``: a workspace, or a project in one, never overwriting anything."""
