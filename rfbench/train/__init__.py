"""Training that proves something: the deterministic training proof and test-time adaptation."""
