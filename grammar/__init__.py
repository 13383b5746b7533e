"""The schedc grammar, shipped as package data (`schedc.grammar`)."""
