"""Scheduling: fusion into kernels, the structure key, the plan cache, running a realize."""
