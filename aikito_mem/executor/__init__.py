"""The executor: locks, verification, the writer's guard, the guarded writes, and saved
plans (the file and its codec)."""
