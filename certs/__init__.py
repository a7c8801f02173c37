"""Certificate generation and rotation for the webhook server."""
