"""The black-box conformance suite, written from SPEC.md alone: one file per SPEC section."""
