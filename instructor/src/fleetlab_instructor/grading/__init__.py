"""Batch grading of submitted notebooks and writing the student notebooks."""
