"""The pure colocation policy engine: API types, profile matching, mutations, validations. No I/O."""
