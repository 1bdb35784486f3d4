"""``aikito adopt TARGET``: validation, the move of content, and the link back."""
