"""The executor: locks, verification, the writer's guard, guarded writes, saved plans
and apply."""
