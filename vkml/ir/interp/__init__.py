"""The CPU interpreters of kernel IR: the reference semantics and its compiled fast path."""
