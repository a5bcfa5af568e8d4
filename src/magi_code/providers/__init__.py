"""Model providers: one module per wire API behind the neutral types of `base`."""
