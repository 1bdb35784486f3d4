"""The pure planner: observations in, one frozen Plan out (memory, skills,
instructions, and the project ordering)."""
